"""Turning user text into safe FTS5 queries (R-13.3).

User text is never passed raw to ``MATCH``: FTS5 syntax (``"``, ``*``, ``NEAR(``, ``OR``,
``-``, ``^``, parentheses, column filters) would either error or change the query's meaning.
Every term becomes a double-quoted FTS5 string with inner quotes doubled, which FTS5 treats as
a literal phrase, so no operator can be injected.
"""

from __future__ import annotations

import re

from hermes_host.store.codec import safe_text

__all__ = ["MAX_QUERY_CHARS", "MAX_TERMS", "clean_query", "porter_query", "trigram_query"]

MAX_QUERY_CHARS = 1_000
"""Longer queries are cut: a 10 KB query is a paste, not a search."""
MAX_TERMS = 16
_WORD = re.compile(r"\w+", re.UNICODE)


def clean_query(query: str) -> str:
    """Bounded, UTF-8-storable, NUL-free text."""
    if not isinstance(query, str):
        query = str(query)
    text = safe_text(query[:MAX_QUERY_CHARS]).replace("\x00", " ")
    return " ".join(text.split())


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def porter_query(query: str, *, any_term: bool = False) -> str | None:
    """An FTS5 expression over the words of ``query`` (all of them, or any with
    ``any_term``); ``None`` when the query has no words."""
    terms: list[str] = []
    for word in _WORD.findall(clean_query(query)):
        if word.lower() not in (t.lower() for t in terms):
            terms.append(word)
        if len(terms) >= MAX_TERMS:
            break
    if not terms:
        return None
    return (" OR " if any_term else " ").join(_quote(t) for t in terms)


def trigram_query(query: str) -> str | None:
    """A literal substring query for the trigram index; ``None`` under 3 characters."""
    text = clean_query(query)[:200]
    if len(text) < 3:
        return None
    return _quote(text)
