"""The SQLite store's compression room: leases (R-9.4, R-10.1) and publishing a
compressed window in one transaction (R-8.1, R-8.2).  The planning is shared
(:mod:`hermes_host.store.rules`); this module holds only SQLite's statements."""

from __future__ import annotations

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
    StaleSessionError,
    StoreError,
    WindowMarker,
)
from hermes_host.store.codec import decode_row
from hermes_host.store.ids import holder_is_dead, make_holder
from hermes_host.store.rules import (
    COPIED_ON_ROTATE,
    lease_seconds,
    lost_lease_message,
    plan_publish,
    prepare_messages,
    split_snapshot,
)
from hermes_host.store.sqlite._base import MSG_COLS, WINDOW_ORDER, errors
from hermes_host.store.sqlite.messages import MessageRooms

__all__ = ["PublishRooms"]


class PublishRooms(MessageRooms):
    """Leases and publishing."""

    def _ttl(self, ttl: float | None) -> float:
        return lease_seconds(self.lease_ttl, ttl)

    @errors("acquiring the compression lease")
    def acquire_lease(self, session_id: str, ttl: float | None = None) -> Lease | Deferred:
        seconds = self._ttl(ttl)
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
        seconds = self._ttl(ttl)
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

    @staticmethod
    def _lost_message(conn: sqlite3.Connection, lease: Lease, doing: str) -> str:
        row = conn.execute(
            "SELECT holder FROM compression_locks WHERE session_id = ?", (lease.session_id,)
        ).fetchone()
        return lost_lease_message(lease.session_id, lease.holder, row[0] if row else None, doing)

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
        if mode not in ("rotate", "in_place"):
            raise StoreError(f"unknown publish mode {mode!r}; allowed: rotate, in_place")
        known = None
        if token_counts is None and not isinstance(new_messages, dict | str | bytes):
            known = self._window_counts(session_id, len(new_messages))
        prepared = prepare_messages(new_messages, token_counts, known)
        with self._tx() as conn:
            now = time.time()
            held = conn.execute(
                "SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            if lease.session_id != session_id or held is None or held[0] != lease.holder:
                raise LeaseLostError(self._lost_message(conn, lease, "publish the compression"))
            row = conn.execute(
                "SELECT parent_session_id, title, end_reason FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise self._missing(session_id)
            parent_id, title, end_reason = row
            if end_reason == "compression":
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was published"))
            read, later = self._window_since(conn, session_id, snapshot)
            plan = plan_publish(((r[0], r[2:]) for r in read), prepared)
            window, fresh, fresh_at, kept = plan.window, plan.fresh, plan.fresh_at, plan.kept
            replaced = [(row_id,) for row_id in plan.replaced]
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
            written = iter(self._insert(conn, target, fresh, now, positions=fresh_at, base=base))
            ids = [row_id if row_id is not None else next(written) for row_id in window]
            moved = [
                (target, base + position + 1, row_id)
                for position, row_id in enumerate(ids)
                if row_id in kept
            ]
            moved += [(target, base + len(ids) + j + 1, r[0]) for j, r in enumerate(later)]
            order = {r[0]: r[1] for r in read}
            if mode == "in_place" and not fresh and window == sorted(kept, key=order.__getitem__):
                moved = []  # rows only left the window (``/undo``): the rest stays in order
            conn.executemany("UPDATE messages SET session_id = ?, seq = ? WHERE id = ?", moved)
            conn.executemany(
                f"UPDATE messages SET active = 0, compacted = {compacted} WHERE id = ?", replaced
            )
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

