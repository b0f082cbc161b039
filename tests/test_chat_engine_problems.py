"""``hermes-host chat`` shows a failing engine on the turn it fails (issue 12).

Real store, real fence, the real ``anthropic`` SDK against the loopback fake; the failing
``select_context`` engine is a real pluggy plugin registered through ``extra_plugins``.
Before the fix the turn looked exactly like a healthy one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_host import (
    CompressRequest,
    CompressResult,
    SelectRequest,
    SelectResult,
    hookimpl,
)
from hermes_host.chat import DEFAULT_SYSTEM_PROMPT, AnthropicChatModel, ChatController
from hermes_host.config import load_config
from hermes_host.host import ContextHost
from hermes_host.testing.fake_anthropic import FakeAnthropic
from tests.chat_helpers import RecordingUI, chat_responder

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


class Explodes:
    """``select_context`` raises when the user says "explode"; otherwise no change."""

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult | None:
        incoming = request.incoming_message or {}
        if "explode" in str(incoming.get("content")):
            raise RuntimeError(f"retrieval index is corrupt (token {SECRET})")
        return None


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatController]:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_SESSION_ID", raising=False)
    path = tmp_path / "config.yaml"
    path.write_text(
        "model:\n  name: claude-fake-chat\n  context_length: 64000\n  max_output_tokens: 256\n"
        "context:\n  engine: compressor\n  hooks:\n    select_context: [explodes]\n"
        "summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
        encoding="utf-8",
    )
    config = load_config(path)
    with FakeAnthropic(responder=chat_responder) as fake:
        host = ContextHost.from_config(config, store=tmp_path / "state.db",
                                       extra_plugins={"explodes": Explodes()})
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


def test_a_failing_hook_is_one_warning_line_on_its_turn(chat: ChatController) -> None:
    ui = _ui(chat)
    chat.handle("question 1")
    assert [k for k, _ in ui.take()] == ["reply"]
    chat.handle("please explode")
    lines = ui.take()
    errors = [t for k, t in lines if k == "error"]
    assert len(errors) == 1, lines
    assert errors[0].startswith(
        "engine problem this turn: plugin 'explodes' hook 'select_context' raised "
        "RuntimeError: retrieval index is corrupt"
    )
    assert SECRET not in errors[0] and "[REDACTED]" in errors[0]
    assert "reply" in [k for k, _ in lines]  # the turn still happened (the fence failed open)
    chat.handle("question 3")
    assert [k for k, _ in ui.take()] == ["reply"]
    chat.handle("/status")
    status = ui.text("info")
    assert "engine problems (since the chat started):" in status
    assert "explodes.select_context: 1 error of 3 calls — last: plugin 'explodes' hook " \
        "'select_context' raised RuntimeError" in status


def test_an_open_breaker_is_reported_once_not_every_turn(chat: ChatController) -> None:
    ui = _ui(chat)
    for i in range(3):  # breaker.failures = 3: the third failure opens it
        chat.handle(f"explode {i}")
    errors = [t for k, t in ui.take() if k == "error"]
    assert len(errors) == 3 and errors[-1].endswith(
        "[breaker open]; /status shows every engine problem"
    )
    chat.handle("explode again")  # skipped by the breaker: already said
    chat.handle("a calm question")
    assert [k for k, _ in ui.take()] == ["reply", "reply"]
    status = chat.session.status()
    (row,) = status["engine_problems"]
    assert (row["plugin"], row["hook"], row["errors"], row["skipped"], row["breaker"]) == (
        "explodes", "select_context", 3, 2, "open"
    )


class BrokenCompress:
    """``compress`` raises; ``unchanged`` returns the window as it was, outcome summarised."""

    def __init__(self, unchanged: bool = False) -> None:
        self.unchanged = unchanged

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult | None:
        if self.unchanged:
            return CompressResult(messages=list(request.messages), outcome="summarised")
        raise RuntimeError(f"compress broke (token {SECRET})")


def _small_chat(
    tmp_path: Path, engine: BrokenCompress, base_url: str
) -> tuple[ContextHost, ChatController]:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model:\n  name: claude-fake-chat\n  context_length: 1500\n  max_output_tokens: 256\n"
        "context:\n  engine: broken\nsummarizer:\n  provider: offline\n"
        "memory:\n  providers: []\n",
        encoding="utf-8",
    )
    config = load_config(path)
    host = ContextHost.from_config(config, store=tmp_path / "state.db",
                                   extra_plugins={"broken": engine})
    session = host.open_session("small", DEFAULT_SYSTEM_PROMPT)
    model = AnthropicChatModel("claude-fake-chat", "sk-ant-test-fake-key", base_url=base_url,
                               max_retries=0)
    return host, ChatController(host, session, model, RecordingUI(), restore_cwd=False)


@pytest.mark.parametrize("unchanged", [False, True], ids=["raises", "proposes-no-change"])
def test_a_compression_failure_is_said_once_per_turn_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unchanged: bool
) -> None:
    """Issue 30: the failing ``compress`` was printed twice per turn (the compression's
    event line and the engine-problem line), and a summary that was not kept read
    "compression not committed (summarised)"."""
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_SESSION_ID", raising=False)
    with FakeAnthropic(responder=chat_responder) as fake:
        host, chat = _small_chat(tmp_path, BrokenCompress(unchanged), fake.base_url)
        ui = _ui(chat)
        failed_turns = 0
        try:
            for i in range(7):
                chat.handle(f"question {i}")
                said = [text for kind, text in ui.take() if kind != "reply"]
                if not any("Compacting context" in t for t in said):
                    continue
                failed_turns += 1
                assert not any("not committed" in t for t in said), said
                assert SECRET not in "\n".join(said)
                if unchanged:
                    (why,) = [t for t in said if "session unchanged" in t]
                    assert why == (
                        "compression discarded, session unchanged: the engine's summarised "
                        "proposal was not kept (the proposal did not shrink the window)")
                else:
                    named = [t for t in said if "compress broke" in t or "skipped" in t]
                    assert len(named) == 1, said
                    assert named[0].startswith("compression failed, session unchanged: ")
        finally:
            assert isinstance(chat.model, AnthropicChatModel)
            chat.model.close()
            host.close()
    assert failed_turns >= 3
