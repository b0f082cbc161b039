"""``session_search`` on PostgreSQL's own indexes, with bookends and no LLM call (R-13.3).

* Words: ``search_vector @@ query`` on the generated ``tsvector`` column (GIN), ranked by
  ``ts_rank``.  The query is built from the *words* of the user's text
  (:func:`hermes_host.store.query.query_words`), each passed as a parameter to
  ``plainto_tsquery`` — which treats its input as plain words — and combined with ``&&``
  (all words) or ``||`` (any word).  No user text reaches the ``tsquery`` parser as syntax.
* Substring: ``content ILIKE '%needle%'`` (``%``, ``_`` and ``\\`` escaped) over non-tool
  rows, which the partial ``pg_trgm`` GIN index answers (SPEC R-9.3: tool rows are not in
  the substring index).
* Rows a bulk write left *pending* (``search_vector`` NULL, not yet in either index, see
  :mod:`.indexing`) are matched by a scan of the pending set in the same statement, so a
  committed row is always found; the store catches up before searching, which keeps that
  set empty or small.
* A one- or two-character non-ASCII query scans the newest non-tool rows in scope.

Attempts run in the order every backend follows: all words; any word; substring; short scan.
Scores: lower is better (``-ts_rank`` for word hits, then substring, then short-scan hits).
"""

from __future__ import annotations

from typing import Any

from hermes_host.store import SearchHit, StoredMessage
from hermes_host.store import query as _query
from hermes_host.store.codec import STORED_COLUMNS, stored_from_row
from hermes_host.store.query import (
    query_words,
    search_limit,
    short_needle,
    substring_needle,
)
from hermes_store_postgres._base import Conn
from hermes_store_postgres.schema import SEARCH_VECTOR

__all__ = ["like_pattern", "run_search", "word_query"]

_CONFIG = "'english'::regconfig"


def word_query(words: list[str], *, any_word: bool) -> tuple[str, list[str]]:
    """A ``tsquery`` expression over ``words`` and its parameters (one per word)."""
    join = " || " if any_word else " && "
    return join.join(f"plainto_tsquery({_CONFIG}, %s)" for _ in words), list(words)


