"""Issue 17's "done when": ``hermes-host replay`` with ``summarizer.provider: openai`` pointed
at an OpenAI-compatible server on loopback that is NOT the project's fake.

The server below is written here, independently of :mod:`hermes_host.testing.fake_openai`: a
bare ``http.server`` handler that answers ``POST /v1/chat/completions`` the way an
OpenAI-compatible server does, with a summary *built from the request it received* (so a
stored summary can only have come from its answer).  It first answers 429, then 500, then
garbage; the replay must survive all three (offline fallback, with the failure named), then
store the server's summaries — and the API key must appear nowhere: not on stdout or stderr,
not in the store, not in what the server was sent other than the Authorization header.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hermes_compressor")

KEY = "sk-or-v1-INDEPENDENTkey0123456789abcdefABCDEF0123456789abcdef"
KEY_VAR = "MY_GATEWAY_KEY"
MARKER = "INDEPENDENT-LOOPBACK-SERVER"
SECTIONS = ("Historical Task Snapshot", "Goal", "Constraints & Preferences", "Completed Actions",
            "Active State", "Blocked", "Key Decisions", "Resolved Questions", "Relevant Files",
            "Critical Context", "Pruned Skills")


class Independent:
    """An OpenAI-compatible server: scripted failures first, then summaries of the request."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = list(failures)
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def reply(self, status: int, body: bytes, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.seen.append({"path": self.path, "raw": raw.decode(),
                                        "auth": self.headers.get("Authorization", "")})
                    n = len(server.seen)
                    failure = server.failures.pop(0) if server.failures else None
                if failure == "429":
                    self.reply(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}',
                               **{"Retry-After": "0.01"})  # honoured (issue 17): keep it short
                    return
                if failure == "500":
                    self.reply(500, b'{"error": {"message": "boom", "type": "server_error"}}')
                    return
                if failure == "garbage":
                    self.reply(200, b"<html>502 Bad Gateway</html>\x00\xff not json")
                    return
                request = json.loads(raw)
                prompt = request["messages"][-1]["content"]
                summary = "\n\n".join(
                    f"## {name}\n"
                    + (f"1. {MARKER} summary #{n} of a {len(prompt)}-character prompt "
                       f"for {request['model']}" if name == "Completed Actions" else "None.")
                    for name in SECTIONS
                )
                body = {"id": f"cmpl-{n}", "object": "chat.completion", "created": 0,
                        "model": request["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": summary}}],
                        "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 90,
                                  "total_tokens": len(prompt) // 4 + 90}}
                self.reply(200, json.dumps(body).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[Independent]:
    srv = Independent(["429", "500", "garbage"])
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def _transcript(path: Path, turns: int = 36) -> Path:
    lines = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(turns):
        lines.append({"role": "user", "content": f"Step {t}: refactor module_{t}.py so that "
                      f"the parser handles case {t} and keep the tests green. " * 4})
        lines.append({"role": "assistant", "content": f"Done with step {t}: module_{t}.py "
                      f"now splits tokens before parsing; {t} tests pass. " * 5})
    path.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    return path


def test_replay_summarises_through_an_independent_openai_compatible_server(
    server: Independent, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "summarizer:\n"
        "  provider: openai\n"
        f"  base_url: {server.base_url}\n"
        f"  api_key_env: {KEY_VAR}\n"
        "  model: acme/summary-small\n"
        "  timeout_seconds: 10\n"
        "compression:\n"
        "  cooldown_seconds: 0.001\n"  # let the next compression try the server again
        "memory:\n  providers: []\n",
        encoding="utf-8",
    )
    store = tmp_path / "state.db"
    env = {**os.environ, KEY_VAR: KEY, "HERMES_HOST_HOME": str(tmp_path / "home"),
           "HERMES_HOST_TRACE_PLUGINS": "1"}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "HERMES_HOST_CONFIG",
                 "HERMES_HOST_LOAD_PLUGINS"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", "from hermes_host.cli import cli; cli()", "replay",
         str(_transcript(tmp_path / "t.jsonl")),
         "--config", str(config), "--store", str(store), "--context-length", "2000", "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # issue 28: on this 2,000-token window some early attempts are not worth a summariser
    # call; they say so and spend none
    noops = [c for c in report["compressions"] if c["outcome"] == "noop"]
    assert all(c["llm_calls"] == 0 for c in noops), noops
    attempts = [c for c in report["compressions"] if c["outcome"] != "noop"]
    outcomes = [c["outcome"] for c in attempts]

    # the server was asked, with the key, by the real SDK, for the configured model
    assert len(server.seen) >= 5, outcomes
    assert all(s["path"] == "/v1/chat/completions" for s in server.seen)
    assert all(s["auth"] == f"Bearer {KEY}" for s in server.seen)
    assert all(json.loads(s["raw"])["model"] == "acme/summary-small" for s in server.seen)
    # it survived 429, 500 and garbage: three offline fallbacks, saying why, then summaries
    assert outcomes[:3] == ["fallback"] * 3, outcomes
    assert outcomes[3:] == ["summarised"] * (len(server.seen) - 3), outcomes
    assert "openai: HTTP 429" in result.stderr and "openai: HTTP 500" in result.stderr
    assert "openai: malformed response" in result.stderr
    committed = [c for c in attempts[3:] if c["status"] == "committed"]
    assert len(committed) >= 2, attempts

    # the summaries the store holds are the server's answers to those very requests
    with sqlite3.connect(store) as db:
        stored = [row[0] for row in db.execute(
            "SELECT content FROM messages WHERE content LIKE ?", (f"%{MARKER}%",))]
    assert len(stored) == len(committed)
    first = json.loads(server.seen[3]["raw"])["messages"][-1]["content"]
    assert any(f"{MARKER} summary #4 of a {len(first)}-character prompt" in s for s in stored)

    # no key anywhere: output, the store file (and its WAL), what the server was sent
    assert KEY not in result.stdout and KEY not in result.stderr
    for path in tmp_path.rglob("state.db*"):
        assert KEY.encode() not in path.read_bytes(), path
    assert all(KEY not in s["raw"] for s in server.seen)
