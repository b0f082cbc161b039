"""SQLite's ``session_search`` over the two FTS5 indexes, with bookends and no LLM call (R-13.3).

User text is never passed raw to ``MATCH``: FTS5 syntax (``"``, ``*``, ``NEAR(``, ``OR``,
``-``, ``^``, parentheses, column filters) would either error or change the query's meaning.
Every term becomes a double-quoted FTS5 string with inner quotes doubled, which FTS5 treats as
a literal phrase, so no operator can be injected.

Order of attempts: all words (porter, BM25); if nothing, any word; if still nothing, the
text as a literal substring (trigram).  A query of one or two non-ASCII characters (``日本``)
is shorter than a trigram, and the porter index sees a run of CJK text as one word, so such
a query is also matched by a substring scan of the newest :data:`SHORT_SCAN_ROWS` non-tool
messages in scope (bounded work, newest hits first).  Each hit comes with the messages just
before and after it in its session (the goal → hit → conclusion bookends).

The trigram index may lag behind the newest rows after a bulk write (schema v2,
``trigram_progress``): rows above its mark are matched by a scan that folds case as the
trigram tokenizer does, so what was committed is always found.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_host.store import query as _query
from hermes_host.store.base import SearchHit, StoredMessage
from hermes_host.store.codec import STORED_COLUMNS, stored_from_row
from hermes_host.store.query import (
    BOOKEND_MESSAGES,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    RANK_CAP,
    SHORT_SCAN_ROWS,
    clean_query,
    query_words,
    search_limit,
    short_needle,
    substring_needle,
)

__all__ = [
    "BOOKEND_MESSAGES",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "RANK_CAP",
    "SHORT_SCAN_ROWS",
    "catch_up_trigram",
    "clean_query",
    "pending_trigram_rows",
    "porter_query",
    "register_functions",
    "run_search",
    "short_needle",
    "substring_needle",
]

_SCAN_SCORE = -1e6
"""Scores (lower is better) of substring hits found by scanning rows the trigram index has
not reached yet: they are the newest rows, listed before the index's BM25-ranked hits."""


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def porter_query(query: str, *, any_term: bool = False) -> str | None:
    """An FTS5 expression over the words of ``query`` (all of them, or any with
    ``any_term``); ``None`` when the query has no words."""
    terms = query_words(query)
    if not terms:
        return None
    return (" OR " if any_term else " ").join(_quote(t) for t in terms)


def scan_recent(
    conn: sqlite3.Connection, needle: str, scope: list[str] | None, limit: int
) -> list[int]:
    """Newest-first ids of the non-tool rows among the newest :data:`SHORT_SCAN_ROWS` in
    ``scope`` that contain ``needle`` (case-folded like the trigram tokenizer)."""
    folded = needle.lower()
    if folded == needle.upper():  # caseless text (CJK): a plain substring test, in C
        test = "instr(content, ?) > 0"
    else:
        test = "hermes_folded_contains(content, ?)"
    inner = "SELECT id, content FROM messages WHERE role <> 'tool'"
    params: list[Any] = []
    if scope is not None:
        inner += f" AND session_id IN ({', '.join('?' * len(scope))})"
        params += scope
    sql = (
        f"SELECT id FROM ({inner} ORDER BY id DESC LIMIT ?) WHERE {test} "
        "ORDER BY id DESC LIMIT ?"
    )
    return [int(r[0]) for r in conn.execute(sql, [*params, _query.SHORT_SCAN_ROWS, folded, limit])]


def _folded_contains(content: object, needle: object) -> bool:
    return isinstance(content, str) and isinstance(needle, str) and needle in content.lower()


def register_functions(conn: sqlite3.Connection) -> None:
    """SQL functions the search needs on every connection: ``hermes_folded_contains(text,
    needle)`` is a Unicode case-folded substring test (SQLite's ``lower()`` folds ASCII only,
    the trigram tokenizer folds all of Unicode)."""
    conn.create_function("hermes_folded_contains", 2, _folded_contains, deterministic=True)


# -- the trigram index's catch-up (schema v2) -------------------------------------------------


