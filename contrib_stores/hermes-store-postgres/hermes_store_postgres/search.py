"""``session_search`` on PostgreSQL's own indexes, with bookends and no LLM call (R-13.3).

* Words: ``search_vector @@ query`` on the generated ``tsvector`` column (GIN), ranked by
  ``ts_rank``.  The query is built from the *words* of the user's text
  (:func:`hermes_host.store.query.query_words`), each passed as a parameter to
  ``plainto_tsquery`` — which treats its input as plain words — and combined with ``&&``
  (all words) or ``||`` (any word).  No user text reaches the ``tsquery`` parser as syntax.
  A chunk such as ``parser.py`` is one token to PostgreSQL's parser, so it also matches
  as itself (:func:`compounds_of`).  Counting and ranking are one statement; a term
  matching more than ``RANK_CAP`` rows takes its newest hits by walking the primary key
  backwards (:data:`RECENT_WALK`); a small scope is searched by testing its own rows
  (:data:`SCOPE_SCAN_MAX`, :data:`SUBSTRING_SCAN_MAX`).
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

import re
from typing import Any

from hermes_host.store import SearchHit, StoredMessage
from hermes_host.store import query as _query
from hermes_host.store.codec import STORED_COLUMNS, stored_from_row
from hermes_host.store.query import (
    MAX_TERMS,
    clean_query,
    query_words,
    search_limit,
    short_needle,
    substring_needle,
)
from hermes_store_postgres.bounded import Conn
from hermes_store_postgres.schema import SEARCH_VECTOR

__all__ = [
    "RECENT_WALK",
    "SCOPE_SCAN_MAX",
    "SUBSTRING_SCAN_MAX",
    "compounds_of",
    "hits_with_bookends",
    "like_pattern",
    "prelude",
    "run_search",
    "word_query",
]

_CONFIG = "'english'::regconfig"


_PLAIN = f"plainto_tsquery({_CONFIG}, %s)"
_WORD = re.compile(r"\w+", re.UNICODE)


def compounds_of(query: str, words: list[str]) -> list[tuple[str, list[str]]]:
    """The query's whitespace-separated chunks made of several of ``words``
    (``parser.py``, ``v2.1``) with those words.  PostgreSQL's parser indexes such a chunk
    as **one** token (a file name, a host, a version) — ``parser.py`` is not the words
    ``parser`` and ``py`` in the word index — so a chunk also matches as itself."""
    known = {w.lower() for w in words}
    out: list[tuple[str, list[str]]] = []
    for chunk in clean_query(query).split():
        parts = _WORD.findall(chunk)
        if (len(parts) > 1 and all(p.lower() in known for p in parts)
                and all(chunk != c for c, _ in out)):
            out.append((chunk[:200], parts))
    return out[:MAX_TERMS]


def word_query(words: list[str], *, any_word: bool,
               compounds: list[tuple[str, list[str]]] | None = None) -> tuple[str, list[str]]:
    """A ``tsquery`` expression over ``words`` and its parameters: each word, and each
    compound chunk (:func:`compounds_of`), goes through ``plainto_tsquery`` as a bound
    parameter (plain text: no ``tsquery`` syntax is parsed from it).  All words: every
    word, a compound's words matching either one by one or as the chunk; any word: any
    word or any chunk."""
    groups = compounds or []
    if any_word:
        params = [*words, *(chunk for chunk, _ in groups)]
        return " || ".join(_PLAIN for _ in params), params
    covered = {p.lower() for _, parts in groups for p in parts}
    exprs: list[str] = []
    params = []
    for word in words:
        if word.lower() not in covered:
            exprs.append(_PLAIN)
            params.append(word)
    for chunk, parts in groups:
        exprs.append(f"({' && '.join(_PLAIN for _ in parts)} || {_PLAIN})")
        params += [*parts, chunk]
    return " && ".join(exprs), params


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


def _word_hits(expression: str, params: list[str], scope: list[str] | None
               ) -> tuple[str, list[Any]]:
    """The rows matching the ``tsquery`` ``expression`` (columns ``id`` and ``v``, the
    vector): indexed rows through the word index, plus the pending rows of a
    bulk write (their vector computed on the fly; the ``messages_unindexed`` partial index
    finds them, and it is empty in steady state)."""
    args: list[Any] = list(params)
    indexed = (f"SELECT m.id, m.search_vector AS v FROM messages m "
               f"WHERE m.search_vector @@ ({expression}){_scope(scope, args)}")
    args += params
    pending = (f"SELECT p.id, {_PENDING_VECTOR} AS v FROM messages p "
               f"WHERE p.search_vector IS NULL AND {_PENDING_VECTOR} @@ ({expression})"
               f"{_scope(scope, args, 'p')}")
    return f"({indexed} UNION ALL {pending})", args


SCOPE_SCAN_MAX = 20_000
"""A search scoped to sessions holding at most this many rows reads those rows (through the
``(session_id, seq)`` index) and tests each one: a word that is frequent store-wide would
otherwise build a GIN bitmap of every match in the store to intersect with the scope."""
RECENT_WALK = 50_000
"""How many of the newest rows a frequent term's "most recent hits" walks (the primary key
backwards, stopping at ``limit`` hits) before falling back to sorting every match."""


SUBSTRING_SCAN_MAX = 5_000
"""A substring search scoped to at most this many rows tests each of them (≈ 2 ms per
1,000 rows) instead of intersecting the trigram index's lists with the scope: a needle
with a common trigram (``.py``) makes those lists long whatever the scope."""

_PRELUDE = (
    "WITH RECURSIVE chain(id, parent, depth) AS ("
    " SELECT id, parent_session_id, 0 FROM sessions WHERE id = %s"
    " UNION ALL SELECT s.id, s.parent_session_id, c.depth + 1"
    " FROM sessions s JOIN chain c ON s.id = c.parent WHERE %s AND c.depth < 100000),"
    " scope AS (SELECT array_agg(id ORDER BY depth DESC) AS ids FROM chain) "
    "SELECT scope.ids, EXISTS (SELECT 1 FROM messages WHERE search_vector IS NULL), "
    "(SELECT count(*) FROM (SELECT 1 FROM messages WHERE session_id = ANY(scope.ids) "
    "LIMIT %s) c) FROM scope"
)


def prelude(conn: Conn, session_id: str | None, lineage: bool
            ) -> tuple[bool, list[str] | None, bool, int]:
    """One statement before a search: whether ``session_id`` exists, the scope (its
    lineage, root first, or itself; ``None`` for the whole store), whether rows a bulk
    write left pending exist (see :mod:`.indexing`), and how many rows the scope holds
    (counted through the ``(session_id, seq)`` index, never past ``SCOPE_SCAN_MAX + 1``)."""
    if session_id is None:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE search_vector IS NULL)").fetchone()
        return True, None, bool(row and row[0]), 0
    row = conn.execute(_PRELUDE, (session_id, bool(lineage), SCOPE_SCAN_MAX + 1)).fetchone()
    if row is None or row[0] is None:
        return False, None, False, 0
    return True, [str(i) for i in row[0]], bool(row[1]), int(row[2])


_SCOPE_VECTOR = f"coalesce(m.search_vector, {SEARCH_VECTOR.format(content='m.content')})"


def _counted(conn: Conn, matches: str, args: list[Any], expression: str, params: list[str],
             limit: int, recent: bool) -> tuple[int, list[tuple[int, float]]]:
    """Count the ``matches`` CTE (``id, v``) and, in the same statement, rank them when at
    most ``RANK_CAP`` (and, with ``recent``, also take the newest when more)."""
    cap = _query.RANK_CAP
    sql_ = (f"WITH h AS MATERIALIZED ({matches}), c AS (SELECT count(*) AS total FROM h) "
            "SELECT NULL::bigint, total::float8 FROM c UNION ALL "
            f"(SELECT h.id, -ts_rank(h.v, {expression}) FROM h, c WHERE c.total <= %s "
            "ORDER BY 2 LIMIT %s)")
    args = [*args, *params, cap, limit]
    if recent:
        sql_ += (f" UNION ALL (SELECT h.id, -ts_rank(h.v, {expression}) FROM h, c "
                 "WHERE c.total > %s ORDER BY 1 DESC LIMIT %s)")
        args += [*params, cap, limit]
    rows = conn.execute(sql_.encode(), args).fetchall()
    matching = next(int(r[1]) for r in rows if r[0] is None)  # the count row
    found = [(int(r[0]), float(r[1])) for r in rows if r[0] is not None]
    if matching <= cap:
        found.sort(key=lambda hit: hit[1])
    else:
        found.sort(key=lambda hit: -hit[0])
    return matching, found[:limit]


def _words(conn: Conn, words: list[str], any_word: bool, scope: list[str] | None,
           limit: int, small_scope: bool, compounds: list[tuple[str, list[str]]]
           ) -> list[tuple[int, float]]:
    """Ranking costs time per matching row: a term matching more than RANK_CAP rows is
    answered with its most recent hits (still scored).  One statement counts and ranks;
    only a frequent term needs a second (the newest rows, walked backwards)."""
    expression, params = word_query(words, any_word=any_word, compounds=compounds)
    if small_scope:  # the scope's own rows, each tested (no store-wide bitmap)
        assert scope is not None
        matches = ("SELECT s.id, s.v FROM (SELECT m.id, "
                   f"{_SCOPE_VECTOR} AS v FROM messages m WHERE m.session_id = ANY(%s) "
                   f"OFFSET 0) s WHERE s.v @@ ({expression})")
        return _counted(conn, matches, [scope, *params], expression, params, limit,
                        recent=True)[1]
    hits, args = _word_hits(expression, params, scope)
    cap = _query.RANK_CAP
    matching, found = _counted(conn, f"SELECT id, v FROM {hits} u LIMIT {cap + 1:d}", args,
                               expression, params, limit, recent=False)
    if matching <= cap:
        return found
    # Many matches: the newest rows first, backwards along the primary key, until
    # ``limit`` hits (each a few rows apart for a frequent term); a term whose matches are
    # all old falls back to sorting every match by id.
    walk_args: list[Any] = [RECENT_WALK, *params]
    walk = (f"SELECT w.id, -ts_rank(w.v, {expression}) FROM (SELECT m.id, m.session_id, "
            f"{_SCOPE_VECTOR} AS v FROM messages m ORDER BY m.id DESC LIMIT %s) w "
            f"WHERE w.v @@ ({expression}){_scope(scope, walk_args, 'w')} LIMIT %s")
    walk_args = [*params, *walk_args, limit]
    rows = conn.execute(walk.encode(), walk_args).fetchall()
    if len(rows) < limit:
        hits, args = _word_hits(expression, params, scope)
        rows = conn.execute(
            f"SELECT id, -ts_rank(v, {expression}) FROM (SELECT id, v FROM {hits} u "
            "ORDER BY id DESC LIMIT %s) r".encode(),
            [*params, *args, limit],
        ).fetchall()
    return sorted(((int(r[0]), float(r[1])) for r in rows), key=lambda hit: -hit[0])


def _substring(conn: Conn, needle: str, scope: list[str] | None, limit: int,
               scan_scope: bool) -> list[int]:
    """Non-tool rows containing ``needle``: indexed rows through the trigram index (whose
    predicate is ``role <> 'tool' AND search_vector IS NOT NULL``), plus pending rows; with
    ``scan_scope``, the scope's rows each tested instead."""
    pattern = like_pattern(needle)
    if scan_scope:
        rows = conn.execute(
            "SELECT s.id FROM (SELECT m.id, m.role, m.content FROM messages m "
            "WHERE m.session_id = ANY(%s) OFFSET 0) s WHERE s.role <> 'tool' AND "
            "s.content ILIKE %s ESCAPE '\\' ORDER BY s.id DESC LIMIT %s",
            (scope, pattern, limit),
        ).fetchall()
        return [int(r[0]) for r in rows]
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


