"""``hermes-host chat`` with the model server down names the URL it could not reach, in
one line, without the key (issue 30, deliverable 5) — on both providers.

The real console script, its stdin a pipe; the server is a loopback port nobody listens on
(bound, then closed).  Before: ``model call failed: anthropic: connection failed
(APIConnectionError)`` — which server, the user had to guess.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_host.chat.model import shown_url
from hermes_host.llm import SummaryJob, TransientSummaryError
from hermes_host.llm.anthropic_summarizer import AnthropicSummarizer
from hermes_host.llm.openai_summarizer import OpenAISummarizer
from hermes_host.models import SummarizerSettings

KEY = "sk-ant-api03-DOWNkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
OPENAI_KEY = "sk-proj-DOWNkey0123456789abcdefghijklmnopqrstuvwxyzABCDEF"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chat(tmp_path: Path, config: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "config.yaml"
    path.write_text(config + "  max_retries: 0\n  timeout_seconds: 10\n"
                    "summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                    encoding="utf-8")
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "HERMES_"))}
    base.update({"HERMES_HOST_HOME": str(tmp_path / "home"), "NO_COLOR": "1", **env})
    return subprocess.run(
        [sys.executable, "-c", "from hermes_host.cli import cli; cli()", "chat", "--config",
         str(path), "--store", str(tmp_path / "state.db")],
        input="hello there\n/quit\n", capture_output=True, text=True, timeout=120, env=base,
        cwd=tmp_path)


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if "model call failed" in line]
    assert len(lines) == 1, output  # one line: the URL never wraps it onto a second
    return lines[0]


def test_anthropic_base_url_from_config(tmp_path: Path) -> None:
    port = _closed_port()
    proc = _chat(tmp_path, "model:\n  provider: anthropic\n"
                 f"  base_url: http://127.0.0.1:{port}/gateway\n",
                 {"ANTHROPIC_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    line = _error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}/gateway/v1/messages" in line, line
    assert "anthropic" in line and "APIConnectionError" in line
    assert KEY not in proc.stdout + proc.stderr


def test_anthropic_base_url_from_the_environment_without_credentials(tmp_path: Path) -> None:
    """ANTHROPIC_BASE_URL (the SDK's own variable) with a user:password: the error shows
    the host and path, not those."""
    port = _closed_port()
    proc = _chat(tmp_path, "model:\n  provider: anthropic\n", {
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": f"http://proxyuser:hunter2pass@127.0.0.1:{port}/p",
    })
    line = _error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}/p/v1/messages" in line, line
    everything = proc.stdout + proc.stderr
    assert KEY not in everything and "hunter2pass" not in everything
    assert "proxyuser" not in line


def test_openai_base_url(tmp_path: Path) -> None:
    port = _closed_port()
    proc = _chat(tmp_path, "model:\n  name: gpt-4o-mini\n  provider: openai\n"
                 f"  base_url: http://127.0.0.1:{port}/v1\n", {"OPENAI_API_KEY": OPENAI_KEY})
    assert proc.returncode == 0, proc.stderr
    line = _error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}/v1/chat/completions" in line, line
    assert "openai" in line and "APIConnectionError" in line
    assert OPENAI_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize(("url", "shown"), [
    ("https://u:p@api.example.com:8443/v1/messages?api_key=abc#x",
     "https://api.example.com:8443/v1/messages"),
    ("http://[::1]:9/v1", "http://[::1]:9/v1"),
    (f"https://gw.example.com/{OPENAI_KEY}/v1", "https://gw.example.com/"),
])
def test_shown_url_drops_credentials(url: str, shown: str) -> None:
    assert shown_url(url).startswith(shown)
    assert "abc" not in shown_url(url) and OPENAI_KEY not in shown_url(url)
    assert ":p@" not in shown_url(url)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_summariser_that_cannot_connect_names_the_url_too(provider: str) -> None:
    """The same server down seen by the summariser (a compression's error, kept in the
    receipts and shown by replay and chat): the URL, no credentials, no key."""
    port = _closed_port()
    settings = SummarizerSettings(provider=provider, timeout_seconds=5, max_retries=0,
                                  base_url=f"http://who:pw@127.0.0.1:{port}/base")
    summarizer = (AnthropicSummarizer(settings, api_key=KEY) if provider == "anthropic"
                  else OpenAISummarizer(settings, api_key=OPENAI_KEY))
    with pytest.raises(TransientSummaryError) as info:
        summarizer.summarize(SummaryJob(prompt="summarise", messages=[]))
    message = str(info.value)
    path = "/base/v1/messages" if provider == "anthropic" else "/base/chat/completions"
    assert f"connection failed to http://127.0.0.1:{port}{path} (APIConnectionError)" in message
    assert "pw" not in message and KEY not in message and OPENAI_KEY not in message

