"""Drive ``hermes-host chat`` in a real pseudo-terminal against the loopback Anthropic fake.

:class:`PtyChat` forks the real console script under ``pty.fork`` (stdlib), so ``input()``,
rich's terminal detection and the SDK's HTTP calls are all real; :func:`chat_responder`
makes the fake answer chat requests with a recognisable echo and summariser requests with a
well-formed summary.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path
from typing import Any

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT
from hermes_host.testing.fake_anthropic import default_summary_text

HERMES_HOST = Path(sys.executable).with_name("hermes-host")
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\r")
PROMPT = "you> "
PADDING = " ".join(f"w{i:03d}" for i in range(120))
"""Makes every chat answer ~250 tokens, so a small window fills in a few turns."""


def chat_responder(body: Any) -> str:
    """Chat requests (our system prompt) get ``echo: <last user text>`` plus padding;
    anything else (the summariser) gets the fake's eleven-section summary."""
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, str) and DEFAULT_SYSTEM_PROMPT in system:
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(
            b.get("text", "") for b in last if isinstance(b, dict)
        )
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return f"echo: {lines[-1] if lines else ''} | {PADDING}"
    return default_summary_text(body)


def write_config(tmp_path: Path, context_length: int = 1500, max_output: int = 256) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model:\n"
        "  name: claude-fake-chat\n"
        f"  context_length: {context_length}\n"
        f"  max_output_tokens: {max_output}\n"
        "summarizer:\n"
        "  provider: anthropic\n"
        "memory:\n"
        "  providers: []\n",
        encoding="utf-8",
    )
    return path


def chat_env(tmp_path: Path, fake_env: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "HERMES_"))}
    env.update(fake_env or {})
    env.update({"HERMES_HOST_HOME": str(tmp_path / "home"), "NO_COLOR": "1",
                "COLUMNS": "200", "LINES": "50", "TERM": "xterm"})
    return env


class PtyChat:
    """One ``hermes-host chat`` process on a pseudo-terminal."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the chat
            os.chdir(cwd)
            os.execve(str(HERMES_HOST), [str(HERMES_HOST), "chat", *args], env)
        self.pid = pid
        self.fd = fd
        self.output = ""
        self.returncode: int | None = None

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.output += ANSI.sub("", data.decode("utf-8", "replace"))
        return True

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Read until ``text`` appears after what was already consumed; return the new part."""
        start = getattr(self, "_mark", 0)
        deadline = time.monotonic() + timeout
        while text not in self.output[start:]:
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.5)) and self._exited()):
                raise AssertionError(
                    f"{text!r} not seen within {timeout}s; screen so far:\n{self.output[start:]}"
                )
        end = self.output.index(text, start) + len(text)
        self._mark = end
        return self.output[start:end]

    def send(self, line: str, timeout: float = 30.0) -> str:
        """Type ``line`` + Enter and return the screen up to the next prompt."""
        mark = getattr(self, "_mark", 0)
        if self.output[max(0, mark - len(PROMPT)) : mark] != PROMPT:
            self.expect(PROMPT, timeout)
        os.write(self.fd, line.encode() + b"\n")
        start = self._mark
        self.expect(PROMPT, timeout)
        self._mark -= len(PROMPT)  # leave the prompt for the next send
        return self.output[start : self._mark]

    def type(self, data: bytes) -> None:
        """Send raw keystrokes (e.g. ``b"\\x04"`` for Ctrl-D)."""
        os.write(self.fd, data)

    def _exited(self) -> bool:
        if self.returncode is not None:
            return True
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.returncode = os.waitstatus_to_exitcode(status)
        return True

    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while not self._exited():
            self._read(0.2)
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"chat did not exit; screen:\n{self.output}")
        while self._read(0.05):
            pass
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.returncode = -9
        try:
            os.close(self.fd)
        except OSError:
            pass


def wire_messages(requests: list[Any]) -> list[dict[str, Any]]:
    """The JSON bodies of the chat requests (those that carry our system prompt)."""
    bodies = [r.body for r in requests]
    return [
        b for b in bodies
        if isinstance(b, dict) and DEFAULT_SYSTEM_PROMPT in str(b.get("system", ""))
    ]


def underscore_keys(value: Any, path: str = "") -> list[str]:
    """Every key starting with ``_`` anywhere in ``value`` (the wire must have none, R-7.5)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if str(key).startswith("_"):
                found.append(f"{path}.{key}")
            found.extend(underscore_keys(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(underscore_keys(item, f"{path}[{i}]"))
    return found


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class RecordingUI:
    """A :class:`hermes_host.chat.ChatUI` that keeps every line, by kind, in order."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def reply(self, text: str) -> None:
        self.lines.append(("reply", text))

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def event(self, text: str) -> None:
        self.lines.append(("event", text))

    def error(self, text: str) -> None:
        self.lines.append(("error", text))

    def table(self, title: str, columns: Any, rows: Any) -> None:
        self.lines.append(("table", dumps({"title": title, "columns": list(columns),
                                           "rows": [list(r) for r in rows]})))

    def take(self) -> list[tuple[str, str]]:
        out, self.lines = self.lines, []
        return out

    def text(self, kind: str | None = None) -> str:
        return "\n".join(t for k, t in self.lines if kind is None or k == kind)
