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

A tool call's ``arguments`` are bounded the same way (the calls of one message share the
limit): a 20 MB ``write_file`` call made every compression result larger than the cap too.
The excerpt stays JSON when it can — the long string values inside the arguments are cut,
keys, numbers and the call's name stay, so a summariser still reads *what* was called with
*which* path — and is a head-and-tail excerpt of the raw string otherwise (arguments that
are not JSON, or whose bulk is not in strings).  The call's ``id`` never changes: the
tool-call/result pairing holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_host.models import Message
from hermes_host.session.bound import request_budget
from hermes_host.session.excerpts import clip_arguments, excerpt

__all__ = [
    "CHARS_PER_TOKEN",
    "CLIPPED_KEY",
    "MAX_WINDOW_TEXT_CHARS",
    "MIN_WINDOW_TEXT_CHARS",
    "WINDOW_SCOPE",
    "clip",
    "clip_all",
    "restore",
    "text_limit",
]

CLIPPED_KEY = "_clipped"
"""Metadata of a clipped message in the window: the length in characters of what it holds
clipped — the original's text, plus its tool calls' arguments when those are clipped too
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
WINDOW_SCOPE = "this session's window (longer than any request can hold)"
"""What an intake excerpt's note says left the text out."""


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
    excerpt (a string content, or the text parts of a list content, which share ``limit``)
    and its tool calls' arguments bounded the same way (:func:`clip_arguments`; the calls
    share another ``limit``), marked with :data:`CLIPPED_KEY`; ``None`` when nothing needs
    clipping (the common case costs a length check).  Never changes ``message``."""
    new = _clip_content(message, limit)
    calls = _clip_calls(message, limit)
    if calls is None:
        return new
    clipped, total = calls
    if new is None:
        new = dict(message)
        new[CLIPPED_KEY] = 0
    new["tool_calls"] = clipped
    new[CLIPPED_KEY] += total
    return new


def _clip_calls(message: Message, limit: int) -> tuple[list[Any], int] | None:
    """The tool calls of ``message`` with arguments over their share of ``limit`` clipped,
    and the original length of the arguments clipped; ``None`` when they fit."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    at = [j for j, call in enumerate(calls)
          if isinstance(call, dict) and isinstance(call.get("function"), dict)
          and isinstance(call["function"].get("arguments"), str)]
    total = sum(len(calls[j]["function"]["arguments"]) for j in at)
    if total <= limit:
        return None
    share = limit // len(at)
    out: list[Any] = list(calls)
    originals = 0
    for j in at:
        fn = calls[j]["function"]
        if len(fn["arguments"]) > share:
            where = f"the arguments of tool call {calls[j].get('id')}"
            arguments = clip_arguments(fn["arguments"], share, where, WINDOW_SCOPE)
            out[j] = {**calls[j], "function": {**fn, "arguments": arguments}}
            originals += len(fn["arguments"])
    return out, originals


def _clip_content(message: Message, limit: int) -> Message | None:
    content = message.get("content")
    if isinstance(content, str):
        if len(content) <= limit:
            return None
        new = dict(message)
        new["content"] = excerpt(content, limit, _where(message), WINDOW_SCOPE)
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
            parts[j] = {**content[j], "text": excerpt(text, share, _where(message), WINDOW_SCOPE)}
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
        f"{WINDOW_SCOPE}; the store keeps this message whole …]")}
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
