"""Adversarial sessions: valid windows at the edges — only a system prompt, empty and
``None`` content, list content, calls closed by the sanitiser, a 600 KB output, many
scripts, 1,201 tiny messages, 12 parallel calls."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from hermes_host.messages import repair_tool_pairs
from hermes_host.models import Message
from hermes_host.testing.generate.blocks import _SYSTEM, _Builder, _log_lines
from hermes_host.testing.generate.session import DEFAULT_SEED, Session

__all__ = ["adversarial_sessions"]


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
