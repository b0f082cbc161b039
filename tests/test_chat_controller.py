"""``ChatController``: turns and slash commands against a real store, the real fence and
compressor, and the real ``anthropic`` SDK talking to the loopback fake (R-12.1, R-8.3).

The terminal loop itself is covered end to end in ``test_chat_pty.py``; here each command's
effect on the store is checked precisely.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.chat import AnthropicChatModel, ChatController
from hermes_host.cli import cli
from hermes_host.config import load_config
from hermes_host.host import COMPACTED_MARKER, COMPACTING_MARKER, ContextHost
from hermes_host.messages import text_of
from hermes_host.store import Guards
from hermes_host.testing.fake_anthropic import FakeAnthropic
from tests.chat_helpers import RecordingUI, chat_responder, wire_messages, write_config


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(responder=chat_responder) as server:
        yield server


@pytest.fixture
def context_length() -> int:
    return 4000


@pytest.fixture
def max_output() -> int:
    return 256


@pytest.fixture
def chat(
    tmp_path: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, context_length: int,
    max_output: int,
) -> Iterator[ChatController]:
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)  # the summariser inside the compressor uses them
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_SESSION_ID", raising=False)
    config = load_config(write_config(tmp_path, context_length=context_length,
                                      max_output=max_output))
    host = ContextHost.from_config(config, store=tmp_path / "state.db")
    session = host.open_session("trial", "You are a helpful assistant talking with a "
                                "developer in a terminal. Answer concisely.")
    model = AnthropicChatModel(config.model.name, "sk-ant-test-fake-key",
                               base_url=fake.base_url, max_retries=0)
    controller = ChatController(host, session, model, RecordingUI(), restore_cwd=False)
    try:
        yield controller
    finally:
        model.close()
        host.close()


def _ui(chat: ChatController) -> RecordingUI:
    assert isinstance(chat.ui, RecordingUI)
    return chat.ui


def _turns(chat: ChatController, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        assert chat.handle(f"question {i}")


def test_a_turn_stores_both_sides_and_sends_a_clean_request(
    chat: ChatController, fake: FakeAnthropic
) -> None:
    """R-2.1, R-1.4, R-7.5: system prompt in ``system``, strict alternation, no ``_`` keys;
    the answer is shown and stored; provider usage reaches the session row."""
    _turns(chat, 2)
    ui = _ui(chat)
    assert [k for k, _ in ui.lines] == ["reply", "reply"]
    assert ui.lines[1][1].startswith("echo: question 2 |")
    window = chat.session.raw_window
    assert [m["role"] for m in window] == ["user", "assistant"] * 2
    assert window[2]["content"] == "question 2"
    bodies = wire_messages(fake.requests)
    assert len(bodies) == 2
    assert bodies[1]["model"] == "claude-fake-chat" and bodies[1]["max_tokens"] == 256
    assert [m["role"] for m in bodies[1]["messages"]] == ["user", "assistant", "user"]
    row = chat.host.store.get_session(chat.session.id)
    assert row.input_tokens > 0 and row.output_tokens > 0
    # the fake reports input_tokens = len(json body) // 4; end_turn recorded exactly that
    assert chat.session.last_prompt_tokens == len(json.dumps(bodies[1])) // 4


def test_undo_leaves_the_store_intact_r_12_1(chat: ChatController, fake: FakeAnthropic) -> None:
    """``/undo 2`` removes the last two turns from the window only: the rows stay stored
    (archived), the next request no longer carries them."""
    _turns(chat, 4)
    store = chat.host.store
    sid = chat.session.id
    assert chat.handle("/undo 2")
    assert "undid 2 turn(s): 4 message(s) left the window" in _ui(chat).text("info")
    assert chat.session.id == sid
    assert [m["content"] for m in chat.session.raw_window if m["role"] == "user"] == [
        "question 1", "question 2"]
    stored = [r.message.get("content") for r in store.all_messages(sid)]
    assert "question 3" in stored and "question 4" in stored
    inactive = [r.message.get("content") for r in store.all_messages(sid) if not r.active]
    assert "question 4" in inactive
    chat.handle("after undo")
    sent = [text_of({"content": m["content"]}) for m in
            wire_messages(fake.requests)[-1]["messages"]]
    assert not any("question 3" in t or "question 4" in t for t in sent)
    assert sent[-1] == "after undo"


def test_undo_edge_cases(chat: ChatController) -> None:
    chat.handle("/undo")
    assert "nothing to undo" in _ui(chat).text("info")
    chat.handle("/undo zero")
    assert "N must be a positive number" in _ui(chat).text("error")
    _turns(chat, 1)
    chat.handle("/undo 5")  # more than there are: undoes what exists
    assert chat.session.raw_window == []


def test_branch_forks_with_the_window_and_parent_r_12_1(chat: ChatController) -> None:
    _turns(chat, 2)
    store = chat.host.store
    parent = chat.session.id
    parent_window = chat.session.raw_window
    chat.handle("/branch experiment")
    child = chat.session.id
    assert child != parent
    row = store.get_session(child)
    assert row.parent_session_id == parent and row.title == "experiment"
    assert chat.session.raw_window == parent_window
    assert chat.session.system_prompt == store.get_session(parent).system_prompt
    chat.handle("only in the branch")
    assert store.active_messages(parent) == parent_window  # the parent is untouched
    assert len(store.active_messages(child)) == len(parent_window) + 2
    chat.handle("/fork experiment")
    assert "already" in _ui(chat).text("error") or "title" in _ui(chat).text("error")
    assert chat.session.id == child


def test_new_and_title_r_12_1(chat: ChatController) -> None:
    _turns(chat, 1)
    store = chat.host.store
    old = chat.session.id
    chat.handle("/reset fresh start")
    assert chat.session.id != old and chat.session.raw_window == []
    assert store.get_session(chat.session.id).title == "fresh start"
    assert store.get_session(old).ended_at is not None
    assert chat.session.system_prompt.startswith("You are a helpful assistant")
    chat.handle("/new trial")  # the title is taken: the new session starts untitled
    assert "title not set" in _ui(chat).text("error")
    assert chat.session.title is None and "new session" in _ui(chat).text("info")
    _ui(chat).take()
    chat.handle("/title trial")  # taken by the first session
    assert "title not set" in _ui(chat).text("error")
    chat.handle("/title renamed")
    assert store.get_session(chat.session.id).title == "renamed"
    chat.handle("/title")
    assert "title: renamed" in _ui(chat).text("info")


def test_compress_preview_commits_nothing_then_compress_does_r_12_1(
    chat: ChatController,
) -> None:
    """``--preview`` shows what would be summarised and the token effect; the store is
    unchanged.  ``/compress`` then rotates the session (R-8.1) with the R-10.4 markers."""
    _turns(chat, 6)
    store = chat.host.store
    sid = chat.session.id
    cooldown = Guards(cooldown_until=time.time() + 600, ineffective_count=1)
    store.write_guards(sid, cooldown)

    def snapshot() -> tuple[object, ...]:
        return ([r.message for r in store.all_messages(sid)],
                [s.id for s in store.list_sessions()],
                store.get_session(sid).compression_count, store.read_guards(sid))

    before = snapshot()
    ui = _ui(chat)
    ui.take()
    chat.handle("/compress --preview")
    preview = ui.text("info")
    assert "nothing was committed" in preview
    assert "would summarise" in preview and "would summarise 0 " not in preview
    assert "new summary" in preview
    assert "→" in preview and "tokens (-" in preview
    assert snapshot() == before  # rows, sessions, counters and the cooldown all unchanged
    assert chat.session.id == sid
    assert COMPACTING_MARKER not in ui.text("event")

    chat.handle("/compact here 1")
    events = ui.text("event")
    assert COMPACTING_MARKER in events and COMPACTED_MARKER in events
    assert chat.session.id != sid
    assert store.get_session(chat.session.id).parent_session_id == sid
    assert store.read_guards(chat.session.id).cooldown_until is None  # force clears it
    assert "compressed:" in ui.text("info")
    assert [m["content"] for m in chat.session.raw_window if m["role"] == "user"
            and m["content"].startswith("question")][-1:] == ["question 6"]


@pytest.mark.parametrize("context_length", [2000])
def test_automatic_compaction_shows_markers_and_follows_rotation(
    chat: ChatController, fake: FakeAnthropic
) -> None:
    """R-10.4: a small window compacts during the chat; the markers are shown and the
    controller keeps talking in the rotated session; the summariser went to the fake."""
    _turns(chat, 14)  # the provider-reported prompt passes 1,500 tokens after ~10 turns
    ui = _ui(chat)
    assert COMPACTING_MARKER in ui.text("event")
    assert COMPACTED_MARKER in ui.text("event")
    assert "session continues as" in ui.text("info")
    assert len(chat.history) >= 2
    assert chat.session.id == chat.history[-1]
    summariser_calls = [r for r in fake.requests
                        if "You are a helpful assistant" not in str(r.body.get("system"))]
    assert summariser_calls


def test_status_figures_r_12_1(chat: ChatController) -> None:
    _turns(chat, 2)
    chat.handle("/status")
    status = _ui(chat).text("info")
    # R-4.1 / issue 28: context use is what the trigger decides on — the provider's
    # prompt tokens when it reported them
    used = chat.session.last_prompt_tokens
    assert used and used != chat.session.window_tokens
    assert f"session: {chat.session.id} “trial”" in status
    assert "model: claude-fake-chat" in status
    assert (f"context: {used:,} / 4,000 tokens ({used / 4000:.0%}, provider-reported; "
            f"the host counts {chat.session.window_tokens:,}); request budget 3,744") in status
    assert "compressions: 0" in status
    assert "last compression decision: no (below_threshold), threshold 3,000 tokens " \
        "[engine:compressor]" in status
    assert "messages: 4 in the window, 4 stored" in status
    assert "select_context" in status


def test_resume_shows_the_recap_and_sessions_lists_r_8_3(chat: ChatController) -> None:
    _turns(chat, 1)
    first = chat.session.id
    chat.handle("/new other")
    chat.handle("in the other session")
    chat.handle("/resume trial")
    ui = _ui(chat)
    assert chat.session.id == first
    recap = ui.text("info")
    assert f"Session {first} “trial”" in recap and "user: question 1" in recap
    chat.handle("/resume no-such-session")
    assert "/resume: no session with id or title 'no-such-session'" in ui.text("error")
    chat.handle("/sessions")
    table = ui.text("table")
    assert first in table and "other" in table and '["*", "' + first in table


def test_model_failure_keeps_the_message(chat: ChatController, fake: FakeAnthropic) -> None:
    """A 429 is reported by status and type only; the user's text is stored; the chat goes
    on and the next request carries both user messages (merged, R-1.4)."""
    fake.script(["429"])
    chat.handle("will fail")
    error = _ui(chat).text("error")
    assert "anthropic: HTTP 429 rate_limit_error" in error and "sk-ant" not in error
    assert chat.session.raw_window[-1] == {"role": "user", "content": "will fail"}
    chat.handle("try again")
    last = wire_messages(fake.requests)[-1]["messages"]
    assert [m["role"] for m in last] == ["user"]
    texts = [b["text"] for b in last[0]["content"]]
    assert "will fail" in "\n".join(texts) and "try again" in "\n".join(texts)


def test_help_unknown_and_quit(chat: ChatController) -> None:
    chat.handle("/help")
    assert "/compress, /compact" in _ui(chat).text("info")
    chat.handle("/nope")
    assert "unknown command /nope" in _ui(chat).text("error")
    assert chat.handle("/quit") is False


def test_chat_without_api_key_names_the_variable(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["chat", "--store", str(tmp_path / "s.db")],
        env={"ANTHROPIC_API_KEY": "", "HERMES_HOST_HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "s.db").exists()


def test_status_shows_select_context_decisions(
    tmp_path: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-12.1 ``/status`` with a ``select_context`` engine (the topic router, R-11.3): the
    last request's routing decision and its token effect are shown."""
    pytest.importorskip("hermes_topic_router", reason="hermes-topic-router not installed")
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    path = write_config(tmp_path, context_length=4000)
    path.write_text(path.read_text() + "context:\n  engine: compressor\n  hooks:\n"
                    "    select_context: [topic_router]\n", encoding="utf-8")
    config = load_config(path)
    host = ContextHost.from_config(config, store=tmp_path / "state.db")
    try:
        ui = RecordingUI()
        chat = ChatController(
            host, host.open_session("routed", "You are a helpful assistant talking with a "
                                    "developer in a terminal. Answer concisely."),
            model := AnthropicChatModel(
                config.model.name, "k", base_url=fake.base_url, max_retries=0
            ),
            ui, restore_cwd=False)
        for line in ["fix the database migration script",
                     "the postgres schema has a missing index",
                     "now lets write the css for the landing page",
                     "back to the database migration: add a rollback"]:
            chat.handle(line)
        chat.handle("/status")
        status = ui.text("info")
        assert "select_context (last request):" in status
        routed = next(ln for ln in status.splitlines() if ln.strip().startswith("topic_router:"))
        assert "route=switch" in routed and "topic=t1" in routed
        effect = re.search(r"tokens ([\d,]+) → ([\d,]+)", routed)
        assert effect, routed
        before, after = effect.groups()
        assert int(after.replace(",", "")) < int(before.replace(",", ""))
        # the request that went out is the routed one: an off-topic turn (its answer) was
        # left out — the window holds three answers, the request fewer
        sent = json.dumps(wire_messages(fake.requests)[-1]["messages"])
        assert sent.count("echo: ") < 3
        assert "add a rollback" in sent
        model.close()
    finally:
        host.close()


