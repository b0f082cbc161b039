"""``hermes-host chat`` with ``model.provider: openai``: tool-less turns through the real
``openai`` SDK to the loopback OpenAI-compatible fake, provider-reported usage in the store
and in ``/status`` (issue 17; R-12.1)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.chat import ChatController
from hermes_host.chat.openai_model import OpenAIChatModel, to_openai
from hermes_host.cli import cli
from hermes_host.config import load_config
from hermes_host.host import ContextHost
from hermes_host.llm.providers import load_provider
from hermes_host.testing.fake_openai import FakeOpenAI, chat_responder
from tests.chat_helpers import PtyChat, RecordingUI, chat_env

KEY = "sk-proj-CHATkey0123456789abcdefghijklmnopqrstuvwxyzABCDEF"


def _config(tmp_path: Path, base_url: str, **extra: str) -> Path:
    lines = ["model:", "  name: gpt-4o-mini", "  provider: openai", f"  base_url: {base_url}",
             "  api_key_env: CHAT_KEY", "  context_length: 4000", "  max_output_tokens: 300",
             "  headers:", "    X-Title: hermes-host-test",
             "summarizer:", "  provider: openai", f"  base_url: {base_url}",
             "  model: gpt-4o-mini", "  api_key_env: CHAT_KEY",
             "memory:", "  providers: []"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=chat_responder) as server:
        yield server


@pytest.fixture
def chat(tmp_path: Path, fake: FakeOpenAI,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatController]:
    monkeypatch.setenv("CHAT_KEY", KEY)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_SESSION_ID", raising=False)
    config = load_config(_config(tmp_path, fake.base_url))
    host = ContextHost.from_config(config, store=tmp_path / "state.db")
    model = load_provider("openai").chat_model(config.model, {"CHAT_KEY": KEY})
    assert isinstance(model, OpenAIChatModel)
    session = host.open_session("trial", "You are terse.")
    controller = ChatController(host, session, model, RecordingUI(), restore_cwd=False)
    try:
        yield controller
    finally:
        model.close()
        host.close()


def _ui(chat: ChatController) -> RecordingUI:
    assert isinstance(chat.ui, RecordingUI)
    return chat.ui


def test_turns_go_over_the_chat_completions_wire_with_usage(
    chat: ChatController, fake: FakeOpenAI
) -> None:
    chat.handle("hello there")
    chat.handle("and again")
    replies = [text for kind, text in _ui(chat).lines if kind == "reply"]
    assert replies[1] == "(fake model) You said 2 word(s): and again"
    body = fake.requests[-1].body
    assert body["model"] == "gpt-4o-mini" and body["max_tokens"] == 300
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == "You are terse."
    headers = fake.requests[-1].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-title"] == "hermes-host-test"
    # the fake reports prompt_tokens = len(json(messages)) // 4: end_turn recorded exactly that
    assert chat.session.last_prompt_tokens == len(json.dumps(body["messages"])) // 4
    row = chat.host.store.get_session(chat.session.id)
    assert row.output_tokens > 0 and row.input_tokens >= chat.session.last_prompt_tokens
    assert [m["role"] for m in chat.session.raw_window] == ["user", "assistant"] * 2


def test_status_shows_provider_model_tokenizer_and_reported_usage(chat: ChatController) -> None:
    chat.handle("hello")
    chat.handle("/status")
    status = _ui(chat).text("info")
    assert "model: gpt-4o-mini (provider openai, tokenizer " in status
    row = chat.host.store.get_session(chat.session.id)
    assert (f"tokens this conversation (provider-reported): in {row.input_tokens:,} · out "
            f"{row.output_tokens:,}") in status
    assert f"last prompt (provider-reported): {chat.session.last_prompt_tokens:,}" in status
    tok = chat.session.status()["tokenizer"]
    assert tok["wanted"] == "o200k_base" and tok["encoding"] in ("o200k_base_offline",
                                                                  "o200k_base",
                                                                  "cl100k_base_offline")


def test_cut_off_answer_is_kept_and_explained(chat: ChatController, fake: FakeOpenAI) -> None:
    fake.script([{"kind": "length", "text": "partial answ"}])
    chat.handle("write an essay")
    assert ("reply", "partial answ") in _ui(chat).lines
    assert "cut at max_tokens=300" in _ui(chat).text("info")


@pytest.mark.parametrize(("kind", "shown"), [("429", "openai: HTTP 429"),
                                             ("401", "openai: HTTP 401"),
                                             ("malformed", "openai: malformed response")])
def test_model_failure_is_one_line_and_keeps_the_message(
    chat: ChatController, fake: FakeOpenAI, kind: str, shown: str
) -> None:
    fake.script([kind] * 3)  # the chat client retries twice by default
    chat.handle("are you there")
    error = _ui(chat).text("error")
    assert shown in error and "Your message is stored" in error
    assert KEY not in error
    assert chat.session.raw_window[-1]["content"] == "are you there"


def test_to_openai_renders_tools_as_text_and_drops_metadata() -> None:
    request = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:x"}}]},
        {"role": "assistant", "content": None, "_stamp": 1, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"p\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "data"},
        {"role": "assistant", "content": ""},
    ]
    assert to_openai(request) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:x"}}]},
        {"role": "assistant", "content": "[called read_file({\"p\": 1})]"},
        {"role": "user", "content": "[tool result: read_file]\ndata"},
    ]


def test_cli_chat_openai_without_a_key_names_the_variable(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  provider: openai\n  name: gpt-4o\n  api_key_env: CHAT_KEY\n")
    result = CliRunner().invoke(cli, ["chat", "--config", str(config),
                                      "--store", str(tmp_path / "s.db")],
                                env={"CHAT_KEY": "", "HERMES_HOST_HOME": str(tmp_path)})
    assert result.exit_code == 2
    assert "set CHAT_KEY" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "s.db").exists()


def test_cli_chat_unknown_provider_lists_the_installed(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  provider: nosuch\n")
    result = CliRunner().invoke(cli, ["chat", "--config", str(config)],
                                env={"HERMES_HOST_HOME": str(tmp_path)})
    assert result.exit_code == 2
    assert "unknown model provider 'nosuch'" in result.output
    assert "anthropic, offline, openai" in result.output


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_the_real_console_script_chats_with_an_openai_compatible_server(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    config = _config(tmp_path, fake.base_url)
    env = chat_env(tmp_path, {"CHAT_KEY": KEY})
    chat = PtyChat(["--config", str(config), "--store", str(tmp_path / "state.db")], env,
                   tmp_path)
    try:
        banner = chat.expect("/help for commands")
        assert "model gpt-4o-mini (openai)" in banner
        assert "(fake model) You said 3 word(s): what is hermes" in chat.send("what is hermes")
        status = chat.send("/status")
        assert "provider openai" in status and "provider-reported" in status
        chat.type(b"/quit\n")
        assert chat.wait() == 0
    finally:
        chat.kill()
    assert KEY not in chat.output
