"""OpenAI-format message lists: validation, invariants, and the sanitisers.

* :func:`validate_messages` — structure (roles, content types, ``tool_calls`` ids); raises
  :class:`MessageError` naming the index and the reason.
* :func:`check_invariants` — the window rules every engine result must obey: role alternation
  (R-1.4), tool call/result pairing (R-6.9), at most one summary block (R-6.6).  Returns a
  list of :class:`Violation` (empty = valid).
* :func:`sanitize_for_wire` — strips every top-level ``_`` key (R-7.5).
* :func:`repair_tool_pairs` — the orphan-pair sanitiser, the last line of defence (R-6.9).
* :func:`normalize_alternation` — merges adjacent user / adjacent assistant messages, as real
  transcripts (aider console lines, interrupted Claude Code turns) need before they are sent.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.models import Message

__all__ = [
    "IMMUTABLE_TYPES",
    "LEGACY_SUMMARY_PREFIX",
    "MERGED_SEGMENTS_KEY",
    "ROLES",
    "SUMMARY_METADATA_KEY",
    "SUMMARY_PREFIX",
    "MessageError",
    "Violation",
    "as_parts",
    "check_invariants",
    "copy_data",
    "is_summary",
    "normalize_alternation",
    "one_line",
    "repair_tool_pairs",
    "sanitize_for_wire",
    "segments_of",
    "strip_reference_blocks",
    "text_of",
    "tool_call_ids",
    "turn_starts",
    "validate_messages",
]

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


def _validate_one(message: Any, index: int) -> None:
    if not isinstance(message, dict):
        raise MessageError(f"expected an object, got {type(message).__name__}", index)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:  # an unhashable role must not raise
        raise MessageError(
            f"unknown role {role!r}; allowed: {', '.join(sorted(ROLES))}", index
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise MessageError(
            f"content must be a string, a list of parts or null, not {type(content).__name__}",
            index,
        )
    if isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise MessageError(f"content part {j} must be an object with a 'type'", index)
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise MessageError("only assistant messages may carry tool_calls", index)
        if not isinstance(calls, list):
            raise MessageError("tool_calls must be a list", index)
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
                raise MessageError(f"tool_calls[{j}] needs a non-empty string 'id'", index)
            fn = call.get("function")
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise MessageError(f"tool_calls[{j}].function needs a string 'name'", index)
            if not isinstance(fn.get("arguments", ""), str):
                raise MessageError(f"tool_calls[{j}].function.arguments must be a string", index)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise MessageError("a tool message needs a string 'tool_call_id'", index)


def validate_messages(messages: Any) -> None:
    """Raise :class:`MessageError` if ``messages`` is not a structurally valid message list."""
    if not isinstance(messages, list):
        raise MessageError(f"expected a list of messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        _validate_one(message, i)


def check_invariants(messages: Sequence[Message], *, max_summaries: int = 1) -> list[Violation]:
    """Every broken window invariant of ``messages`` (empty list = valid).

    Alternation (R-1.4): no two consecutive ``user`` or two consecutive ``assistant``
    messages; ``system`` may only open the list.  Pairing (R-6.9): every assistant tool call
    is answered by a ``tool`` message right after it (before the next non-tool message), and
    every ``tool`` message answers such a call.  Summaries (R-6.6): at most ``max_summaries``.
    """
    violations: list[Violation] = []
    try:
        validate_messages(list(messages))
    except MessageError as exc:
        return [Violation("structure", exc.index, exc.reason)]

    previous_role: str | None = None
    pending: dict[str, int] = {}  # open call id -> index of its assistant message
    summaries = 0
    for i, message in enumerate(messages):
        role = message["role"]
        if is_summary(message):
            summaries += 1
        if role != "tool" and pending:
            for call_id, at in pending.items():
                violations.append(
                    Violation("orphan_call", at, f"tool call {call_id!r} has no result")
                )
            pending = {}
        if role == "system":
            if i != 0:
                violations.append(Violation("alternation", i, "system message after the start"))
        elif role == "tool":
            answered = message.get("tool_call_id")
            if answered in pending:
                del pending[answered]
            else:
                violations.append(
                    Violation("orphan_result", i, f"tool result {answered!r} answers no open call")
                )
        elif role in ("user", "assistant") and previous_role == role:
            violations.append(Violation("alternation", i, f"two consecutive {role} messages"))
        if role == "assistant":
            for call_id in tool_call_ids(message):
                pending[call_id] = i
        previous_role = role
    for call_id, at in pending.items():
        violations.append(Violation("orphan_call", at, f"tool call {call_id!r} has no result"))
    if summaries > max_summaries:
        violations.append(
            Violation(
                "summary_count", None, f"{summaries} summary blocks (at most {max_summaries})"
            )
        )
    return violations


def sanitize_for_wire(messages: Iterable[Message]) -> list[Message]:
    """A copy of ``messages`` with every top-level key starting with ``_`` removed (R-7.5)."""
    return [
        {
            k: copy_data(v)
            for k, v in m.items()
            if not (isinstance(k, str) and k.startswith("_"))
        }
        for m in messages
    ]


def repair_tool_pairs(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Close every orphan pair (R-6.9); returns the repaired copy and how many fixes it made.

    A ``tool`` result whose call is not open is dropped.  A call left without a result gets a
    short result saying it was interrupted, placed right after its group, so providers accept
    the list.  Alignment (R-6.3) should make this unnecessary; this is the last defence.
    """
    out: list[Message] = []
    fixes = 0
    pending: list[str] = []

    def close_pending() -> None:
        nonlocal fixes
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": DANGLING_RESULT})
            fixes += 1
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
                out.append(copy_data(message))
            else:
                fixes += 1
            continue
        close_pending()
        out.append(copy_data(message))
        if role == "assistant":
            pending.extend(tool_call_ids(message))
    close_pending()
    return out, fixes


