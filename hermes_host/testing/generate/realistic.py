"""Realistic sessions: a coding session with parallel calls, long tool outputs, a
multi-topic chat, a cron session without a user turn, a window holding a summary."""

from __future__ import annotations

import random
from collections.abc import Callable

from hermes_host.messages import SUMMARY_METADATA_KEY, SUMMARY_PREFIX
from hermes_host.models import Message
from hermes_host.testing.generate.blocks import (
    _FILES,
    _TOPICS,
    _Builder,
    _log_lines,
    _pytest_output,
    _source,
)
from hermes_host.testing.generate.session import DEFAULT_SEED, Session

__all__ = ["realistic_sessions"]


def coding_session(rng: random.Random, rounds: int = 8) -> list[Message]:
    """A coding agent fixing a failing test: reads, runs, edits, parallel calls, follow-ups."""
    b = _Builder(rng)
    b.user("The CLI exits with code 2 when --config points to a missing file. Fix it.")
    for r in range(rounds):
        path = rng.choice(_FILES)
        b.tools(("read_file", {"path": path}, _source(rng, path, rng.randint(20, 80))),
                text="Let me look at the code first." if r == 0 else None)
        b.tools(("terminal", {"cmd": "pytest -x -q"}, _pytest_output(rng, failed=r < rounds - 1)))
        if r % 3 == 1:  # parallel calls in one assistant message
            b.tools(
                ("grep", {"pattern": "load_config", "path": "src"},
                 "\n".join(f"src/app/{f}.py:{rng.randint(1, 200)}: load_config(path)"
                           for f in ("cli", "config", "server"))),
                ("read_file", {"path": "setup.cfg"}, "[metadata]\nname = app\n[options]\n"),
            )
        b.tools(("edit_file", {"path": path, "old": "return 2", "new": "return 0"},
                 f"Edited {path}: 1 replacement"))
        b.assistant(f"Round {r + 1}: changed {path}; re-running the tests.")
        if r < rounds - 1:
            b.user(rng.choice(["ok, continue", "what failed?", "also check the README",
                               "keep going"]))
    b.user("Great. Summarise what you changed.")
    return b.messages


def long_outputs_session(rng: random.Random) -> list[Message]:
    """Few turns, each with a tool output of tens of kilobytes (logs, a big file)."""
    b = _Builder(rng)
    b.user("Why is the nightly import job slow? Look at the logs.")
    for chars in (60_000, 25_000, 90_000):
        b.tools(("terminal", {"cmd": "journalctl -u importer --since yesterday"},
                 _log_lines(rng, chars)))
        b.assistant("The log shows batches slowing down after midnight.")
        b.user("Show me more of it.")
    return b.messages


def multi_topic_session(rng: random.Random) -> list[Message]:
    """A chat that switches topic several times, no tools, no system prompt."""
    b = _Builder(rng, system=None)
    topics = list(_TOPICS)
    rng.shuffle(topics)
    for topic in topics * 2:
        for question in _TOPICS[topic]:
            b.user(question)
            b.assistant(f"About {topic}: " + " ".join(
                rng.choice(["First,", "Then", "Note that", "In short,"]) + f" point {i}."
                for i in range(rng.randint(5, 30))
            ))
    b.user("Back to the first thing we talked about: can you recap it?")
    return b.messages


def cron_session(rng: random.Random) -> list[Message]:
    """An unattended (cron) agent: no user turn at all, only tool activity (R-7.6)."""
    b = _Builder(rng, system="You are an unattended maintenance agent. Rotate logs nightly.")
    for n in range(6):
        b.tools(("terminal", {"cmd": f"logrotate -v /etc/logrotate.d/app.{n}"},
                 _log_lines(rng, 2_000)), text=f"Rotating set {n + 1}." if n % 2 else None)
    b.assistant("All six log sets rotated.")
    return b.messages


def summarised_session(rng: random.Random) -> list[Message]:
    """A window after an earlier compression: exactly one summary block, then the tail."""
    b = _Builder(rng)
    b.messages.append({
        "role": "user",
        SUMMARY_METADATA_KEY: True,
        "content": SUMMARY_PREFIX + "\n\n## Historical Task Snapshot\nFix the CLI exit code.\n"
        "## Completed Actions\n1. EDIT src/app/cli.py — return 0 on success [tool: edit_file]\n",
    })
    b.assistant("Understood; continuing from the summary.")
    b.user("Now add a test for the missing-file case.")
    b.tools(("edit_file", {"path": "tests/test_cli.py"}, "Edited tests/test_cli.py"))
    b.tools(("terminal", {"cmd": "pytest -q"}, _pytest_output(rng, failed=False)))
    b.assistant("The new test passes.")
    b.user("Commit it.")
    return b.messages


_REALISTIC: list[tuple[str, str, Callable[[random.Random], list[Message]]]] = [
    ("coding", "coding session with tool calls and parallel calls", coding_session),
    ("long_outputs", "tool outputs of 25-90 KB", long_outputs_session),
    ("multi_topic", "multi-topic chat without system prompt or tools", multi_topic_session),
    ("no_user_turn", "cron session with no user turn", cron_session),
    ("summarised", "window holding one earlier summary block", summarised_session),
]


def realistic_sessions(seed: int = DEFAULT_SEED) -> list[Session]:
    out = []
    for name, description, build in _REALISTIC:
        out.append(Session(name, "realistic", description, build(random.Random(f"{seed}:{name}"))))
    return out
