"""Building blocks of generated sessions: a message builder that keeps call ids unique,
and plausible source files, test runs and logs."""

from __future__ import annotations

import json
import random
from typing import Any

from hermes_host.models import Message

_SYSTEM = (
    "You are a coding agent working in the user's repository. Use the tools to read, edit and "
    "run code. Prefer small, verified changes. Never print secrets."
)
_FILES = ["src/app/config.py", "src/app/cli.py", "tests/test_cli.py", "README.md", "setup.cfg"]
_TOPICS = {
    "rust": [
        "Why does the borrow checker reject returning a reference to a local String?",
        "So I should return String instead of &str there?",
        "And when would Cow<'a, str> be the better choice?",
    ],
    "cooking": [
        "I have eggs, spinach and feta. What can I cook in 15 minutes?",
        "Can I make it without an oven?",
        "How do I keep the eggs from getting rubbery?",
    ],
    "travel": [
        "Plan two days in Lisbon on a budget, mostly on foot.",
        "Swap the second afternoon for something indoors, rain is forecast.",
        "Which neighbourhood is best for dinner near the river?",
    ],
}


class _Builder:
    """Appends messages and keeps call ids unique."""

    def __init__(self, rng: random.Random, system: str | None = _SYSTEM) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self.calls = 0
        if system is not None:
            self.messages.append({"role": "system", "content": system})

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str | None) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def tools(self, *calls: tuple[str, dict[str, Any], str], text: str | None = None) -> None:
        """One assistant message with ``calls`` (name, arguments, output), then each result."""
        entries = []
        results = []
        for name, arguments, output in calls:
            self.calls += 1
            call_id = f"call_{self.calls:04d}_{self.rng.randrange(16**6):06x}"
            entries.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            )
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": output}
            )
        self.messages.append({"role": "assistant", "content": text, "tool_calls": entries})
        self.messages.extend(results)


def _source(rng: random.Random, path: str, lines: int) -> str:
    body = []
    for n in range(1, lines + 1):
        kind = rng.choice(["def", "assign", "comment", "blank", "call"])
        if kind == "def":
            body.append(f"def handler_{n}(request, *, timeout=30):")
        elif kind == "assign":
            body.append(f"    value_{n} = settings.get('key_{n % 17}', {rng.randint(0, 999)})")
        elif kind == "comment":
            issue = rng.randint(1, 400)
            body.append(f"    # {path}: keep in sync with the CLI flags (see #{issue})")
        elif kind == "call":
            body.append(f"    log.info('step %s done', {n})")
        else:
            body.append("")
    return "\n".join(body)


def _pytest_output(rng: random.Random, failed: bool, lines: int = 40) -> str:
    out = ["============================= test session starts =============================="]
    for n in range(lines):
        status = "PASSED" if (not failed or n != lines // 2) else "FAILED"
        out.append(f"tests/test_cli.py::test_case_{n} {status}{' ' * 10}[{n * 100 // lines:3d}%]")
    if failed:
        out += [
            "___________________________ test_case_fail ___________________________",
            "E   AssertionError: expected exit code 0, got 2",
            "E   assert 2 == 0",
            f"=========== 1 failed, {lines - 1} passed in {rng.random() * 9:.2f}s ===========",
        ]
    else:
        out.append(f"=========== {lines} passed in {rng.random() * 9:.2f}s ===========")
    return "\n".join(out)


def _log_lines(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = 0
    n = 0
    while size < chars:
        n += 1
        line = (
            f"2026-03-{rng.randint(1, 28):02d}T12:{n % 60:02d}:{rng.randint(0, 59):02d}Z "
            f"{rng.choice(['INFO', 'DEBUG', 'WARN'])} worker-{rng.randint(1, 8)} "
            f"processed batch {n} ({rng.randint(10, 9999)} rows, {rng.random():.3f}s)"
        )
        parts.append(line)
        size += len(line) + 1
    return "\n".join(parts)
