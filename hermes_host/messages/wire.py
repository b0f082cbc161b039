"""Making a window sendable: :func:`sanitize_for_wire` strips top-level ``_`` keys
(R-7.5), :func:`repair_tool_pairs` closes or drops orphan pairs (R-6.9), and
:func:`normalize_alternation` merges adjacent same-role messages as real transcripts need."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hermes_host.messages.reading import DANGLING_RESULT, copy_data, text_of, tool_call_ids
from hermes_host.models import _SHARED_MESSAGE_TYPES, Message


def wire_form(message: Message) -> Message | None:
    """The wire form of one read-only message (R-7.5), shared instead of copied (issue 32):
    the message itself when it has no top-level ``_`` key, else a read-only copy without them
    (its values shared).  ``None`` for a mutable message, whose wire form must be a copy."""
    kind = type(message)
    if kind not in _SHARED_MESSAGE_TYPES:
        return None
    if not any(k.startswith("_") for k in message):
        return message
    return kind({k: v for k, v in message.items() if not k.startswith("_")})


def sanitize_for_wire(messages: Iterable[Message]) -> list[Message]:
    """``messages`` with every top-level key starting with ``_`` removed (R-7.5): a copy of
    each mutable message; a read-only one (the window's, the fence's) is shared as it is, or
    as a read-only copy when it has ``_`` keys (:func:`wire_form`)."""
    out: list[Message] = []
    for m in messages:
        form = wire_form(m)
        out.append(form if form is not None else {
            k: copy_data(v) for k, v in m.items() if not (isinstance(k, str) and k.startswith("_"))
        })
    return out


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
