"""``/undo`` right after ``/compress here N`` undoes the newest kept turn (issue 30: it said
"nothing to undo: the window holds no user turn" when the kept user message had been merged
into the summary).  Real controller, real store, the offline summariser, the real
``anthropic`` SDK against the loopback fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT, AnthropicChatModel, ChatController
from hermes_host.config import load_config
from hermes_host.host import ContextHost
from hermes_host.messages import is_summary, text_of
from hermes_host.testing.fake_anthropic import FakeAnthropic
from tests.chat_helpers import RecordingUI, chat_responder


@pytest.mark.parametrize("protect_first_n", [0, 3])
@pytest.mark.parametrize("turns", [3, 5])
def test_undo_after_compress_here_undoes_the_kept_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protect_first_n: int, turns: int
) -> None:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_SESSION_ID", raising=False)
    path = tmp_path / "config.yaml"
    path.write_text(
        "model:\n  name: claude-fake-chat\n  context_length: 64000\n  max_output_tokens: 256\n"
        "summarizer:\n  provider: offline\nmemory:\n  providers: []\n"
        f"compression:\n  protect_first_n: {protect_first_n}\n", encoding="utf-8")
    config = load_config(path)
    ui = RecordingUI()
    with FakeAnthropic(responder=chat_responder) as fake, ContextHost.from_config(
        config, store=tmp_path / "state.db"
    ) as host:
        model = AnthropicChatModel(config.model.name, "sk-ant-test-fake-key",
                                   base_url=fake.base_url, max_retries=0)
        chat = ChatController(host, host.open_session("undo", DEFAULT_SYSTEM_PROMPT), model,
                              ui, restore_cwd=False)
        try:
            for n in range(turns):
                chat.handle(f"question {n} " + "about the window " * 30)
            chat.handle("/compress here 1")
            window = chat.session.raw_window
            last = f"question {turns - 1} "
            assert any(last in text_of(m) for m in window)
            ui.lines.clear()
            chat.handle("/undo")
        finally:
            model.close()
        said = " ".join(text for _, text in ui.lines)
        assert "nothing to undo" not in said and said.startswith("undid 1 turn(s)"), said
        after = chat.session.raw_window
        assert not any(last in text_of(m) for m in after if not is_summary(m))
        assert len(after) < len(window)
