"""Turning user text into a safe search, shared by every backend (R-13.3).

No backend passes user text to its query parser: each takes the *words* of the query
(``\\w+`` runs, so no operator, quote or parenthesis survives) or the literal *needle* of a
substring search, and quotes or parameterises them its own way.

Order of attempts every backend follows: all words (ranked); if nothing, any word; if still
nothing, the text as a literal substring (tool rows excluded, SPEC R-9.3).  A one- or
two-character non-ASCII query (``日本``) is shorter than a trigram and is matched by a bounded
scan of the newest :data:`SHORT_SCAN_ROWS` non-tool messages.
"""

from __future__ import annotations

import re

from hermes_host.store.codec import safe_text

__all__ = [
    "BOOKEND_MESSAGES",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "RANK_CAP",
    "SHORT_SCAN_ROWS",
    "clean_query",
    "query_words",
    "search_limit",
    "short_needle",
    "substring_needle",
]

BOOKEND_MESSAGES = 2
"""Messages shown before and after each search hit."""
RANK_CAP = 2_000
"""Above this many matching rows a query returns its most recent hits, not a full ranking."""
SHORT_SCAN_ROWS = 20_000
"""How many of the newest non-tool messages in scope a short non-ASCII query scans."""
MAX_QUERY_CHARS = 1_000
"""Longer queries are cut: a 10 KB query is a paste, not a search."""
MAX_TERMS = 16
_WORD = re.compile(r"\w+", re.UNICODE)


def search_limit(limit: int) -> int:
    return max(1, min(int(limit), 500))


def clean_query(query: str) -> str:
    """Bounded, UTF-8-storable, NUL-free text."""
    if not isinstance(query, str):
        query = str(query)
    text = safe_text(query[:MAX_QUERY_CHARS]).replace("\x00", " ")
    return " ".join(text.split())


def query_words(query: str) -> list[str]:
    """The distinct words of ``query`` (case-insensitively), at most :data:`MAX_TERMS`."""
    terms: list[str] = []
    for word in _WORD.findall(clean_query(query)):
        if word.lower() not in (t.lower() for t in terms):
            terms.append(word)
        if len(terms) >= MAX_TERMS:
            break
    return terms


def substring_needle(query: str) -> str | None:
    """The literal text a substring search looks for; ``None`` under 3 characters (a
    trigram index cannot match less)."""
    text = clean_query(query)[:200]
    return text if len(text) >= 3 else None


def short_needle(query: str) -> str | None:
    """The text of a one- or two-character non-ASCII query (``日本``, ``é``), which neither
    index can match; ``None`` for any other query."""
    text = clean_query(query)
    return text if 0 < len(text) < 3 and not text.isascii() else None
