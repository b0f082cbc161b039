"""The compact recap shown on resume (R-8.3).

Last 10 turns; user text cut at 300 characters; assistant text at 200 characters or 3 lines;
tool calls and tool results folded into counts (``[3 tool calls: terminal ×2, read_file]``),
so a resumed session is recognisable at a glance without scrolling a transcript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hermes_host.messages import is_summary, one_line, text_of
from hermes_host.models import Message
from hermes_host.store.base import Session

__all__ = ["ASSISTANT_CHARS", "ASSISTANT_LINES", "RECAP_TURNS", "USER_CHARS", "format_recap"]

RECAP_TURNS = 10
USER_CHARS = 300
ASSISTANT_CHARS = 200
ASSISTANT_LINES = 3


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _user_line(message: Message) -> str:
    return one_line(text_of(message), USER_CHARS)


def _assistant_text(message: Message) -> str:
    lines = [ln.rstrip() for ln in text_of(message).strip().splitlines() if ln.strip()]
    shown = "\n".join(lines[:ASSISTANT_LINES])
    cut = _cut(shown, ASSISTANT_CHARS)
    if len(lines) > ASSISTANT_LINES and not cut.endswith("…"):
        cut += " …"
    return cut


def _tool_names(messages: Sequence[Message]) -> Counter[str]:
    names: Counter[str] = Counter()
    for message in messages:
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            names[str(name or "?")] += 1
    return names


def _fold(names: Counter[str], results: int) -> str:
    total = sum(names.values())
    if not total and not results:
        return ""
    parts = [f"{n} ×{c}" if c > 1 else n for n, c in names.most_common()]
    label = f"{total} tool call{'s' if total != 1 else ''}"
    if parts:
        label += ": " + ", ".join(parts)
    if results and results != total:
        label += f"; {results} result{'s' if results != 1 else ''}"
    return f"[{label}]"


def _turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Each turn starts at a user message; anything before the first one is turn 0."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        if (message.get("role") == "user" and not is_summary(message)) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def format_recap(session: Session, window: Sequence[Message]) -> str:
    """Render the recap of ``session`` whose window is ``window``."""
    head = f"Session {session.id}"
    if session.title:
        head += f" “{session.title}”"
    facts = [f"{len(window)} messages in the window"]
    if session.model:
        facts.append(session.model)
    if session.compression_count:
        facts.append(f"compressed {session.compression_count}×")
    lines = [head + " — " + ", ".join(facts)]
    if session.cwd:
        lines.append(f"Working directory: {session.cwd}")
    if session.goal:
        lines.append(f"Goal: {one_line(session.goal, USER_CHARS)}")
    turns = _turns(window)
    shown = turns[-RECAP_TURNS:]
    if len(turns) > len(shown):
        lines.append(f"… {len(turns) - len(shown)} earlier turns not shown")
    for turn in shown:
        for message in turn:
            role = message.get("role")
            if is_summary(message):
                lines.append("  [summary of the earlier conversation]")
            elif role == "user":
                lines.append(f"  user: {_user_line(message)}")
        assistants = [m for m in turn if m.get("role") == "assistant" and not is_summary(m)]
        results = sum(1 for m in turn if m.get("role") == "tool")
        texts = [t for t in (_assistant_text(m) for m in assistants) if t]
        folded = _fold(_tool_names(assistants), results)
        if texts or folded:
            body = texts[-1] if texts else ""
            body = body.replace("\n", "\n             ")
            lines.append("  assistant: " + " ".join(p for p in (body, folded) if p))
    if not turns:
        lines.append("  (no messages yet)")
    return "\n".join(lines)