def hits_with_bookends(
    conn: Conn, ids: list[int], count: int
) -> dict[int, tuple[tuple[Any, ...], list[StoredMessage], list[StoredMessage]]]:
    """For each hit id still there: its ``(session_id, role, content, active, timestamp)``
    and the ``count`` rows before and after it in its session's window order — one
    statement for every hit (a ``LATERAL`` pair of index scans each)."""
    out: dict[int, tuple[tuple[Any, ...], list[StoredMessage], list[StoredMessage]]] = {}
    if not ids:
        return out
    rows = conn.execute(
        f"SELECT h.id, h.session_id, h.role, h.content, h.active, h.timestamp, b.side, b.k, "
        f"{_INNER} FROM messages h LEFT JOIN LATERAL ("
        f"(SELECT -1 AS side, seq AS k, {STORED_COLUMNS} FROM messages "
        " WHERE session_id = h.session_id AND seq < h.seq ORDER BY seq DESC, id DESC LIMIT %s) "
        "UNION ALL "
        f"(SELECT 1 AS side, seq AS k, {STORED_COLUMNS} FROM messages "
        " WHERE session_id = h.session_id AND seq > h.seq ORDER BY seq, id LIMIT %s)) b ON true "
        "WHERE h.id = ANY(%s) ORDER BY h.id, b.side, b.k, b.id".encode(),
        (count, count, ids),
    ).fetchall()
    for row in rows:
        hit = out.setdefault(int(row[0]), (tuple(row[1:6]), [], []))
        if row[6] is not None:
            (hit[1] if row[6] < 0 else hit[2]).append(stored_from_row(row[8:]))
    return out


