"""The search indexes' catch-up after bulk writes (schema v2, issue 16).

A bulk write leaves its rows *pending*: ``search_vector`` NULL, so they are in neither the
word index nor the substring index (whose predicate requires the vector).  :func:`catch_up`
fills the vectors of a batch of pending rows, oldest first, in one short transaction —
which enters them into both GIN indexes.  Many hosts may catch up at once: each batch takes
its rows ``FOR UPDATE SKIP LOCKED``, so two hosts never index the same row and neither waits
for the other (nor for a publish holding some of the rows: those are taken by a later
batch).  A host killed mid-batch rolls its batch back; the rows stay pending for the next.

Searches never depend on the catch-up being finished: they also scan the pending rows
(:mod:`.search`).  The catch-up only keeps that scan small.
"""

from __future__ import annotations

from hermes_store_postgres.bounded import Conn
from hermes_store_postgres.schema import SEARCH_VECTOR

__all__ = ["CATCH_UP_BATCH", "any_pending", "catch_up", "pending_rows"]

CATCH_UP_BATCH = 2_000
"""Rows indexed per transaction (≈ 0.2 s each on a loaded two-core machine)."""

# The batch is locked by an ``ARRAY(…)`` sub-select — an InitPlan, run exactly once — and
# its rows are then found by primary key.  As ``IN (subquery)`` (and as a CTE joined to
# ``messages``), the planner, trusting statistics that say nothing is pending
# (index_pending's ANALYZE), chose a nested loop over every pending row that re-ran the
# locking subquery (issue 16: one "2,000-row" batch took 10,000 rows and 29.7 s) or
# rescanned the CTE (5.6 s).  No ``search_vector IS NULL`` on the outer rows: the locked
# rows still satisfy it (a row lock re-checks the WHERE), and leaving it out leaves the
# planner only the primary key.
_CATCH_UP = (
    f"UPDATE messages m SET search_vector = {SEARCH_VECTOR.format(content='m.content')} "
    "WHERE m.id = ANY(ARRAY(SELECT id FROM messages WHERE search_vector IS NULL "
    "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED))"
).encode()


def pending_rows(conn: Conn) -> int:
    """How many messages are waiting for the catch-up (``messages_unindexed``)."""
    row = conn.execute("SELECT count(*) FROM messages WHERE search_vector IS NULL").fetchone()
    return int(row[0]) if row else 0


def any_pending(conn: Conn) -> bool:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE search_vector IS NULL)").fetchone()
    return bool(row and row[0])


def catch_up(conn: Conn, batch: int = CATCH_UP_BATCH) -> int:
    """Index up to ``batch`` pending rows in one transaction (``conn`` is in autocommit
    mode); returns how many.  0 means none were left that no other transaction holds."""
    with conn.transaction():
        cur = conn.execute(_CATCH_UP, (max(1, int(batch)),))
        return max(0, cur.rowcount)
