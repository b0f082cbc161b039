"""Sessions the conformance kit generates itself: realistic windows and adversarial ones.

Every session is a *valid window* — the host only ever hands engines windows that satisfy
the invariants (alternation, tool pairs, at most one summary block) — but each one stresses
something real engines get wrong: tool-call groups (parallel calls included), outputs of
hundreds of kilobytes, topic switches, cron sessions with no user turn, an existing summary
block, content given as a list of parts, empty and ``None`` content, calls closed by the
dangling-call sanitiser, and text in many scripts.

Generation is seeded: the same seed gives the same sessions, so a failure reproduces.
:func:`transcript_sessions` turns a folder of OpenAI-format JSONL transcripts into sessions
too, normalised exactly as the host normalises a window before sending it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_host.messages import (
    SUMMARY_METADATA_KEY,
    SUMMARY_PREFIX,
    check_invariants,
    normalize_alternation,
    repair_tool_pairs,
)
from hermes_host.models import Message

__all__ = [
    "Session",
    "adversarial_sessions",
    "generated_sessions",
    "interleave_transcripts",
    "realistic_sessions",
    "transcript_sessions",
]

DEFAULT_SEED = 20_215


@dataclass(frozen=True)
class Session:
    """One window to run every hook on.  ``id`` names the pytest case."""

    id: str
    kind: str  # "realistic" | "adversarial" | "transcript"
    description: str
    messages: list[Message]
    skip_reason: str | None = None


# --- building blocks ----------------------------------------------------------------------

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


# --- realistic sessions -------------------------------------------------------------------


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


# --- adversarial sessions -----------------------------------------------------------------


def _adversarial(rng: random.Random) -> Iterator[tuple[str, str, list[Message]]]:
    yield "system_only", "a window that is only the system prompt", [
        {"role": "system", "content": _SYSTEM}
    ]
    yield "single_user", "one user message, nothing else", [{"role": "user", "content": "hi"}]

    b = _Builder(rng)
    b.user("")
    b.assistant(None)
    b.user("   ")
    b.tools(("noop", {}, ""), text="")
    b.assistant("")
    b.user("still there?")
    yield "empty_content", "empty, blank and None content everywhere", b.messages

    b = _Builder(rng)
    b.messages.append({"role": "user", "content": [
        {"type": "text", "text": "What is in this screenshot?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "iVBORw0KGgo" * 50}},
    ]})
    b.messages.append(
        {"role": "assistant", "content": [{"type": "text", "text": "A stack trace."}]}
    )
    b.messages.append({"role": "user", "content": [{"type": "text", "text": "Open trace.txt."}]})
    b.tools(("read_file", {"path": "trace.txt"}, "Traceback (most recent call last):\n  ..."))
    b.messages.append({"role": "assistant", "content": [{"type": "text", "text": "Found it."}]})
    b.messages.append({"role": "user", "content": [{"type": "text", "text": "Fix it then."}]})
    yield "list_content", "content as lists of text and image parts", b.messages

    raw: list[Message] = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "go"}]
    raw.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_dangling_1", "type": "function",
         "function": {"name": "terminal", "arguments": '{"cmd": "make"}'}},
        {"id": "call_dangling_2", "type": "function",
         "function": {"name": "terminal", "arguments": '{"cmd": "make test"}'}},
    ]})
    raw.append({"role": "tool", "tool_call_id": "call_dangling_1", "content": "built"})
    raw.append({"role": "user", "content": "you were interrupted; carry on"})
    repaired, _ = repair_tool_pairs(raw)
    yield "dangling_calls_closed", "calls closed by the dangling-call sanitiser", repaired

    b = _Builder(rng)
    b.user("Dump the whole database schema and the first rows.")
    b.tools(("terminal", {"cmd": "sqlite3 app.db .dump"}, _log_lines(rng, 600_000)))
    b.assistant("That is a 600 KB dump; the interesting part is the users table.")
    b.user("ok")
    yield "huge_output", "one 600 KB tool output", b.messages

    b = _Builder(rng, system="Réponds en français. 日本語も可。 Ответы краткие. 🙂")
    texts = [
        "naïve café résumé — ﬁne ligatures and combining é (e\u0301)",
        "中文、日本語、한국어 mixed with English words",
        "שלום עולם مرحبا بالعالم (right-to-left)",
        "emoji 👩‍👩‍👧‍👦 🏳️‍🌈 with zero-width joiners and \u200b zero-width spaces",
        "control characters: tab\there, NUL\x00 inside, and \u2028 line separator",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math alphanumerics and astral plane 𐍈",
    ]
    for i, text in enumerate(texts):
        b.user(text)
        if i % 2:
            b.tools(("echo", {"text": text}, text * 20))
        b.assistant(text[::-1])
    b.user("Ça marche ? 🙏")
    yield "unicode", "many scripts, emoji, combining marks, control characters", b.messages

    b = _Builder(rng)
    for n in range(600):
        b.user(f"q{n}")
        b.assistant(f"a{n}")
    b.user("last")
    yield "many_small", "1,201 tiny messages", b.messages

    b = _Builder(rng)
    b.user("Run every check at once.")
    checks: list[tuple[str, dict[str, Any], str]] = [
        (f"check_{n}", {"n": n}, f"check {n}: ok\n" * rng.randint(1, 200)) for n in range(12)
    ]
    b.tools(*checks)
    b.assistant("All 12 checks passed.")
    b.user("thanks")
    yield "wide_parallel_calls", "one assistant message with 12 parallel calls", b.messages


def adversarial_sessions(seed: int = DEFAULT_SEED) -> list[Session]:
    rng = random.Random(f"{seed}:adversarial")
    return [
        Session(name, "adversarial", description, messages)
        for name, description, messages in _adversarial(rng)
    ]


def generated_sessions(seed: int = DEFAULT_SEED) -> list[Session]:
    """Every session the kit generates itself (realistic, then adversarial)."""
    sessions = realistic_sessions(seed) + adversarial_sessions(seed)
    for session in sessions:  # a kit bug must not be blamed on the engine
        problems = check_invariants(session.messages)
        if problems:
            raise RuntimeError(f"generated session {session.id} is invalid: {problems[0]}")
    return sessions


# --- transcripts --------------------------------------------------------------------------


def _window_from(messages: list[Message]) -> tuple[list[Message], str | None]:
    repaired, _ = repair_tool_pairs(messages)
    window, _ = normalize_alternation(repaired)
    problems = check_invariants(window)
    if problems:
        return window, f"cannot be normalised into a valid window: {problems[0]}"
    return window, None


def transcript_sessions(directory: str | Path) -> list[Session]:
    """Two sessions per ``*.jsonl`` file: the whole transcript, and a window cut after a user
    message near the middle (where ``select_context`` runs).  A file that cannot be read
    becomes a session whose ``skip_reason`` names the file and line."""
    from hermes_host.transcripts import TranscriptError, load_transcript

    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"--hermes-transcripts: {root} is not a folder")
    out: list[Session] = []
    for path in sorted(root.glob("*.jsonl")):
        stem = f"transcript:{path.stem}"
        try:
            transcript = load_transcript(path)
        except TranscriptError as exc:
            out.append(Session(stem, "transcript", str(exc), [], skip_reason=str(exc)))
            continue
        head: list[Message] = []
        if transcript.system_prompt is not None:
            head = [{"role": "system", "content": transcript.system_prompt}]
        full = head + transcript.messages
        window, reason = _window_from(full)
        out.append(Session(stem, "transcript", f"all of {path.name}", window, skip_reason=reason))
        users = [i for i, m in enumerate(full) if m.get("role") == "user"]
        if len(users) >= 2:
            cut = users[len(users) // 2]
            window, reason = _window_from(full[: cut + 1])
            out.append(Session(f"{stem}@{cut + 1}", "transcript",
                               f"{path.name} up to message {cut + 1}", window, reason))
    if not out:
        raise FileNotFoundError(f"--hermes-transcripts: no *.jsonl files in {root}")
    return out


def _transcript_turns(path: Path) -> list[list[Message]]:
    turns: list[list[Message]] = [[]]
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("role") == "user" and any(m.get("role") == "assistant" for m in turns[-1]):
            turns.append([])
        turns[-1].append(message)
    return turns


def interleave_transcripts(paths: list[Path], out: Path, block: int = 4) -> Path:
    """Write one session that alternates ``block`` turns of each transcript in ``paths``:
    a multi-topic session built from real ones (no recorded transcript switches topics).
    The topic-routing benchmark and its test use the same session."""
    sessions = [_transcript_turns(p) for p in paths]
    with out.open("w", encoding="utf-8") as fh:
        for i in range(0, max(len(t) for t in sessions), block):
            for turns in sessions:
                for turn in turns[i : i + block]:
                    for message in turn:
                        fh.write(json.dumps(message) + "\n")
    return out
