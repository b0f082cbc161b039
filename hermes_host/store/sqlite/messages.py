"""The SQLite store's messages room: append, the window, guards, usage and engine state
(R-5.3, R-9.2)."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from hermes_host.models import Message
from hermes_host.store.base import Guards, StaleSessionError, StoredMessage, WindowMarker
from hermes_host.store.codec import STORED_COLUMNS, decode_row, stored_from_row
from hermes_host.store.rules import (
    Prepared,
    count_tokens,
    encode_state,
    guard_values,
    prepare_messages,
)
from hermes_host.store.sqlite._base import MSG_COLS, WINDOW_ORDER, errors
from hermes_host.store.sqlite.fts import catch_up_trigram
from hermes_host.store.sqlite.sessions import SessionRooms

__all__ = ["CATCH_UP_PER_WRITE", "DEFER_TRIGRAM_MIN", "MessageRooms"]

_STAGE_COLS = f"seq, token_count, {MSG_COLS}"
_STAGE_MESSAGE = (
    f"INSERT INTO temp.message_stage ({_STAGE_COLS}) "
    f"VALUES ({', '.join('?' * (MSG_COLS.count(',') + 3))})"
)
_MOVE_STAGED = (  # the staged seq is the row's window position (1-based) above a base
    "INSERT INTO messages (session_id, timestamp, seq, active, compacted, token_count, "
    f"{MSG_COLS}) SELECT ?, ?, ? + seq, 1, 0, token_count, {MSG_COLS} "
    "FROM temp.message_stage ORDER BY seq"
)
_SET_TOKEN_COUNT = "UPDATE messages SET token_count = ? WHERE id = ?"  # fires no FTS trigger
_BACKGROUND_COUNT_MIN = 64
"""Batches at least this long are token-counted on a worker thread (see _BackgroundCount)."""
_MARKER_CACHE_SIZE = 256
"""Window markers kept per connection (sessions this thread works on)."""
DEFER_TRIGRAM_MIN = 256
"""Writes of at least this many messages leave their rows to the trigram catch-up (schema v2):
indexing ~230 trigrams per message would be most of a bulk append's time."""
CATCH_UP_PER_WRITE = 1_000
"""Each smaller write also indexes up to this many rows a bulk write left behind (≈50 ms), so
the trigram index catches up over the next turns without one turn paying for an import."""


class _BackgroundCount:
    """Token counts of a batch, computed on a worker thread while the caller writes it.

    SQLite releases the GIL while it works (tiktoken does not: two threads counting measured
    no faster than one), so on a multi-core machine counting a large batch overlaps the FTS
    sync of its ``INSERT`` instead of following it: the rows go in with a count of 0 and get
    their real counts in the same transaction (an ``UPDATE`` of ``token_count`` fires no FTS
    trigger), so no committed row ever lacks its count.  When the caller's SQL is done it
    takes its share of what is left to count (:meth:`result`): both threads take message
    indexes from one shared counter.
    """

    __slots__ = ("_count", "_counts", "_error", "_lock", "_messages", "_next", "_thread")

    def __init__(self, count: Callable[[Message], int], messages: Sequence[Message]) -> None:
        self._count = count
        self._messages = messages
        self._counts = [0] * len(messages)
        self._next = itertools.count()
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="hermes-store-count", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        total = len(self._messages)
        try:
            while self._error is None:
                with self._lock:
                    index = next(self._next)
                if index >= total:
                    return
                self._counts[index] = self._count(self._messages[index])
        except BaseException as exc:  # re-raised in the caller's thread by result()
            self._error = exc

    def result(self) -> list[int]:
        self._work()  # the caller's thread counts what the worker has not reached yet
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._counts


