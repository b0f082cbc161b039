"""``hermes-host chat`` streams answers on both providers (issue 30, deliverable 5): the real
console script on a pseudo-terminal, the real ``anthropic`` (``messages.stream``) and
``openai`` (``stream=True``) SDKs, and the loopback fakes answering in server-sent events
one word at a time with a pause between words.  The first word is on the screen while the
server still holds the last; the whole answer is stored and its usage recorded.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT
from hermes_host.store import open_store
from hermes_host.testing.fake_anthropic import FakeAnthropic, default_summary_text
from hermes_host.testing.fake_openai import FakeOpenAI
from tests.chat_helpers import PtyChat, chat_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

ANSWER = "alpha bravo charlie delta echo foxtrot"
PAUSE = 0.6
"""Seconds between two events of the answer: the last word comes ~5 s after the first."""
OPENAI_KEY = "sk-proj-STREAMkey0123456789abcdefghijklmnopqrstuvwxyzABCD"


def _answer(body: Any) -> str:
    system = body.get("system") if isinstance(body, dict) else None
    messages = body.get("messages") or [] if isinstance(body, dict) else []
    chat = (isinstance(system, str) and DEFAULT_SYSTEM_PROMPT in system) or any(
        m.get("role") == "system" and DEFAULT_SYSTEM_PROMPT in str(m.get("content"))
        for m in messages if isinstance(m, dict))
    return ANSWER if chat else default_summary_text(body)


def _config(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(model + "  context_length: 200000\n  max_output_tokens: 256\n"
                    "summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                    encoding="utf-8")
    return path


def _stored_answers(store_path: Path) -> list[Any]:
    store = open_store(store_path)
    try:
        [session] = store.list_sessions(limit=10)
        rows = store.all_messages(session.id)
        return [r.message.get("content") for r in rows if r.message.get("role") == "assistant"]
    finally:
        store.close()


def _converse(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[str, float, str]:
    """Send one message; return the screen when the first word showed, the seconds from
    then until the whole answer showed, and the final screen."""
    chat = PtyChat(["--config", str(tmp_path / "config.yaml"), "--store",
                    str(tmp_path / "state.db"), *args], chat_env(tmp_path, env), tmp_path)
    try:
        chat.expect("you> ")
        chat.type(b"hello there\n")
        first = chat.expect("assistant> alpha", timeout=60)
        shown_at = time.monotonic()
        chat.expect("foxtrot", timeout=60)
        rest = time.monotonic() - shown_at
        chat.expect("you> ")
        chat.type(b"/quit\n")
        assert chat.wait() == 0
        return first, rest, chat.output
    finally:
        chat.kill()


def _check(first: str, rest: float, screen: str, store: Path) -> None:
    assert "foxtrot" not in first, "the first word was shown before the answer was complete"
    assert rest > 2 * PAUSE, f"the last word came {rest:.2f}s after the first"
    assert f"assistant> {ANSWER}" in screen  # one line, the pieces joined as sent
    assert _stored_answers(store) == [ANSWER]


def test_anthropic_streams(tmp_path: Path) -> None:
    _config(tmp_path, "model:\n  name: claude-fake-chat\n  provider: anthropic\n")
    with FakeAnthropic(responder=_answer) as fake:
        fake.script([{"kind": "normal", "pause": PAUSE}])
        first, rest, screen = _converse(tmp_path, fake.env())
        body = fake.requests[0].body
    assert body["stream"] is True and body["max_tokens"] == 256
    _check(first, rest, screen, tmp_path / "state.db")
    # the final message's usage reached the store
    store = open_store(tmp_path / "state.db")
    try:
        [session] = store.list_sessions(limit=10)
        assert session.output_tokens >= 1
    finally:
        store.close()


def test_openai_streams(tmp_path: Path) -> None:
    with FakeOpenAI(responder=_answer) as fake:
        _config(tmp_path, "model:\n  name: gpt-4o-mini\n  provider: openai\n"
                f"  base_url: {fake.base_url}\n")
        fake.script([{"kind": "normal", "pause": PAUSE}])
        first, rest, screen = _converse(tmp_path, {"OPENAI_API_KEY": OPENAI_KEY})
        body = fake.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    _check(first, rest, screen, tmp_path / "state.db")
    assert OPENAI_KEY not in screen


def test_no_stream_asks_for_the_whole_answer(tmp_path: Path) -> None:
    _config(tmp_path, "model:\n  name: claude-fake-chat\n  provider: anthropic\n")
    with FakeAnthropic(responder=_answer) as fake:
        chat = PtyChat(["--config", str(tmp_path / "config.yaml"), "--store",
                        str(tmp_path / "state.db"), "--no-stream"],
                       chat_env(tmp_path, fake.env()), tmp_path)
        try:
            screen = chat.send("hello there", timeout=60)
            chat.type(b"/quit\n")
            assert chat.wait() == 0
        finally:
            chat.kill()
        body = fake.requests[0].body
    assert "stream" not in body
    assert f"assistant> {ANSWER}" in screen


def test_a_stream_cut_off_is_a_one_line_error_and_the_chat_goes_on(tmp_path: Path) -> None:
    """The server drops the connection: an error line, the message stays stored, and the
    next message is answered (streamed)."""
    _config(tmp_path, "model:\n  name: claude-fake-chat\n  provider: anthropic\n"
            "  max_retries: 0\n")
    with FakeAnthropic(responder=_answer) as fake:
        fake.script(["disconnect"])
        chat = PtyChat(["--config", str(tmp_path / "config.yaml"), "--store",
                        str(tmp_path / "state.db")], chat_env(tmp_path, fake.env()), tmp_path)
        try:
            failed = chat.send("hello there", timeout=60)
            answered = chat.send("again", timeout=60)
            chat.type(b"/quit\n")
            assert chat.wait() == 0
        finally:
            chat.kill()
    assert "model call failed: anthropic:" in failed and "Traceback" not in failed
    assert f"assistant> {ANSWER}" in answered


def test_a_streamed_answer_wraps_between_words_on_a_narrow_terminal() -> None:
    """Pieces arrive one by one, so rich cannot wrap the answer: RichChatUI does, between
    words, as rich wraps a whole reply (a word wider than the screen is left whole)."""
    from rich.console import Console

    from hermes_host.cli.chat import RichChatUI

    term = Console(width=30, force_terminal=True, color_system=None, record=True)
    ui = RichChatUI(term)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
    for word in words:
        ui.reply_chunk(word + " ")
    ui.reply_end(" ".join(words))
    ui.info("after")
    lines = term.export_text().splitlines()
    assert lines[0].startswith("assistant> alpha")
    assert all(len(line) <= 30 for line in lines), lines
    assert " ".join(" ".join(lines[:-1]).split()) == "assistant> " + " ".join(words)
    assert lines[-1] == "after", "the answer's line is ended before other output"
