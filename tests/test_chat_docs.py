"""docs/chat.md's "Without a real model" config works as the page shows (issue 30): the real
console script on a pseudo-terminal against the loopback OpenAI-compatible fake, configured
by the page's own ``fake.yaml`` (only the port differs).  Each chat request asks for the
page's ``max_output_tokens`` (it sent the default 8,192 with a 2,000-token window), and the
small window compresses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT
from hermes_host.testing.fake_openai import FakeOpenAI, chat_responder
from tests.chat_helpers import PtyChat, chat_env
from tests.docs_blocks import blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "chat.md"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_the_pages_fake_config_chats_and_compresses(tmp_path: Path) -> None:
    (page_config,) = [b.text for b in blocks(PAGE) if b.text.startswith("# fake.yaml")]
    assert "max_output_tokens: 256" in page_config
    with FakeOpenAI(responder=chat_responder) as fake:
        config = tmp_path / "fake.yaml"
        config.write_text(page_config.replace("http://127.0.0.1:8099/v1", fake.base_url),
                          encoding="utf-8")
        chat = PtyChat(["--config", str(config), "--store", str(tmp_path / "fake.db")],
                       chat_env(tmp_path, None), tmp_path)
        try:
            chat.expect("/help for commands")
            screens = [chat.send(f"question {n}: " + "tell me about the context window " * 8)
                       for n in range(12)]
            chat.type(b"/quit\n")
            assert chat.wait() == 0
        finally:
            chat.kill()
        bodies = [json.loads(r.raw_body) for r in fake.requests if r.raw_body]
    turns = [b for b in bodies if DEFAULT_SYSTEM_PROMPT in json.dumps(b["messages"][:1])]
    assert len(turns) == 12
    assert {b.get("max_tokens") or b.get("max_completion_tokens") for b in turns} == {256}
    assert any("Context compaction complete" in s for s in screens), screens[-1]