def run_search(
    conn: Conn, query: str, scope: list[str] | None, limit: int, bookend_count: int,
    scope_size: int | None = None,
) -> list[SearchHit]:
    """Hits for ``query`` within ``scope`` (session ids; ``None`` = the whole store);
    ``scope_size``: how many rows the scope holds, as :func:`prelude` counted them."""
    limit = search_limit(limit)
    small_scope = scope is not None and scope_size is not None and scope_size <= SCOPE_SCAN_MAX
    scan_scope = small_scope and scope_size is not None and scope_size <= SUBSTRING_SCAN_MAX
    ranked: dict[int, float] = {}
    words = query_words(query)
    if words:
        compounds = compounds_of(query, words)
        found = _words(conn, words, False, scope, limit, small_scope, compounds)
        if not found and len(words) > 1:
            found = _words(conn, words, True, scope, limit, small_scope, compounds)
        ranked.update(found)
    needle = substring_needle(query)
    if needle is not None and not ranked:
        for position, rowid in enumerate(_substring(conn, needle, scope, limit, scan_scope)):
            ranked.setdefault(rowid, 1000.0 + position)
    short = short_needle(query)
    if short is not None and len(ranked) < limit:
        for position, rowid in enumerate(_short(conn, short, scope, limit)):
            if rowid not in ranked and len(ranked) < limit:
                ranked[rowid] = 2000.0 + position
    if not ranked:
        return []
    found_rows = hits_with_bookends(conn, list(ranked), max(0, int(bookend_count)))
    hits: list[SearchHit] = []
    for rowid, score in sorted(ranked.items(), key=lambda kv: kv[1]):
        if rowid not in found_rows:  # deleted since it matched
            continue
        (sid, role, content, active, timestamp), before, after = found_rows[rowid]
        hits.append(
            SearchHit(
                message_id=rowid,
                session_id=sid,
                role=role,
                content=content or "",
                score=score,
                active=bool(active),
                timestamp=timestamp,
                before=before,
                after=after,
            )
        )
    return hits
