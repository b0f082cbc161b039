"""The PostgreSQL store's compression room: leases that hold across machines (R-9.4,
R-10.1) and publishing a compressed window in one transaction (R-8.1, R-8.2).

Locks, always taken in this order so two hosts never deadlock: the session's
``compression_locks`` row (``FOR UPDATE``), then its ``sessions`` row (``FOR NO KEY
UPDATE``, the lock an append's ``UPDATE`` takes).  A publish therefore sees a window no
append can change under it, and a lease decision is made on a locked row.  Every lease time
is the database's clock.  The planning (which rows are kept, which archived) is shared with
every backend (:func:`hermes_host.store.rules.plan_publish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from hermes_host.models import Message
from hermes_host.store import (
    Deferred,
    Lease,
    LeaseLostError,
    PublishMode,
    PublishResult,
    WindowMarker,
)
from hermes_host.store.codec import ROW_COLUMNS, decode_row
from hermes_host.store.ids import holder_is_dead, make_holder
from hermes_host.store.rules import (
    COPIED_ON_ROTATE,
    lease_seconds,
    plan_publish,
    split_snapshot,
    window_moves,
)
from hermes_store_postgres._base import MSG_COLS, NOW, WINDOW_ORDER
from hermes_store_postgres.bounded import Conn
from hermes_store_postgres.failures import errors
from hermes_store_postgres.messages import MessageRooms

__all__ = ["PublishRooms"]

_UNMATCHED = object()
"""Stands for the values of a window row no proposed message can equal (see
:meth:`PublishRooms._window_rows`): a one-item tuple of it equals no encoded message."""
_IF_MATCHED = ", ".join(f"CASE WHEN c THEN {column} END" for column in ROW_COLUMNS)


class PublishRooms(MessageRooms):
    """Leases and publishing."""

    @errors("acquiring the compression lease")
    def acquire_lease(self, session_id: str, ttl: float | None = None) -> Lease | Deferred:
        seconds = lease_seconds(self.lease_ttl, ttl)
        holder = make_holder()
        with self._tx() as conn:
            now = self._now(conn)
            row = conn.execute(
                "SELECT holder, expires_at FROM compression_locks WHERE session_id = %s "
                "FOR UPDATE",
                (session_id,),
            ).fetchone()
            if row is not None and row[1] > now and not holder_is_dead(row[0]):
                return Deferred(session_id=session_id, holder=row[0], expires_at=row[1])
            self._require(conn, session_id)
            taken = conn.execute(
                "INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
                "holder = excluded.holder, acquired_at = excluded.acquired_at, "
                "expires_at = excluded.expires_at "
                "WHERE compression_locks.holder = %s RETURNING holder",
                (session_id, holder, now, now + seconds, row[0] if row else None),
            ).fetchone()
            if taken is None:  # another host inserted the first lease row meanwhile
                current = conn.execute(
                    "SELECT holder, expires_at FROM compression_locks WHERE session_id = %s",
                    (session_id,),
                ).fetchone()
                assert current is not None
                return Deferred(session_id=session_id, holder=current[0], expires_at=current[1])
        return Lease(session_id, holder, now, now + seconds)

    @errors("refreshing the compression lease")
    def refresh_lease(self, lease: Lease, ttl: float | None = None) -> Lease:
        seconds = lease_seconds(self.lease_ttl, ttl)
        with self._tx() as conn:
            row = conn.execute(
                f"UPDATE compression_locks SET expires_at = {NOW} + %s "
                "WHERE session_id = %s AND holder = %s RETURNING expires_at".encode(),
                (seconds, lease.session_id, lease.holder),
            ).fetchone()
            if row is None:
                raise LeaseLostError(self._lost_message(conn, lease, "refresh it"))
        return Lease(lease.session_id, lease.holder, lease.acquired_at, float(row[0]))

    @errors("releasing the compression lease")
    def release_lease(self, lease: Lease) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM compression_locks WHERE session_id = %s AND holder = %s",
                (lease.session_id, lease.holder),
            )
            return cur.rowcount > 0

    def _holder(self, conn: Conn, session_id: str) -> str | None:
        row = conn.execute(
            "SELECT holder FROM compression_locks WHERE session_id = %s", (session_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    # -- compression ------------------------------------------------------------------------

    @errors("publishing a compression")
    def publish_compression(
        self,
        lease: Lease,
        session_id: str,
        new_messages: Sequence[Message],
        mode: PublishMode = "rotate",
        reason: str = "compression",
        token_counts: Sequence[int] | None = None,
        snapshot: WindowMarker | None = None,
    ) -> PublishResult:
        prepared = self._publish_rows(session_id, new_messages, mode, token_counts)
        try:
            with self._tx() as conn:
                return self._publish(conn, lease, session_id, prepared, mode, reason, snapshot)
        except psycopg.errors.UniqueViolation:  # a rotated title another host just took
            raise LeaseLostError(
                f"session {session_id}: another host published a rotation of this lineage at "
                "the same moment; nothing was published, compress again"
            ) from None

    @staticmethod
    def _window_rows(conn: Conn, session_id: str, prepared: list[tuple[int, tuple[Any, ...]]],
                     snapshot: WindowMarker | None) -> list[tuple[Any, ...]]:
        """The window's ``(id, seq, *values)`` rows in window order.  Only rows that can
        matter carry their values: those whose ``content`` is one a proposed message has
        (a kept row), and those appended after ``snapshot`` (carried over); the others —
        the thousands a compression replaces — come back as ``(id, seq, _UNMATCHED)``,
        so a publish does not ship and decode the whole history to archive it."""
        contents = sorted({v[1] for _, v in prepared if v[1] is not None})
        want_null = any(v[1] is None for _, v in prepared)
        after = snapshot.last_message_id if snapshot is not None else 2**62
        fetched = conn.execute(
            f"SELECT id, seq, c, {_IF_MATCHED} FROM (SELECT id, seq, {MSG_COLS}, "
            "(content = ANY(%s::text[]) OR (%s AND content IS NULL) OR id > %s) AS c "
            "FROM messages WHERE session_id = %s AND active) w "
            f"{WINDOW_ORDER}".encode(),
            (contents, want_null, after, session_id),
        ).fetchall()
        return [(r[0], r[1], *r[3:]) if r[2] else (r[0], r[1], _UNMATCHED) for r in fetched]

    def _publish(
        self,
        conn: Conn,
        lease: Lease,
        session_id: str,
        prepared: list[tuple[int, tuple[Any, ...]]],
        mode: PublishMode,
        reason: str,
        snapshot: WindowMarker | None,
    ) -> PublishResult:
        held = conn.execute(
            "SELECT holder FROM compression_locks WHERE session_id = %s FOR UPDATE",
            (session_id,),
        ).fetchone()
        self._check_lease(conn, lease, session_id, held[0] if held else None)
        row = conn.execute(
            "SELECT parent_session_id, title, end_reason FROM sessions WHERE id = %s "
            "FOR NO KEY UPDATE",
            (session_id,),
        ).fetchone()
        self._check_live(conn, session_id, row)
        assert row is not None
        parent_id, title, _ = row
        now = self._now(conn)
        rows = self._window_rows(conn, session_id, prepared, snapshot)
        read, later = split_snapshot(rows, session_id, snapshot)
        plan = plan_publish(((r[0], tuple(r[2:])) for r in read), prepared)
        # Only a compression marks rows compacted; other rewrites of the window (``/undo``)
        # archive rows without claiming they were compacted.
        compacted = reason == "compression"
        target = session_id if mode == "in_place" else self._fresh_id(conn)
        child_title = title
        if mode == "rotate":
            if title:
                child_title = self._next_title(conn, title)
            conn.execute(
                f"INSERT INTO sessions (id, parent_session_id, title, created_at, "
                f"last_activity_at, last_activity_kind, compression_count, {COPIED_ON_ROTATE}) "
                f"SELECT %s, id, %s, %s, %s, 'compression', compression_count + 1, "
                f"{COPIED_ON_ROTATE} FROM sessions WHERE id = %s".encode(),
                (target, child_title, now, now, session_id),
            )
            conn.execute(
                "INSERT INTO engine_state (session_id, engine, state, updated_at) "
                "SELECT %s, engine, state, updated_at FROM engine_state WHERE session_id = %s",
                (target, session_id),
            )
        base = 0
        if mode == "in_place":  # the new window orders after every row of the session
            top = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s",
                (session_id,),
            ).fetchone()
            base = int(top[0]) if top else 0
        ids = plan.ids(
            self._insert(conn, target, plan.fresh, now, positions=plan.fresh_at, base=base))
        moved = window_moves(plan, ids, read, later, base, mode == "in_place")
        if moved:
            conn.execute(
                "UPDATE messages m SET session_id = %s, seq = v.seq "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, seq) WHERE m.id = v.id",
                (target, [m[0] for m in moved], [m[1] for m in moved]),
            )
        if plan.replaced:
            conn.execute(
                "UPDATE messages SET active = false, compacted = %s WHERE id = ANY(%s)",
                (compacted, plan.replaced),
            )
        if mode == "in_place":
            conn.execute(
                "UPDATE sessions SET compression_count = compression_count + %s, "
                "last_activity_at = %s, last_activity_kind = %s WHERE id = %s",
                (int(compacted), now, reason, session_id),
            )
        else:
            conn.execute(
                "UPDATE sessions SET ended_at = %s, end_reason = %s, last_activity_at = %s, "
                "last_activity_kind = 'compression' WHERE id = %s",
                (now, reason, now, session_id),
            )
        return PublishResult(
            session_id=target,
            parent_session_id=parent_id if mode == "in_place" else session_id,
            message_ids=ids,
            mode=mode,
            title=child_title,
            flush_baseline=len(prepared),
            carried=[decode_row(r[2:]) for r in later],
            carried_ids=[int(r[0]) for r in later],
        )
