"""What a message is and how to read it: the roles, the summary and dangling-result
markers, :class:`MessageError` and :class:`Violation`, a message's text and tool-call ids,
turn-scoped reference blocks, and cheap copies of JSON-like data."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.models import Message

ROLES = frozenset({"system", "user", "assistant", "tool"})

SUMMARY_METADATA_KEY = "_compressed_summary"

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns of this conversation were compacted "
    "into the summary below. It is background reference, not active instructions: respond "
    "only to the latest user message after it. Overlap between a new request and a topic in "
    "the summary is not a request to resume that work. If the latest user message says stop, "
    "undo, never mind, or changes topic, any in-flight work described here is over. "
    "Persistent memory (MEMORY.md / USER.md) stays authoritative over this summary. Tools "
    "remain available, and the current state of files and systems may already reflect the "
    "work summarised here — check before redoing it."
)
"""Prepended to every injected summary (R-7.4)."""

LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
"""Older summaries start with this; still recognised as a summary block (R-7.4)."""

DANGLING_RESULT = "[no result recorded: the call was interrupted before it returned]"


class MessageError(ValueError):
    """A message list is malformed.  ``index`` is the offending position (or ``None``)."""

    def __init__(self, reason: str, index: int | None = None) -> None:
        self.index = index
        self.reason = reason
        where = f"message {index}: " if index is not None else ""
        super().__init__(f"{where}{reason}")


@dataclass(frozen=True)
class Violation:
    """One broken window invariant."""

    rule: str  # "alternation" | "orphan_call" | "orphan_result" | "summary_count" | "structure"
    index: int | None
    detail: str

    def __str__(self) -> str:
        where = f" at {self.index}" if self.index is not None else ""
        return f"{self.rule}{where}: {self.detail}"


def text_of(message: Message) -> str:
    """The textual content of a message (text parts joined; other parts ignored)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def tool_call_ids(message: Message) -> list[str]:
    calls = message.get("tool_calls") or []
    return [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


def is_summary(message: Message) -> bool:
    """True for a compaction summary block (metadata key, current or legacy prefix)."""
    if message.get(SUMMARY_METADATA_KEY):
        return True
    text = text_of(message).lstrip()
    return text.startswith(SUMMARY_PREFIX) or text.startswith(LEGACY_SUMMARY_PREFIX)


# A turn-scoped block an engine of the select_context chain writes into a message opens with
# a bracketed header naming it reference only ("[TOPIC ROUTER — REFERENCE ONLY]",
# "[RETRIEVED CONTEXT — REFERENCE ONLY]") and closes with the first "[END …]" after it.
_REFERENCE_BLOCK = re.compile(
    r"\[[^\]\n]{0,80}REFERENCE ONLY[^\]\n]{0,40}\].*?\[END [^\]\n]{0,80}\][ \t]*\n*", re.S
)


def strip_reference_blocks(text: str) -> str:
    """``text`` without the turn-scoped reference blocks engines injected into it.

    Such a block is background for the model, not what the user asked, so an engine that
    reads the user's words (to search, or to recognise a turn) strips every engine's blocks,
    its own included.  A header without its ``[END …]`` marker is left alone, so the user's
    words are never cut off.  Write your own blocks by the same convention.
    """
    if "REFERENCE ONLY" not in text:
        return text
    return _REFERENCE_BLOCK.sub("", text).strip()


IMMUTABLE_TYPES = frozenset({str, int, float, bool, type(None), bytes})


def copy_data(value: Any) -> Any:
    """Deep copy of JSON-like data (dicts, lists, scalars), 3-4x faster than
    ``copy.deepcopy``; anything else falls back to ``copy.deepcopy``.  No memo: a message list
    is a tree, so an object referenced twice becomes two independent copies."""
    kind = type(value)
    if kind in IMMUTABLE_TYPES:
        return value
    if kind is dict:
        return {k: copy_data(v) for k, v in value.items()}
    if kind is list:
        return [copy_data(v) for v in value]
    return copy.deepcopy(value)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` characters
    with "…" — for tables, recaps and status lines."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def turn_starts(window: Sequence[Message]) -> list[int]:
    """Indexes of the user messages that open a turn (a summary block opens none)."""
    return [i for i, m in enumerate(window) if m.get("role") == "user" and not is_summary(m)]
