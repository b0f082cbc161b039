"""Deferred search indexing of bulk writes on PostgreSQL (issue 16): a batch of at least
``DEFER_INDEX_MIN`` rows goes in pending (``search_vector`` NULL, in neither GIN index) and a
catch-up indexes it.  What must never change: a committed message is found by every search
(word, two words, substring; whole store and one session), whatever the catch-up's state —
not started, running in two processes at once, or killed halfway."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from typing import Any

import psycopg

from hermes_store_postgres import PostgresStore
from hermes_store_postgres.messages import DEFER_INDEX_MIN

_BULK = DEFER_INDEX_MIN * 4


def _bulk(store: PostgresStore, count: int = _BULK, tag: str = "quokka") -> str:
    sid = store.create_session().id
    messages = [{"role": "user" if i % 2 else "assistant",
                 "content": f"row {i} mentions {tag}{i} and the zanzibarite parser"}
                for i in range(count)]
    store.append_messages(sid, messages, token_counts=[5] * count)
    return sid


def _found(store: PostgresStore, query: str, session_id: str | None = None) -> set[str]:
    return {h.content for h in store.session_search(query, session_id=session_id, limit=50)}


def _vectors(url: str) -> dict[int, Any]:
    """Every row's stored vector next to the one the insert would have written."""
    with psycopg.connect(url.split("?")[0], options=_path(url)) as conn:
        rows = conn.execute(
            "SELECT id, search_vector::text, to_tsvector('english'::regconfig, "
            "left(coalesce(content, ''), 200000))::text FROM messages").fetchall()
    return {int(r[0]): (r[1], r[2]) for r in rows}


def _path(url: str) -> str:
    schema = url.split("schema=")[1].split("&")[0]
    return f"-c search_path={schema},public"


def test_a_bulk_append_is_searchable_at_once_before_any_catch_up_issue_16(
    pg_store: PostgresStore,
) -> None:
    """Issue 16: the bulk rows land pending, and the very next search — word, two words,
    substring, whole store and one session — finds them (the search catches up first)."""
    sid = _bulk(pg_store)
    assert pg_store.pending_index_rows() == _BULK
    assert _found(pg_store, f"quokka{_BULK - 1}") == {
        f"row {_BULK - 1} mentions quokka{_BULK - 1} and the zanzibarite parser"}
    assert pg_store.pending_index_rows() == 0  # the search indexed them before answering
    assert len(_found(pg_store, "zanzibarite parser", sid)) == 10 * 5  # limit 50 of 1,024
    assert _found(pg_store, f"okka{_BULK - 2} and", sid) == {
        f"row {_BULK - 2} mentions quokka{_BULK - 2} and the zanzibarite parser"}


def test_rows_the_catch_up_cannot_take_are_still_found_by_the_pending_scan_issue_16(
    pg_store: PostgresStore, pg_url: str,
) -> None:
    """Issue 16: while another transaction holds pending rows (a publish archiving them, or
    a host mid-catch-up), a search skips them in its catch-up (SKIP LOCKED: no waiting) and
    still finds them, by scanning the pending set; nothing is indexed twice."""
    sid = _bulk(pg_store)
    with psycopg.connect(pg_url.split("?")[0], options=_path(pg_url)) as other:
        other.execute("SELECT id FROM messages WHERE search_vector IS NULL FOR UPDATE")
        assert _found(pg_store, f"quokka{_BULK - 3}", sid) == {
            f"row {_BULK - 3} mentions quokka{_BULK - 3} and the zanzibarite parser"}
        assert _found(pg_store, "okka7 and") == {
            "row 7 mentions quokka7 and the zanzibarite parser"}
        assert pg_store.pending_index_rows() == _BULK  # all held by `other`: none indexed
        other.rollback()
    assert pg_store.index_pending() == _BULK
    assert pg_store.pending_index_rows() == 0
    assert all(stored == expected for stored, expected in _vectors(pg_url).values())