class MessageRooms(SessionRooms):
    """Messages (one row each, stored once), guards, usage and engine state."""

    def _window_counts(self, session_id: str, size: int) -> dict[tuple[Any, ...], int]:
        """Token counts of the window's head and tail rows (``size`` each: a compressed
        window keeps a head and a tail), keyed by their column values."""
        known: dict[tuple[Any, ...], int] = {}
        for order in ("ASC", "DESC"):
            rows = self._conn().execute(
                f"SELECT token_count, {MSG_COLS} FROM messages "
                f"WHERE session_id = ? AND active = 1 ORDER BY seq {order} LIMIT ?",
                (session_id, size),
            )
            known.update((tuple(row[1:]), row[0]) for row in rows)
        return known

    @staticmethod
    def _insert(
        conn: sqlite3.Connection,
        session_id: str,
        prepared: list[Prepared],
        now: float,
        *,
        count_later: Sequence[Message] | None = None,
        positions: Sequence[int] | None = None,
        base: int | None = None,
    ) -> list[int]:
        """Insert ``prepared`` rows in order; returns their ids.  With ``count_later`` the
        rows were prepared with a count of 0: their messages are counted on a worker thread
        while the one ``INSERT … SELECT`` runs (it releases the GIL for the whole FTS sync;
        starting earlier would make every staged row wait for the GIL), then set here.
        Row *i* gets the window order ``base + positions[i] + 1`` (ascending positions;
        by default right after the session's last row)."""
        if not prepared:
            return []
        if base is None:
            base = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
        where = range(len(prepared)) if positions is None else positions
        start = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.execute("DELETE FROM temp.message_stage")
        conn.executemany(
            _STAGE_MESSAGE,
            ((pos + 1, tokens, *values) for pos, (tokens, values) in zip(where, prepared,
                                                                          strict=True)),
        )
        counting = None
        if count_later is not None:
            counting = _BackgroundCount(count_tokens, count_later)
        conn.execute(_MOVE_STAGED, (session_id, now, base))
        conn.execute("DELETE FROM temp.message_stage")
        end = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
        if end - start == len(prepared):
            ids = list(range(start + 1, end + 1))
        else:
            rows = conn.execute(  # rowids were not consecutive (only near the 2**63 limit)
                "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, start),
            ).fetchall()
            ids = [r[0] for r in rows]
        if counting is not None:
            conn.executemany(_SET_TOKEN_COUNT, zip(counting.result(), ids, strict=True))
        if len(prepared) < DEFER_TRIGRAM_MIN:
            catch_up_trigram(conn, len(prepared) + CATCH_UP_PER_WRITE)
        return ids

    @errors("appending messages")
    def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None = None,
    ) -> list[int]:
        count_later = (
            token_counts is None
            and not isinstance(messages, dict | str | bytes)
            and len(messages) >= _BACKGROUND_COUNT_MIN
            and (os.cpu_count() or 1) > 1
        )
        prepared = prepare_messages(messages, token_counts, count=not count_later)
        now = time.time()
        markers = self._markers()
        with self._tx() as conn:
            # Inside the write lock: the cached marker is current iff nothing changed since
            # it was computed; then this append's marker follows from it (no recount).
            version = self._version(conn)
            cur = conn.execute(
                "UPDATE sessions SET last_activity_at = ?, last_activity_kind = 'message' "
                "WHERE id = ? AND coalesce(end_reason, '') <> 'compression'",
                (now, session_id),
            )
            if cur.rowcount == 0:
                self._require(conn, session_id)
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was written"))
            ids = self._insert(
                conn, session_id, prepared, now, count_later=messages if count_later else None
            )
        # The markers cached before this append stay right (this session's follow from it),
        # so a process serving many sessions does not recount each one after the others'
        # appends; any marker cached before another change is dropped.
        after = (version[0], conn.total_changes)
        for key, (seen, marker) in list(markers.items()):
            if seen != version:
                del markers[key]
            elif marker.session_id == session_id:
                markers[key] = (after, WindowMarker(
                    session_id, max([marker.last_message_id, *ids]),
                    marker.active_count + len(ids), marker.active_id_sum + sum(ids)))
            else:
                markers[key] = (after, marker)
        return ids

    @errors("reading the window")
    def window_marker(self, session_id: str) -> WindowMarker:
        conn = self._conn()
        # Unchanged since this connection last computed it (no commit by any other
        # connection, no change through this one): the same marker, without counting the
        # window (issue 15: an append must not cost O(window)).  The version is read before
        # the queries, so a commit landing in between only makes the next call recompute.
        version = self._version(conn)
        cached = self._markers().get(session_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        marker = self._marker(conn, session_id)
        markers = self._markers()
        if len(markers) >= _MARKER_CACHE_SIZE:
            markers.pop(next(iter(markers)))  # the oldest entry
        markers[session_id] = (version, marker)
        return marker

    def _marker_row(self, conn: sqlite3.Connection, session_id: str) -> Sequence[Any] | None:
        row: Sequence[Any] | None = conn.execute(
            "SELECT end_reason, "
            "(SELECT coalesce(max(id), 0) FROM messages WHERE session_id = s.id), "
            "(SELECT count(*) FROM messages WHERE session_id = s.id AND active = 1), "
            "(SELECT coalesce(sum(id), 0) FROM messages WHERE session_id = s.id AND active = 1) "
            "FROM sessions s WHERE s.id = ?",
            (session_id,),
        ).fetchone()
        return row

    def active_messages(self, session_id: str) -> list[Message]:
        return self.active_messages_counted(session_id)[0]

    @errors("reading the window")
    def active_messages_counted(self, session_id: str) -> tuple[list[Message], list[int]]:
        conn = self._conn()
        rows = conn.execute(
            f"SELECT token_count, {MSG_COLS} FROM messages WHERE session_id = ? AND active = 1 "
            + WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        if not rows:
            self._require(conn, session_id)
        return [decode_row(r[1:]) for r in rows], [int(r[0]) for r in rows]

    @errors("counting window tokens")
    def active_token_count(self, session_id: str) -> int:
        conn = self._conn()
        self._require(conn, session_id)
        row = conn.execute(
            "SELECT coalesce(sum(token_count), 0) FROM messages "
            "WHERE session_id = ? AND active = 1",
            (session_id,),
        ).fetchone()
        return int(row[0])

    @errors("reading messages")
    def all_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        conn = self._conn()
        self._require(conn, session_id)
        active = "" if include_inactive else " AND active = 1"
        rows = conn.execute(
            f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ?{active} "
            + WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        return [stored_from_row(r) for r in rows]

    @errors("reading lineage messages")
    def lineage_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        """Every row of the lineage (root first), in order — what a history reader sees."""
        ids = self.lineage(session_id)
        marks = ", ".join("?" * len(ids))
        active = "" if include_inactive else " AND active = 1"
        rows = (
            self._conn()
            .execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id IN ({marks}){active} "
                "ORDER BY id",
                ids,
            )
            .fetchall()
        )
        return [stored_from_row(r) for r in rows]

    # -- guards and usage -------------------------------------------------------------------

    @errors("reading guards")
    def read_guards(self, session_id: str) -> Guards:
        row = (
            self._conn()
            .execute(
                "SELECT cooldown_until, fallback_streak, ineffective_count, ineffective_tokens "
                "FROM sessions WHERE id = ?",
                (session_id,),
            )
            .fetchone()
        )
        if row is None:
            raise self._missing(session_id)
        return Guards(row[0], row[1], row[2], row[3])

    @errors("writing guards")
    def write_guards(self, session_id: str, guards: Guards) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET cooldown_until = ?, fallback_streak = ?, "
                "ineffective_count = ?, ineffective_tokens = ? WHERE id = ?",
                (*guard_values(guards), session_id),
            )
            if cur.rowcount == 0:
                raise self._missing(session_id)

    @errors("recording usage")
    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?, "
                "cache_write_tokens = cache_write_tokens + ?, "
                "reasoning_tokens = reasoning_tokens + ?, cost_usd = cost_usd + ? "
                "WHERE id = ?",
                (int(input_tokens), int(output_tokens), int(cache_read_tokens),
                 int(cache_write_tokens), int(reasoning_tokens), float(cost_usd), session_id),
            )
            if cur.rowcount == 0:
                raise self._missing(session_id)

    # -- engine state -----------------------------------------------------------------------

    @errors("reading engine state")
    def get_engine_state(self, session_id: str, engine: str) -> dict[str, Any]:
        row = (
            self._conn()
            .execute(
                "SELECT state FROM engine_state WHERE session_id = ? AND engine = ?",
                (session_id, engine),
            )
            .fetchone()
        )
        return dict(json.loads(row[0])) if row else {}

    @errors("writing engine state")
    def set_engine_state(self, session_id: str, engine: str, state: dict[str, Any]) -> None:
        text = encode_state(engine, state)
        with self._tx() as conn:
            self._require(conn, session_id)
            conn.execute(
                "INSERT OR REPLACE INTO engine_state (session_id, engine, state, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, engine, text, time.time()),
            )