def as_parts(content: Any) -> list[dict[str, Any]]:
    """``content`` as a fresh list of content parts (a string becomes one text part)."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [copy_data(p) for p in content]


MERGED_SEGMENTS_KEY = "_merged_segments"
"""Private key on a message :func:`normalize_alternation` merged from string contents: the
lengths of the texts it joined (with ``"\n\n"``), so a reader can tell a platform injection
from the real request glued after it (stripped on the wire like every ``_`` key)."""


def segments_of(message: Message) -> list[str]:
    """The texts a merged message was joined from, or its whole text when it was not merged
    (or the record does not match its content any more)."""
    text = text_of(message)
    lengths = message.get(MERGED_SEGMENTS_KEY)
    content = message.get("content")
    if (
        isinstance(content, str)
        and isinstance(lengths, list)
        and len(lengths) > 1
        and all(isinstance(n, int) and n >= 0 for n in lengths)
        and sum(lengths) + 2 * (len(lengths) - 1) == len(content)
    ):
        out, at = [], 0
        for n in lengths:
            out.append(content[at:at + n])
            at += n + 2
        return out
    return [text]


def _segment_lengths(message: Message) -> list[int]:
    content = message.get("content")
    recorded = message.get(MERGED_SEGMENTS_KEY)
    if isinstance(content, str) and len(segments_of(message)) > 1 and isinstance(recorded, list):
        return list(recorded)
    return [len(content)] if isinstance(content, str) and content else []


def _merge_content(a: Any, b: Any) -> Any:
    if (a is None or isinstance(a, str)) and (b is None or isinstance(b, str)):
        texts = [t for t in (a, b) if t]
        if not texts:  # keep null content null: some gateways reject an empty text block
            return a if a is not None else b
        return "\n\n".join(texts)
    return as_parts(a) + as_parts(b)


def normalize_alternation(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Merge adjacent ``user`` or adjacent ``assistant`` messages; returns (copy, merges).

    An assistant message with ``tool_calls`` merges with a *preceding* assistant message only
    (text first, then the calls), so a call always stays right before its results.  Run
    :func:`repair_tool_pairs` first so that no unanswered call blocks a merge.
    """
    out: list[Message] = []
    merges = 0
    for message in messages:
        role = message.get("role")
        prev = out[-1] if out else None
        if (
            prev is not None
            and role in ("user", "assistant")
            and prev.get("role") == role
            and not prev.get("tool_calls")
        ):
            merged = {k: v for k, v in prev.items() if not k.startswith("_")}
            merged["content"] = _merge_content(prev.get("content"), message.get("content"))
            lengths = _segment_lengths(prev) + _segment_lengths(message)
            if message.get("tool_calls"):
                merged["tool_calls"] = copy_data(message["tool_calls"])
            for key, value in message.items():
                if key.startswith("_") and key not in merged:
                    merged[key] = copy_data(value)
            for key, value in prev.items():
                if key.startswith("_"):
                    merged[key] = value
            if isinstance(merged["content"], str) and len(lengths) > 1:
                merged[MERGED_SEGMENTS_KEY] = lengths
            else:
                merged.pop(MERGED_SEGMENTS_KEY, None)
            out[-1] = merged
            merges += 1
            continue
        out.append(copy_data(message))
    return out, merges
