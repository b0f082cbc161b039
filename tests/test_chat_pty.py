"""``hermes-host chat`` end to end: the real console script in a pseudo-terminal, the real
``anthropic`` SDK, the loopback Anthropic fake, a real store and the real compressor with a
tiny ``model.context_length`` so compaction happens during the conversation.

Asserts on what the user sees (replies, R-10.4 markers, ``/status`` figures, the preview,
the recap, the session list) and on what went over the wire (system prompt, alternation,
no ``_`` keys — R-2.1, R-1.4, R-7.5).
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT
from hermes_host.host import COMPACTED_MARKER, COMPACTING_MARKER
from hermes_host.store import open_store
from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.tokens import TokenCounter
from tests.chat_helpers import (
    PtyChat,
    chat_env,
    chat_responder,
    underscore_keys,
    wire_messages,
    write_config,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

CONTEXT_LENGTH = 1500


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(responder=chat_responder) as server:
        yield server


def _start(tmp_path: Path, fake: FakeAnthropic, *args: str) -> PtyChat:
    config = write_config(tmp_path, context_length=CONTEXT_LENGTH)
    return PtyChat(["--config", str(config), "--store", str(tmp_path / "state.db"), *args],
                   chat_env(tmp_path, fake.env()), tmp_path)


def _snapshot(store_path: Path) -> tuple[list[Any], list[Any]]:
    store = open_store(store_path)
    try:
        sessions = store.list_sessions(limit=100)
        rows = [(r.id, r.active, r.message) for s in sessions for r in store.all_messages(s.id)]
        return [(s.id, s.title, s.compression_count, s.ended_at) for s in sessions], rows
    finally:
        store.close()


def test_chat_session_end_to_end_r_12_1(tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = _start(tmp_path, fake, "--title", "e2e")
    try:
        screen = chat.send("hello there")
        assert "assistant> echo: hello there |" in screen

        status = chat.send("/status")
        sid = re.search(r"session: (\S+) “e2e”", status)
        assert sid, status
        assert "model: claude-fake-chat" in status
        # R-4.1 / issue 28: the provider's prompt tokens (what the trigger decides on),
        # beside the host's own count
        used = re.search(r"context: ([\d,]+) / 1,500 tokens \((\d+)%, provider-reported; "
                         r"the host counts ([\d,]+)\)", status)
        assert used, status
        reported = int(used.group(1).replace(",", ""))
        assert int(used.group(2)) == round(100 * reported / CONTEXT_LENGTH)
        assert f"last prompt (provider-reported): {reported:,} tokens" in status
        tokens = int(used.group(3).replace(",", ""))
        store = open_store(tmp_path / "state.db")
        try:  # the figure is the host's count of system prompt + window, as stored
            window = store.active_messages(sid.group(1))
            prompt = store.get_session(sid.group(1)).system_prompt
        finally:
            store.close()
        assert prompt == DEFAULT_SYSTEM_PROMPT
        assert tokens == TokenCounter().count_all(
            [{"role": "system", "content": prompt}, *window])
        assert "compressions: 0" in status

        for i in range(2, 5):
            assert f"echo: turn {i}" in chat.send(f"turn {i}")
        early = chat.send("/compress --preview")
        # issue 28: too little to free is said before any summariser call
        assert "nothing to commit: not worth a summariser call" in early, early
        assert "0 LLM call(s)" in early
        for i in range(5, 6):
            screen = chat.send(f"turn {i}")
            assert f"echo: turn {i}" in screen and COMPACTED_MARKER not in screen

        before = _snapshot(tmp_path / "state.db")
        preview = chat.send("/compress --preview")
        assert "nothing was committed" in preview
        summarised = re.search(r"would summarise (\d+) of (\d+) messages", preview)
        assert summarised and int(summarised.group(1)) > 0, preview
        assert COMPACTING_MARKER not in preview
        assert _snapshot(tmp_path / "state.db") == before  # a preview commits nothing

        screens = []
        for i in range(6, 19):
            screens.append(chat.send(f"turn {i}"))
            if COMPACTED_MARKER in screens[-1]:
                break
        compacted = screens[-1]
        assert COMPACTING_MARKER in compacted and COMPACTED_MARKER in compacted, compacted
        assert compacted.index(COMPACTING_MARKER) < compacted.index(COMPACTED_MARKER)
        assert "session continues as" in compacted

        status = chat.send("/status")
        assert "“e2e #2”" in status and "compressions: 1" in status

        assert "undid 1 turn(s): 2 message(s) left the window" in chat.send("/undo")
        assert "branched: session" in chat.send("/branch side path")
        listing = chat.send("/sessions")
        assert "side path" in listing and "e2e #2" in listing and "e2e " in listing
        assert "title set: side renamed" in chat.send("/title side renamed")

        recap = chat.send("/resume e2e")
        assert re.search(r"Session \S+ “e2e #2” — \d+ messages in the window", recap), recap
        # the rotated window: the protected head, then the summary (the last turn was undone)
        assert "user: hello there" in recap and "assistant: echo: hello there" in recap
        assert "[summary of the earlier conversation]" in recap

        assert "unknown command /frobnicate" in chat.send("/frobnicate")
        chat.send("/help")
        assert "/undo [N]" in chat.output

        chat.expect("you> ")


        chat.type(b"/quit\n")
        assert chat.wait() == 0
        assert "is saved; continue with: hermes-host chat --resume" in chat.output
        assert "Traceback" not in chat.output
    finally:
        chat.kill()

    bodies = wire_messages(fake.requests)
    assert len(bodies) >= 6
    for body in bodies:
        assert body["system"] == DEFAULT_SYSTEM_PROMPT  # immutable system prompt
        roles = [m["role"] for m in body["messages"]]
        assert roles[0] == "user" and roles[-1] == "user"
        assert all(a != b for a, b in itertools.pairwise(roles))
    summariser = [r.body for r in fake.requests if r.body not in bodies]
    assert summariser, "the compaction's summary was written by the (fake) Anthropic model"
    for request in fake.requests:
        assert underscore_keys(request.body) == []


def test_continue_resumes_with_recap_and_history_r_8_3(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    first = _start(tmp_path, fake, "--title", "fruit")
    try:
        first.send("remember the word tangerine")
        first.expect("you> ")


        first.type(b"\x04")  # Ctrl-D leaves too
        assert first.wait() == 0
    finally:
        first.kill()
    (tmp_path / "elsewhere").mkdir()
    second = PtyChat(
        ["--config", str(tmp_path / "config.yaml"), "--store", str(tmp_path / "state.db"),
         "-c"], chat_env(tmp_path, fake.env()), tmp_path / "elsewhere")
    try:
        recap = second.expect("you> ")
        assert "“fruit”" in recap and "user: remember the word tangerine" in recap
        assert f"working directory: {tmp_path}" in recap  # the recorded cwd is restored
        second.send("which word?")
    finally:
        second.kill()
    last = wire_messages(fake.requests)[-1]["messages"]
    assert "tangerine" in str(last[0]["content"])
    assert [m["role"] for m in last] == ["user", "assistant", "user"]


def test_resume_unknown_session_is_a_clear_error(tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = _start(tmp_path, fake, "--resume", "nothing-like-this")
    try:
        assert chat.wait() == 1
    finally:
        chat.kill()
    assert "no session with id or title 'nothing-like-this'" in chat.output
    assert "Traceback" not in chat.output
