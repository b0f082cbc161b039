"""The window's intake bound (issue 31): a text too long for any request is held in the window
as a head-and-tail excerpt, while the store keeps the message whole.

One 50 MB message used to cost 30-39 s and gigabytes of memory on its way through the host
(hashed, counted, frozen, copied and measured again by every engine call), and made the
session uncompressible: every compressed window that kept it was larger than the fence's
result cap (``fence.max_result_bytes``, 16 MiB).  A text that long can never be sent whole —
the request bound (:mod:`hermes_host.session.bound`) would cut it to fit anyway — so the
*normalised window* (what engines, memory providers and requests receive) holds it clipped to
:func:`text_limit` characters, in the same head-and-tail form the request bound uses,
marked with :data:`CLIPPED_KEY`.  The raw window and the store keep the original: a
compression that keeps the clipped message publishes the original row (:func:`restore`), so
nothing is ever lost or rewritten, and ``sessions show``/``export`` print it whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_host.models import Message
from hermes_host.session.bound import excerpt, request_budget

__all__ = [
    "CHARS_PER_TOKEN",
    "CLIPPED_KEY",
    "MAX_WINDOW_TEXT_CHARS",
    "MIN_WINDOW_TEXT_CHARS",
    "clip",
    "clip_all",
    "restore",
    "text_limit",
]

CLIPPED_KEY = "_clipped"
"""Metadata of a clipped message in the window: the original's text length in characters
(a ``_`` key: the wire sanitiser strips it, R-7.5)."""
CHARS_PER_TOKEN = 4
"""Characters per token of ordinary text (a generous figure: tiktoken averages 3-4.5 for
English and code); a text over ``CHARS_PER_TOKEN`` x the request budget cannot fit a request."""
MIN_WINDOW_TEXT_CHARS = 256 * 1024
"""The window never clips a text shorter than this (a small test window's request bound
still condenses what it must, as before)."""
MAX_WINDOW_TEXT_CHARS = 1024 * 1024
"""Nor keeps one longer than this, however large the model's window: it bounds the host's
time and memory per message, and keeps a window that holds several well under the result cap."""
_SCOPE = "this session's window (longer than any request can hold)"


def text_limit(context_length: int, max_output_tokens: int, result_cap: int) -> int:
    """The longest text (characters) the window holds whole: ``CHARS_PER_TOKEN`` x the request
    budget, within ``[MIN_WINDOW_TEXT_CHARS, MAX_WINDOW_TEXT_CHARS]``, and at most a quarter
    of ``result_cap`` (``fence.max_result_bytes``), so a compressed window keeping it stays
    under the cap."""
    budget = request_budget(context_length, max_output_tokens)
    limit = min(MAX_WINDOW_TEXT_CHARS, max(MIN_WINDOW_TEXT_CHARS, CHARS_PER_TOKEN * budget))
    return max(1024, min(limit, result_cap // 4))


def _where(message: Message) -> str:
    call = message.get("tool_call_id")
    if message.get("role") == "tool" and isinstance(call, str) and call:
        return f"this output (tool call {call})"
    return "this message"


def clip(message: Message, limit: int) -> Message | None:
    """``message`` with each text longer than its share of ``limit`` cut to a head-and-tail
    excerpt (a string content, or the text parts of a list content, which share ``limit``),
    marked with :data:`CLIPPED_KEY`; ``None`` when nothing needs clipping (the common case
    costs a length check).  Never changes ``message``."""
    content = message.get("content")
    if isinstance(content, str):
        if len(content) <= limit:
            return None
        new = dict(message)
        new["content"] = excerpt(content, limit, _where(message), _SCOPE)
        new[CLIPPED_KEY] = len(content)
        return new
    if not isinstance(content, list):
        return None
    texts = [j for j, part in enumerate(content)
             if isinstance(part, dict) and isinstance(part.get("text"), str)]
    total = sum(len(content[j]["text"]) for j in texts)
    if total <= limit:
        return None
    share = limit // len(texts)
    parts: list[Any] = list(content)
    for j in texts:
        text = content[j]["text"]
        if len(text) > share:
            parts[j] = {**content[j], "text": excerpt(text, share, _where(message), _SCOPE)}
    if sum(len(parts[j]["text"]) for j in texts) > limit:
        parts = _thin(parts, texts, limit, total)
    new = dict(message)
    new["content"] = parts
    new[CLIPPED_KEY] = total
    return new


def _thin(parts: list[Any], texts: list[int], limit: int, total: int) -> list[Any]:
    """Many text parts, each short, together over ``limit``: keep the first ones up to 40 %
    of it and the last up to 60 %, and one note in place of the text parts in between (other
    parts stay where they are)."""
    head, tail, used = set(), set(), 0
    for j in texts:
        if used + len(parts[j]["text"]) > limit * 2 // 5:
            break
        head.add(j)
        used += len(parts[j]["text"])
    for j in reversed(texts):
        if j in head or used + len(parts[j]["text"]) > limit:
            break
        tail.add(j)
        used += len(parts[j]["text"])
    dropped = [j for j in texts if j not in head and j not in tail]
    note = {"type": "text", "text": (
        f"[… {len(dropped):,} text parts ({total - used:,} of {total:,} characters) left out of "
        f"{_SCOPE}; the store keeps this message whole …]")}
    gone = set(dropped)
    out: list[Any] = []
    for j, part in enumerate(parts):
        if j == dropped[0]:
            out.append(note)
        if j not in gone:
            out.append(part)
    return out


def clip_all(messages: Sequence[Message], limit: int) -> tuple[list[Message], list[int]]:
    """``messages`` with :func:`clip` applied, and the indexes of those it clipped."""
    out = list(messages)
    clipped: list[int] = []
    for i, message in enumerate(out):
        new = clip(message, limit)
        if new is not None:
            out[i] = new
            clipped.append(i)
    return out, clipped


def restore(messages: Sequence[Message], pairs: Sequence[tuple[Message, Message]]) -> list[Message]:
    """``messages`` (an engine's proposal) with every clipped message the window held,
    unchanged, replaced by its original (``pairs``: ``(clipped, original)``): the publish
    then keeps the stored row as it is instead of writing the excerpt over it.  A clipped
    message an engine changed stays as the engine wrote it."""
    if not pairs:
        return list(messages)
    out = list(messages)
    for i, message in enumerate(out):
        if CLIPPED_KEY not in message:
            continue
        for clipped, original in pairs:
            if clipped is message or clipped == message:
                out[i] = original
                break
    return out