def like_pattern(needle: str) -> str:
    """``%needle%`` with LIKE's own metacharacters escaped (``ESCAPE '\\'``)."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _scope(scope: list[str] | None, params: list[Any], alias: str = "m") -> str:
    if scope is None:
        return ""
    params.append(scope)
    return f" AND {alias}.session_id = ANY(%s)"


_PENDING_VECTOR = SEARCH_VECTOR.format(content="p.content")


def _word_hits(expression: str, params: list[str], scope: list[str] | None, ranked: bool
               ) -> tuple[str, list[Any]]:
    """The rows matching the ``tsquery`` ``expression``: indexed rows through the word
    index, plus the pending rows of a bulk write (their vector computed on the fly; the
    ``messages_unindexed`` partial index finds them, and it is empty in steady state)."""
    args: list[Any] = []
    rank_m = f", -ts_rank(m.search_vector, {expression}) AS score" if ranked else ""
    rank_p = f", -ts_rank({_PENDING_VECTOR}, {expression}) AS score" if ranked else ""
    args += params * (2 if ranked else 1)
    indexed = (f"SELECT m.id{rank_m} FROM messages m WHERE m.search_vector @@ ({expression})"
               f"{_scope(scope, args)}")
    args += params * (2 if ranked else 1)
    pending = (f"SELECT p.id{rank_p} FROM messages p WHERE p.search_vector IS NULL AND "
               f"{_PENDING_VECTOR} @@ ({expression}){_scope(scope, args, 'p')}")
    return f"({indexed} UNION ALL {pending})", args


def _words(conn: Conn, words: list[str], any_word: bool, scope: list[str] | None,
           limit: int) -> list[tuple[int, float]]:
    expression, params = word_query(words, any_word=any_word)
    hits, args = _word_hits(expression, params, scope, ranked=False)
    counted = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {hits} h LIMIT %s) c".encode(),
        [*args, _query.RANK_CAP + 1],
    ).fetchone()
    matching = int(counted[0]) if counted else 0
    if not matching:
        return []
    # Ranking costs time per matching row: a term matching more than RANK_CAP rows is
    # answered with its most recent hits (still scored).
    order = "score" if matching <= _query.RANK_CAP else "id DESC"
    hits, args = _word_hits(expression, params, scope, ranked=True)
    rows = conn.execute(
        f"SELECT id, score FROM {hits} h ORDER BY {order} LIMIT %s".encode(),
        [*args, limit],
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def _substring(conn: Conn, needle: str, scope: list[str] | None, limit: int) -> list[int]:
    """Non-tool rows containing ``needle``: indexed rows through the trigram index (whose
    predicate is ``role <> 'tool' AND search_vector IS NOT NULL``), plus pending rows."""
    pattern = like_pattern(needle)
    params: list[Any] = [pattern]
    indexed = ("SELECT m.id FROM messages m WHERE m.role <> 'tool' AND "
               "m.search_vector IS NOT NULL AND m.content ILIKE %s ESCAPE '\\'"
               f"{_scope(scope, params)}")
    params.append(pattern)
    pending = ("SELECT p.id FROM messages p WHERE p.search_vector IS NULL AND "
               "p.role <> 'tool' AND p.content ILIKE %s ESCAPE '\\'"
               f"{_scope(scope, params, 'p')}")
    rows = conn.execute(
        f"SELECT id FROM ({indexed} UNION ALL {pending}) h ORDER BY id DESC LIMIT %s".encode(),
        [*params, limit],
    ).fetchall()
    return [int(r[0]) for r in rows]


def _short(conn: Conn, needle: str, scope: list[str] | None, limit: int) -> list[int]:
    params: list[Any] = []
    where = _scope(scope, params)
    rows = conn.execute(
        "SELECT id FROM (SELECT m.id, m.content FROM messages m WHERE m.role <> 'tool'"
        f"{where} ORDER BY m.id DESC LIMIT %s) recent "
        "WHERE strpos(lower(content), lower(%s)) > 0 ORDER BY id DESC LIMIT %s".encode(),
        [*params, _query.SHORT_SCAN_ROWS, needle, limit],
    ).fetchall()
    return [int(r[0]) for r in rows]


_INNER = ", ".join("b." + c.strip() for c in STORED_COLUMNS.split(","))


def bookends(
    conn: Conn, hits: list[tuple[int, str, int]], count: int
) -> dict[int, tuple[list[StoredMessage], list[StoredMessage]]]:
    """For each ``(id, session_id, seq)`` hit, the ``count`` rows before and after it in its
    session's window order — one statement for every hit (a ``LATERAL`` pair of index
    scans each), not two round trips per hit."""
    out: dict[int, tuple[list[StoredMessage], list[StoredMessage]]] = {
        h[0]: ([], []) for h in hits}
    if count <= 0 or not hits:
        return out
    rows = conn.execute(
        f"SELECT h.id, b.side, b.k, {_INNER} "
        "FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) AS h(id, sid, seq) "
        "CROSS JOIN LATERAL ("
        f"(SELECT -1 AS side, seq AS k, {STORED_COLUMNS} FROM messages "
        " WHERE session_id = h.sid AND seq < h.seq ORDER BY seq DESC, id DESC LIMIT %s) "
        "UNION ALL "
        f"(SELECT 1 AS side, seq AS k, {STORED_COLUMNS} FROM messages "
        " WHERE session_id = h.sid AND seq > h.seq ORDER BY seq, id LIMIT %s)) b "
        "ORDER BY h.id, b.side, b.k, b.id".encode(),
        ([h[0] for h in hits], [h[1] for h in hits], [h[2] for h in hits], count, count),
    ).fetchall()
    for row in rows:
        before, after = out[int(row[0])]
        (before if row[1] < 0 else after).append(stored_from_row(row[3:]))
    return out


def run_search(
    conn: Conn, query: str, scope: list[str] | None, limit: int, bookend_count: int
) -> list[SearchHit]:
    """Hits for ``query`` within ``scope`` (session ids; ``None`` = the whole store)."""
    limit = search_limit(limit)
    ranked: dict[int, float] = {}
    words = query_words(query)
    if words:
        found = _words(conn, words, False, scope, limit)
        if not found and len(words) > 1:
            found = _words(conn, words, True, scope, limit)
        ranked.update(found)
    needle = substring_needle(query)
    if needle is not None and not ranked:
        for position, rowid in enumerate(_substring(conn, needle, scope, limit)):
            ranked.setdefault(rowid, 1000.0 + position)
    short = short_needle(query)
    if short is not None and len(ranked) < limit:
        for position, rowid in enumerate(_short(conn, short, scope, limit)):
            if rowid not in ranked and len(ranked) < limit:
                ranked[rowid] = 2000.0 + position
    if not ranked:
        return []
    rows = {
        int(r[0]): r
        for r in conn.execute(
            "SELECT id, session_id, role, content, active, timestamp, seq FROM messages "
            "WHERE id = ANY(%s)",
            (list(ranked),),
        ).fetchall()
    }
    order = [(rowid, score) for rowid, score in sorted(ranked.items(), key=lambda kv: kv[1])
             if rowid in rows]
    around = bookends(conn, [(i, rows[i][1], int(rows[i][6])) for i, _ in order],
                      max(0, int(bookend_count)))
    hits: list[SearchHit] = []
    for rowid, score in order:
        row = rows[rowid]
        before, after = around[rowid]
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