def test_small_appends_are_indexed_with_the_row_issue_16(pg_store: PostgresStore) -> None:
    """Issue 16: a turn's append (below DEFER_INDEX_MIN rows) is indexed synchronously."""
    sid = pg_store.create_session().id
    pg_store.append_messages(sid, [{"role": "user", "content": f"m {i}"}
                                   for i in range(DEFER_INDEX_MIN - 1)])
    assert pg_store.pending_index_rows() == 0


_CATCH_UP = textwrap.dedent("""
    import sys
    from hermes_store_postgres import PostgresStore
    store = PostgresStore(sys.argv[1])
    done = store.index_pending(batch=int(sys.argv[2]),
                               progress=lambda d, t: print(d, t, flush=True))
    print("done", done, flush=True)
""")


def test_two_processes_catching_up_at_once_share_the_work_issue_16(
    pg_store: PostgresStore, pg_url: str,
) -> None:
    """Issue 16: two real processes run ``index_pending`` on the same backlog at once: the
    rows they indexed add up to the backlog exactly (no row twice, none left), and every
    row's vector is the one a synchronous insert would have written."""
    for n in range(3):
        _bulk(pg_store, tag=f"t{n}x")
    total = 3 * _BULK
    procs = [subprocess.Popen([sys.executable, "-c", _CATCH_UP, pg_url, "37"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        counts.append(int(out.strip().splitlines()[-1].split()[1]))
    assert sum(counts) == total
    assert pg_store.pending_index_rows() == 0
    vectors = _vectors(pg_url)
    assert len(vectors) == total
    assert all(stored == expected for stored, expected in vectors.values())
    assert _found(pg_store, "t2x5") == {"row 5 mentions t2x5 and the zanzibarite parser"}


def test_a_catch_up_killed_halfway_loses_nothing_and_the_next_one_finishes_issue_16(
    pg_store: PostgresStore, pg_url: str,
) -> None:
    """Issue 16: SIGKILL a catch-up after some batches: what it committed stays indexed, its
    open batch rolls back (rows still pending, never half-indexed), searches still find
    every row, and the next catch-up finishes exactly the rest."""
    sid = _bulk(pg_store, count=_BULK * 4)
    total = _BULK * 4
    proc = subprocess.Popen([sys.executable, "-c", _CATCH_UP, pg_url, "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(3):
        assert proc.stdout.readline().strip()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    left = pg_store.pending_index_rows()
    assert 0 < left < total
    indexed = {i for i, (stored, _) in _vectors(pg_url).items() if stored is not None}
    assert len(indexed) == total - left
    assert all(s == e for s, e in _vectors(pg_url).values() if s is not None)
    assert pg_store.index_pending() == left
    assert _found(pg_store, f"quokka{total - 1}", sid) == {
        f"row {total - 1} mentions quokka{total - 1} and the zanzibarite parser"}
    assert all(s == e for s, e in _vectors(pg_url).values())


def test_a_catch_up_after_index_pending_takes_one_batch_not_a_nested_loop_issue_16(
    pg_store: PostgresStore,
) -> None:
    """Issue 16: once ``index_pending`` has ANALYZEd the table (statistics: nothing
    pending), the next bulk write's catch-up must still index one batch of ``batch`` rows
    in one pass.  Measured before the fix: the planner put the ``LIMIT … FOR UPDATE SKIP
    LOCKED`` subquery inside a nested loop, re-running it per pending row — one "2,000-row"
    batch indexed 10,000 rows in 29.7 s (57 M buffer hits); 203 ms after."""
    from hermes_store_postgres.indexing import catch_up

    _bulk(pg_store)
    assert pg_store.index_pending() == _BULK
    _bulk(pg_store, tag="wombat")
    with pg_store._read() as conn:
        assert catch_up(conn, DEFER_INDEX_MIN) == DEFER_INDEX_MIN
    assert pg_store.pending_index_rows() == _BULK - DEFER_INDEX_MIN
    assert _found(pg_store, f"wombat{_BULK - 1}") == {
        f"row {_BULK - 1} mentions wombat{_BULK - 1} and the zanzibarite parser"}
