"""The SQLite store's compression room: leases (R-9.4, R-10.1) and publishing a
compressed window in one transaction (R-8.1, R-8.2).  The planning is shared
(:mod:`hermes_host.store.rules`); this module holds only SQLite's statements."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from hermes_host.models import Message
from hermes_host.store.base import (
    Deferred,
    Lease,
    LeaseLostError,
    PublishMode,
    PublishResult,
    WindowMarker,
)
from hermes_host.store.codec import decode_row
from hermes_host.store.ids import holder_is_dead, make_holder
from hermes_host.store.rules import (
    COPIED_ON_ROTATE,
    lease_seconds,
    plan_publish,
    split_snapshot,
    window_moves,
)
from hermes_host.store.sqlite._base import MSG_COLS, WINDOW_ORDER, errors
from hermes_host.store.sqlite.messages import MessageRooms

__all__ = ["PublishRooms"]


class PublishRooms(MessageRooms):
    """Leases and publishing."""

    @errors("acquiring the compression lease")
    def acquire_lease(self, session_id: str, ttl: float | None = None) -> Lease | Deferred:
        seconds = lease_seconds(self.lease_ttl, ttl)
        holder = make_holder()
        with self._tx() as conn:
            now = time.time()
            row = conn.execute(
                "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is not None and row[1] > now and not holder_is_dead(row[0]):
                return Deferred(session_id=session_id, holder=row[0], expires_at=row[1])
            self._require(conn, session_id)
            conn.execute(
                "INSERT OR REPLACE INTO compression_locks (session_id, holder, acquired_at, "
                "expires_at) VALUES (?, ?, ?, ?)",
                (session_id, holder, now, now + seconds),
            )
        return Lease(session_id, holder, now, now + seconds)

    @errors("refreshing the compression lease")
    def refresh_lease(self, lease: Lease, ttl: float | None = None) -> Lease:
        seconds = lease_seconds(self.lease_ttl, ttl)
        with self._tx() as conn:
            now = time.time()
            cur = conn.execute(
                "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
                (now + seconds, lease.session_id, lease.holder),
            )
            if cur.rowcount == 0:
                raise LeaseLostError(self._lost_message(conn, lease, "refresh it"))
        return Lease(lease.session_id, lease.holder, lease.acquired_at, now + seconds)

    @errors("releasing the compression lease")
    def release_lease(self, lease: Lease) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                (lease.session_id, lease.holder),
            )
            return cur.rowcount > 0

    def _holder(self, conn: sqlite3.Connection, session_id: str) -> str | None:
        row = conn.execute(
            "SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)
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
        with self._tx() as conn:
            now = time.time()
            self._check_lease(conn, lease, session_id, self._holder(conn, session_id))
            row = conn.execute(
                "SELECT parent_session_id, title, end_reason FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            self._check_live(conn, session_id, row)
            parent_id, title, _ = row
            read, later = self._window_since(conn, session_id, snapshot)
            plan = plan_publish(((r[0], r[2:]) for r in read), prepared)
            # Only a compression marks rows compacted; other rewrites of the window
            # (``/undo``) archive rows without claiming they were compacted.
            compacted = 1 if reason == "compression" else 0
            target = session_id if mode == "in_place" else self._fresh_id(conn)
            child_title = title
            if mode == "rotate":
                child_title = self._next_title(conn, title) if title else None
                conn.execute(
                    f"INSERT INTO sessions (id, parent_session_id, title, created_at, "
                    f"last_activity_at, last_activity_kind, compression_count, "
                    f"{COPIED_ON_ROTATE}) SELECT ?, id, ?, ?, ?, 'compression', "
                    f"compression_count + 1, {COPIED_ON_ROTATE} FROM sessions WHERE id = ?",
                    (target, child_title, now, now, session_id),
                )
                conn.execute(
                    "INSERT INTO engine_state (session_id, engine, state, updated_at) "
                    "SELECT ?, engine, state, updated_at FROM engine_state WHERE session_id = ?",
                    (target, session_id),
                )
            base = 0
            if mode == "in_place":  # the new window orders after every row of the session
                base = conn.execute(
                    "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?",
                    (session_id,),
                ).fetchone()[0]
            ids = plan.ids(
                self._insert(conn, target, plan.fresh, now, positions=plan.fresh_at, base=base))
            moved = window_moves(plan, ids, read, later, base, mode == "in_place")
            conn.executemany("UPDATE messages SET session_id = ?, seq = ? WHERE id = ?",
                             [(target, seq, row_id) for row_id, seq in moved])
            # one statement for every archived row (a compression of a long window archives
            # nearly all of it: one bound JSON list, not a statement per row; issue 32)
            conn.execute(f"UPDATE messages SET active = 0, compacted = {compacted} "
                         "WHERE id IN (SELECT value FROM json_each(?))",
                         (json.dumps(plan.replaced),))
            if mode == "in_place":
                conn.execute(
                    "UPDATE sessions SET compression_count = compression_count + ?, "
                    "last_activity_at = ?, last_activity_kind = ? WHERE id = ?",
                    (compacted, now, reason, session_id),
                )
            else:
                conn.execute(
                    "UPDATE sessions SET ended_at = ?, end_reason = ?, last_activity_at = ?, "
                    "last_activity_kind = 'compression' WHERE id = ?",
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
                carried_ids=[r[0] for r in later],
            )

    def _window_since(
        self, conn: sqlite3.Connection, session_id: str, snapshot: WindowMarker | None
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The window's rows ``(id, seq, *columns)`` split into those the ``snapshot`` saw
        and those appended after it; :class:`StaleWindowError` when rows it saw are gone."""
        rows = conn.execute(
            f"SELECT id, seq, {MSG_COLS} FROM messages WHERE session_id = ? AND active = 1 "
            + WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        return split_snapshot(rows, session_id, snapshot)