def _trigram_mark(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT indexed_through FROM trigram_progress").fetchone()[0])


def pending_trigram_rows(conn: sqlite3.Connection) -> int:
    """Messages above the trigram index's mark (tool rows included: the mark passes them)."""
    mark = _trigram_mark(conn)
    return int(conn.execute("SELECT count(*) FROM messages WHERE id > ?", (mark,)).fetchone()[0])


def catch_up_trigram(conn: sqlite3.Connection, budget: int) -> int:
    """Index up to ``budget`` messages above the mark, oldest first, and move the mark past
    them; returns how many messages the mark passed.  Run inside the caller's write
    transaction: the index rows and the mark commit together or not at all."""
    mark = _trigram_mark(conn)
    upper, passed = conn.execute(
        "SELECT max(id), count(*) FROM "
        "(SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?)",
        (mark, max(1, budget)),
    ).fetchone()
    if not passed:
        return 0
    conn.execute(
        "INSERT INTO messages_fts_trigram(rowid, content) SELECT id, content FROM messages "
        "WHERE id > ? AND id <= ? AND role <> 'tool' ORDER BY id",
        (mark, upper),
    )
    conn.execute("UPDATE trigram_progress SET indexed_through = ?", (upper,))
    return int(passed)


def scan_pending(
    conn: sqlite3.Connection, needle: str, mark: int, scope: list[str] | None, limit: int
) -> list[int]:
    """Newest-first ids of non-tool rows above ``mark`` that contain ``needle`` (case-folded
    like the trigram tokenizer)."""
    folded = needle.lower()
    # SQLite's lower() folds ASCII only, which is enough for an ASCII needle (and keeps the
    # scan in C); any other needle goes through the Unicode-aware function.
    if folded.isascii():
        test = "instr(lower(content), ?) > 0"
    else:
        test = "hermes_folded_contains(content, ?)"
    sql = f"SELECT id FROM messages WHERE id > ? AND role <> 'tool' AND {test}"
    params: list[Any] = [mark, folded]
    if scope is not None:
        sql += f" AND session_id IN ({', '.join('?' * len(scope))})"
        params += scope
    sql += " ORDER BY id DESC LIMIT ?"
    return [int(r[0]) for r in conn.execute(sql, [*params, limit])]


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
    conn: sqlite3.Connection,
    table: str,
    expression: str,
    scope: list[str] | None,
    limit: int,
    bounds: tuple[int, int] | None = None,
) -> list[tuple[int, float]]:
    """Top hits of one FTS expression.  BM25 ranking costs time per matching row, so a
    term matching more than ``RANK_CAP`` rows is answered with its most recent hits
    instead (still BM25-scored, never a scan of the whole posting list)."""
    where = f"{table} MATCH ?"
    params: list[Any] = [expression]
    join = ""
    if scope is not None:
        bounds = bounds if bounds is not None else scope_range(conn, scope)
        if bounds is None:
            return []
        where += f" AND {table}.rowid BETWEEN ? AND ?"
        params += list(bounds)
    try:
        matching = conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {where} LIMIT ?)",
            [*params, _query.RANK_CAP + 1],
        ).fetchone()[0]
        if not matching:
            return []
        order = f"{table}.rank" if matching <= _query.RANK_CAP else f"{table}.rowid DESC"
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
    conn: sqlite3.Connection, session_id: str, seq: int, count: int
) -> tuple[list[StoredMessage], list[StoredMessage]]:
    """The ``count`` rows before and after the hit (at window order ``seq``, unique within
    its session) in its session's window order: two range reads of one index."""
    before = conn.execute(
        f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ? AND seq < ? "
        "ORDER BY seq DESC LIMIT ?",
        (session_id, seq, count),
    ).fetchall()
    after = conn.execute(
        f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ? AND seq > ? "
        "ORDER BY seq LIMIT ?",
        (session_id, seq, count),
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
    limit = search_limit(limit)
    bounds = None
    if scope is not None:  # the id range of the scope's sessions, looked up once per search
        bounds = scope_range(conn, scope)
        if bounds is None:
            return []
    ranked: dict[int, float] = {}
    words = porter_query(query)
    if words is not None:
        found = match(conn, "messages_fts", words, scope, limit, bounds)
        if not found:
            any_words = porter_query(query, any_term=True)
            if any_words != words and any_words is not None:
                found = match(conn, "messages_fts", any_words, scope, limit, bounds)
        ranked.update(found)
    needle = substring_needle(query)
    # The substring index answers what words cannot (partial identifiers, CJK, paths).
    # A long trigram phrase intersects many posting lists, so it runs only when the word
    # index found nothing — a word hit is the better answer anyway.
    if needle is not None and not ranked:
        # The mark is read before the index is queried: rows indexed in between are then
        # found twice (and deduplicated), never missed.
        mark = _trigram_mark(conn)
        for position, rowid in enumerate(scan_pending(conn, needle, mark, scope, limit)):
            ranked[rowid] = _SCAN_SCORE + position  # newest rows, not yet indexed, first
        indexed = match(conn, "messages_fts_trigram", _quote(needle), scope, limit, bounds)
        for rowid, score in indexed:
            if rowid not in ranked and len(ranked) < limit:
                ranked[rowid] = 1000.0 + score  # after every porter hit, in trigram order
    short = short_needle(query)
    if short is not None and len(ranked) < limit:
        for position, rowid in enumerate(scan_recent(conn, short, scope, limit)):
            if rowid not in ranked and len(ranked) < limit:
                ranked[rowid] = 2000.0 + position  # after word hits, newest first
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    rows: dict[int, Any] = {
        r[0]: r
        for r in conn.execute(
            "SELECT id, session_id, role, content, active, timestamp, seq FROM messages "
            f"WHERE id IN ({marks})",
            list(ranked),
        )
    }
    hits: list[SearchHit] = []
    for rowid, score in sorted(ranked.items(), key=lambda kv: kv[1]):
        row = rows.get(rowid)
        if row is None:
            continue
        before, after = bookends(conn, row[1], row[6], max(0, int(bookend_count)))
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
