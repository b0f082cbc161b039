"""Head-and-tail excerpts of long texts and of tool-call arguments, shared by the window's
intake bound (:mod:`hermes_host.session.intake`, issue 31) and the request bound
(:mod:`hermes_host.session.bound`, issue 28): a text keeps its beginning and its newest
lines, with a note in the cut saying how much was left out, by what, and that the store keeps
the original whole."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_JSON_ITEMS", "MIN_EXCERPT_CHARS", "clip_arguments", "excerpt"]

MIN_EXCERPT_CHARS = 400
"""An excerpt keeps at least this many characters of its text (head and tail together)."""
_HEAD_SHARE = 0.4  # of an excerpt, the head's share; the tail (the newest lines) gets the rest
MAX_JSON_ITEMS = 100_000
"""Arguments with more JSON separators than this are excerpted as a raw string, not decoded:
decoding millions of small values would cost more time and memory than the bound saves."""


def excerpt(text: str, keep: int, where: str, scope: str) -> str:
    """``text`` cut to a head-and-tail excerpt of about ``keep`` characters (at least
    :data:`MIN_EXCERPT_CHARS`), with a note in the cut saying how much of it ``scope`` left
    out and that the store keeps ``where`` (the original) whole; ``text`` itself when it is
    short enough.  The request bound and the window's intake clip (issue 31) share it."""
    keep = max(MIN_EXCERPT_CHARS, keep)
    if len(text) <= keep:
        return text
    head = int(keep * _HEAD_SHARE)
    tail = keep - head
    omitted = len(text) - keep
    note = (
        f"\n[… {omitted:,} of {len(text):,} characters left out of {scope}; the store "
        f"keeps {where} whole …]\n"
    )
    return text[:head] + note + text[-tail:]


def clip_arguments(arguments: str, keep: int, where: str, scope: str, *,
                   floor: bool = False) -> str:
    """Tool-call ``arguments`` cut to about ``keep`` characters.  JSON arguments stay JSON:
    string values (never keys) longer than a common cap are cut to head-and-tail excerpts,
    the cap chosen so the re-encoded arguments fit ``keep``.  Arguments that are not JSON,
    hold more than :data:`MAX_JSON_ITEMS` values, or still do not fit (their bulk is not in
    strings) get a head-and-tail excerpt of the raw string (no longer JSON).  ``scope`` is
    what the excerpts' notes say left the text out (the window's intake, or the request
    bound).  With ``floor``, JSON whose long strings can be cut stays JSON even when
    ``keep`` is less than its shortest such form (each long string cut to
    :data:`MIN_EXCERPT_CHARS`), which is returned then: the request bound prefers a few
    hundred characters more to arguments a framework cannot parse."""
    if len(arguments) <= keep:
        return arguments
    # the room an excerpt's note takes (JSON-escaped), kept out of each cut string's share
    note = len(json.dumps(excerpt("x" * len(arguments), MIN_EXCERPT_CHARS, where, scope)))
    note -= MIN_EXCERPT_CHARS
    if arguments.count(",") + arguments.count(":") <= MAX_JSON_ITEMS:
        try:
            decoded = json.loads(arguments)
            room, best = keep, arguments
            for _ in range(3):  # an excerpt's head and tail may escape more than its average
                shorter = _clip_strings(decoded, room, note, where, scope, floor)
                if shorter is None:
                    break
                text = json.dumps(shorter, ensure_ascii=False)
                if len(text) <= keep + note:
                    return text
                best = min(best, text, key=len)
                room = room * keep // len(text)
            if floor and best is not arguments:
                return best
        except (ValueError, RecursionError):
            pass
    return excerpt(arguments, keep, where, scope)


def _clip_strings(value: Any, keep: int, note: int, where: str, scope: str,
                  floor: bool = False) -> Any:
    """``value`` (decoded JSON) with its string values over a cap cut to excerpts, the cap
    (in encoded characters: a newline is two) the largest whose total fits ``keep`` less the
    rest of the encoding; ``None`` when no string carries the bulk (cutting them cannot make
    it fit).  With ``floor``, a cap under :data:`MIN_EXCERPT_CHARS` is raised to it (the
    strings an excerpt would not shorten stay whole)."""
    lengths: list[int] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            lengths.append(_encoded(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    room = keep - (len(json.dumps(value, ensure_ascii=False)) - sum(lengths))
    if not lengths or (room <= 0 and not floor):
        return None
    cap = _cap(sorted(lengths), max(0, room), note, floor)
    if cap is None:
        return None

    def cut(item: Any) -> Any:
        if isinstance(item, str):
            size = _encoded(item)
            if size <= cap:
                return item
            short = excerpt(item, max(MIN_EXCERPT_CHARS, cap * len(item) // size), where,
                            scope)
            return short if not floor or _encoded(short) < size else item
        if isinstance(item, dict):
            return {k: cut(v) for k, v in item.items()}
        if isinstance(item, list):
            return [cut(v) for v in item]
        return item

    return cut(value)


def _encoded(text: str) -> int:
    """Characters ``text`` takes in JSON (without its quotes)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def _cap(lengths: list[int], room: int, note: int, floor: bool = False) -> int | None:
    """The largest cap ``c`` (at least ``MIN_EXCERPT_CHARS``) such that the strings of
    ``lengths`` (ascending), each longer one cut to ``c`` plus a ``note``, fit ``room``
    (with ``floor``, ``MIN_EXCERPT_CHARS`` when none does)."""
    used = 0
    for i, length in enumerate(lengths):
        left = len(lengths) - i
        cap = (room - used) // left - note
        if length <= cap:
            used += length
            continue
        if cap >= MIN_EXCERPT_CHARS:
            return cap
        return MIN_EXCERPT_CHARS if floor else None
    return None  # everything fits whole: the bulk is not in strings
