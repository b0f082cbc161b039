"""Where a search hit matched, and a snippet around it (issue 30).

The store finds a message by its words (stemmed), by a literal substring or by a short
non-ASCII needle; it says *which* message, not where in it.  :func:`find_matches` finds the
spans of the hit's text the query matched — the literal query first, then each of its words,
then a word's stem at the start of a word (``running`` finds ``run``) — and :func:`snippet`
cuts a one-line excerpt around the first of them, with the offsets of every match it shows.
A hit the index found through its tool call or tool name has no span in its text: the
snippet is then the text's beginning, with no match in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hermes_host.store.query import clean_query, query_words

__all__ = ["MAX_MATCHES", "SNIPPET_CHARS", "Snippet", "find_matches", "highlight", "snippet"]

SNIPPET_CHARS = 160
"""The length a snippet aims at (its matches are never cut)."""
MAX_MATCHES = 100
"""At most this many match offsets are reported per hit."""
_BEFORE = 50
"""Characters of context kept before the first match."""


@dataclass(frozen=True)
class Snippet:
    """A one-line excerpt of a hit's text (whitespace runs made one space)."""

    text: str
    matches: list[tuple[int, int]] = field(default_factory=list)
    """``(start, end)`` of each match within :attr:`text`."""
    start: int = 0
    """Offset in the hit's text where the excerpt begins (before any leading "…")."""


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged[:MAX_MATCHES]


def _spans(pattern: str, text: str) -> list[tuple[int, int]]:
    found = []
    for m in re.finditer(pattern, text, re.IGNORECASE):
        if m.end() > m.start():
            found.append((m.start(), m.end()))
        if len(found) >= MAX_MATCHES:
            break
    return found


def find_matches(text: str, query: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets in ``text`` of what ``query`` matched, in order, merged."""
    needle = clean_query(query)
    if not text or not needle:
        return []
    spans = _spans(re.escape(needle).replace(r"\ ", r"\s+"), text)
    if spans:
        return _merge(spans)
    words = query_words(query)
    for word in words:
        spans += _spans(re.escape(word), text)
    if spans:
        return _merge(spans)
    for word in words:  # the porter index matches stems: "running" finds "run", "runs"
        for cut in range(len(word) - 1, 2, -1):  # the longest prefix found at a word start
            found = _spans(r"(?<!\w)" + re.escape(word[:cut]) + r"\w*", text)
            if found:
                spans += found
                break
    return _merge(spans)


def snippet(text: str, matches: list[tuple[int, int]], width: int = SNIPPET_CHARS) -> Snippet:
    """An excerpt of ``text`` of about ``width`` characters around the first match (the
    beginning when there is none), on one line, "…" where it was cut."""
    if matches:
        first_start, first_end = matches[0]
        start = max(0, first_start - _BEFORE)
        end = max(first_end, start + width)
    else:
        start, end = 0, width
        first_start = 0
    end = min(len(text), end)
    if start > 0:  # begin at a word
        space = text.find(" ", start, first_start)
        if space != -1 and space - start < 15:
            start = space + 1
    if end < len(text):  # end at a word, never inside a match
        space = text.rfind(" ", start, end)
        inside = any(s < end <= e for s, e in matches)
        if space != -1 and end - space < 15 and not any(s < space < e for s, e in matches):
            end = space
        elif inside:
            end = next(e for s, e in matches if s < end <= e)
    out: list[str] = []
    index: dict[int, int] = {}  # text offset -> excerpt offset
    prefix = "…" if start > 0 else ""
    out.append(prefix)
    pos = len(prefix)
    last_space = True
    for i in range(start, end):
        ch = text[i]
        index[i] = pos
        if ch.isspace():
            if last_space:
                continue
            ch = " "
            last_space = True
        else:
            last_space = False
        out.append(ch)
        pos += 1
    index[end] = pos
    body = "".join(out).rstrip()
    shown = []
    for s, e in matches:
        if s >= start and e <= end:
            shown.append((index[s], min(index[e], len(body))))
    if end < len(text):
        body += "…"
    return Snippet(body, shown, start)


def highlight(text: str, matches: list[tuple[int, int]], left: str = "«",
              right: str = "»") -> str:
    """``text`` with each match between ``left`` and ``right``."""
    parts: list[str] = []
    cursor = 0
    for start, end in matches:
        parts += [text[cursor:start], left, text[start:end], right]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)
