"""``session_search`` over the two FTS5 indexes, with bookends and no LLM call (R-13.3).

User text is never passed raw to ``MATCH``: FTS5 syntax (``"``, ``*``, ``NEAR(``, ``OR``,
``-``, ``^``, parentheses, column filters) would either error or change the query's meaning.
Every term becomes a double-quoted FTS5 string with inner quotes doubled, which FTS5 treats as
a literal phrase, so no operator can be injected.

Order of attempts: all words (porter, BM25); if nothing, any word; if still nothing, the
text as a literal substring (trigram).  Each hit comes with the messages just before and
after it in its session (the goal → hit → conclusion bookends).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from hermes_host.store.base import SearchHit, StoredMessage
from hermes_host.store.codec import STORED_COLUMNS, safe_text, stored_from_row

__all__ = [
    "BOOKEND_MESSAGES",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "RANK_CAP",
    "clean_query",
    "porter_query",
    "run_search",
    "trigram_query",
]

BOOKEND_MESSAGES = 2
"""Messages shown before and after each search hit."""
RANK_CAP = 2_000
"""Above this many matching rows a query returns its most recent hits (see :func:`match`)."""

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


def scope_range(conn: sqlite3.Connection, scope: list[str]) -> tuple[int, int] | None:
    """The id range that holds every message of the scope's sessions (each bound is an
    indexed min/max lookup).  FTS5 seeks a rowid range directly, so a session search
    never walks the posting lists of the whole store."""
    lows, highs = [], []
    for session_id in scope:
        low, high = conn.execute(
            "SELECT min(id), max(id) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()
        if low is not None:
            lows.append(low)
            highs.append(high)
    return (min(lows), max(highs)) if lows else None


def match(
    conn: sqlite3.Connection, table: str, expression: str, scope: list[str] | None, limit: int
) -> list[tuple[int, float]]:
    """Top hits of one FTS expression.  BM25 ranking costs time per matching row, so a
    term matching more than ``RANK_CAP`` rows is answered with its most recent hits
    instead (still BM25-scored, never a scan of the whole posting list)."""
    where = f"{table} MATCH ?"
    params: list[Any] = [expression]
    join = ""
    if scope is not None:
        bounds = scope_range(conn, scope)
        if bounds is None:
            return []
        where += f" AND {table}.rowid BETWEEN ? AND ?"
        params += list(bounds)
    try:
        matching = conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {where} LIMIT ?)",
            [*params, RANK_CAP + 1],
        ).fetchone()[0]
        if not matching:
            return []
        order = f"{table}.rank" if matching <= RANK_CAP else f"{table}.rowid DESC"
        if scope is not None:
            join = f"JOIN messages m ON m.id = {table}.rowid "
            where += f" AND m.session_id IN ({', '.join('?' * len(scope))})"
            params += scope
        sql = (
            f"SELECT {table}.rowid, {table}.rank FROM {table} {join}"
            f"WHERE {where} ORDER BY {order} LIMIT ?"
        )
        return [(int(r[0]), float(r[1])) for r in conn.execute(sql, [*params, limit])]
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc).lower():  # defensive: quoting should make this unreachable
            return []
        raise


def bookends(
    conn: sqlite3.Connection, session_id: str, message_id: int, count: int
) -> tuple[list[StoredMessage], list[StoredMessage]]:
    before = conn.execute(
        f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ? AND id < ? "
        "ORDER BY id DESC LIMIT ?",
        (session_id, message_id, count),
    ).fetchall()
    after = conn.execute(
        f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ? AND id > ? "
        "ORDER BY id LIMIT ?",
        (session_id, message_id, count),
    ).fetchall()
    return [stored_from_row(r) for r in reversed(before)], [stored_from_row(r) for r in after]


def run_search(
    conn: sqlite3.Connection,
    query: str,
    scope: list[str] | None,
    limit: int,
    bookend_count: int = BOOKEND_MESSAGES,
) -> list[SearchHit]:
    """Hits for ``query`` within ``scope`` (session ids; ``None`` = the whole store)."""
    limit = max(1, min(int(limit), 500))
    ranked: dict[int, float] = {}
    words = porter_query(query)
    if words is not None:
        found = match(conn, "messages_fts", words, scope, limit)
        if not found:
            any_words = porter_query(query, any_term=True)
            if any_words != words and any_words is not None:
                found = match(conn, "messages_fts", any_words, scope, limit)
        ranked.update(found)
    substring = trigram_query(query)
    # The substring index answers what words cannot (partial identifiers, CJK, paths).
    # A long trigram phrase intersects many posting lists, so it runs only when the word
    # index found nothing — a word hit is the better answer anyway.
    if substring is not None and not ranked:
        for rowid, score in match(conn, "messages_fts_trigram", substring, scope, limit):
            if rowid not in ranked and len(ranked) < limit:
                ranked[rowid] = 1000.0 + score  # after every porter hit, in trigram order
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    rows: dict[int, Any] = {
        r[0]: r
        for r in conn.execute(
            "SELECT id, session_id, role, content, active, timestamp FROM messages "
            f"WHERE id IN ({marks})",
            list(ranked),
        )
    }
    hits: list[SearchHit] = []
    for rowid, score in sorted(ranked.items(), key=lambda kv: kv[1]):
        row = rows.get(rowid)
        if row is None:
            continue
        before, after = bookends(conn, row[1], rowid, max(0, int(bookend_count)))
        hits.append(
            SearchHit(
                message_id=rowid,
                session_id=row[1],
                role=row[2],
                content=row[3] or "",
                score=score,
                active=bool(row[4]),
                timestamp=row[5],
                before=before,
                after=after,
            )
        )
    return hits