@pytest.mark.parametrize("context_length", [2000])
def test_compaction_markers_are_shown_while_it_runs_r_10_4(
    chat: ChatController, fake: FakeAnthropic
) -> None:
    """R-10.4: the "Compacting…" marker reaches the screen before the rotation is committed
    (a live "Summarizing…" state), and "complete" after it."""
    seen: list[tuple[str, str]] = []
    ui = _ui(chat)
    record = ui.event

    def event(text: str) -> None:
        seen.append((text, chat.session.id))
        record(text)

    ui.event = event  # type: ignore[method-assign]
    _turns(chat, 14)
    compacting = [sid for text, sid in seen if text == COMPACTING_MARKER]
    complete = [sid for text, sid in seen if text == COMPACTED_MARKER]
    assert compacting and complete
    # While compacting, the session had not rotated yet; once complete, it had.
    assert compacting[0] == chat.history[0]
    assert complete[0] == chat.history[1]


def test_a_paste_larger_than_the_window_is_sent_within_the_budget_issue_28(
    chat: ChatController, fake: FakeAnthropic
) -> None:
    """Issue 28 on chat's path: a pasted log four times the budget goes to the model as a
    head-and-tail excerpt, the request plus the reply's max_tokens fit the window, the
    warning is shown in plain output with its cause, and the store keeps the paste whole."""
    _turns(chat, 1)
    paste = "BEGIN-LOG\n" + "".join(f"line {i}: step ok\n" for i in range(3000)) + "END-LOG"
    assert chat.handle("please look at this log:\n" + paste)
    sent = fake.requests[-1].body
    budget = chat.session.status()["request_budget"]
    assert budget == 4000 - 256 and sent["max_tokens"] == 256
    assert chat.session.last_request_tokens is not None
    assert chat.session.last_request_tokens <= budget < chat.session.window_tokens
    last = str(sent["messages"][-1]["content"])
    assert len(str(sent)) < len(paste)  # the paste itself did not go out
    assert "BEGIN-LOG" in last and "END-LOG" in last and "left out of this request" in last
    shown = _ui(chat).text("event")
    assert "request condensed to fit the budget" in shown and "Why:" in shown
    stored = [m for m in chat.session.raw_window if m.get("role") == "user"]
    assert stored[-1]["content"].endswith(paste)


@pytest.mark.parametrize("max_output", [0])
def test_with_no_reply_reservation_the_reply_gets_what_the_request_left_issue_28(
    chat: ChatController, fake: FakeAnthropic
) -> None:
    """``max_output_tokens: 0`` reserves nothing: the request may use the whole window, so
    the reply's ``max_tokens`` is what the request left, never more (request + reply fit)."""
    _turns(chat, 3)
    sent = fake.requests[-1].body
    used = chat.session.last_request_tokens
    assert used is not None and sent["max_tokens"] == min(4096, 4000 - used)
    assert used + sent["max_tokens"] <= 4000
