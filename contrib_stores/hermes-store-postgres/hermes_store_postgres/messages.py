"""The PostgreSQL store's messages room: append, the window, guards, usage and engine state
(R-5.3, R-9.2).

A batch goes in as ``COPY`` into a temporary staging table and **one** ``INSERT … SELECT``
from it: three round trips and one insert statement however long the batch.  Appends to
one session serialise on its ``sessions`` row (the ``UPDATE`` that stamps its activity
takes the row lock first), so window positions (``seq``) and ids grow in commit order
within a session even with many hosts writing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hermes_host.models import Message
from hermes_host.store import Guards, StaleSessionError, StoredMessage, WindowMarker
from hermes_host.store.codec import ROW_COLUMNS, STORED_COLUMNS, decode_row, stored_from_row
from hermes_host.store.rules import Prepared, encode_state, guard_values, prepare_messages
from hermes_store_postgres._base import MSG_COLS, NOW, WINDOW_ORDER
from hermes_store_postgres.bounded import Conn
from hermes_store_postgres.failures import errors
from hermes_store_postgres.schema import SEARCH_VECTOR
from hermes_store_postgres.sessions import SessionRooms

__all__ = ["BULK_MIN", "DEFER_INDEX_MIN", "MessageRooms"]

_TYPES = {"observed": "integer"}
STAGE_MIN = 64
"""Batches of at least this many rows go through COPY; smaller ones (a turn's two or three
messages) bind arrays to one ``INSERT … SELECT FROM unnest(…)``, one round trip fewer."""
_UNNEST = ", ".join(
    ["%s::bigint[]", "%s::integer[]"] + [f"%s::{_TYPES.get(c, 'text')}[]" for c in ROW_COLUMNS]
)
_INSERT_ARRAYS = (
    f"INSERT INTO messages (session_id, timestamp, seq, token_count, {MSG_COLS}, "
    "search_vector) "
    "SELECT %s, %s, {base} + u.pos, u.tokens, "
    f"{', '.join('u.' + c for c in ROW_COLUMNS)}, {SEARCH_VECTOR.format(content='u.content')} "
    f"FROM unnest({_UNNEST}) AS u(pos, tokens, {MSG_COLS}) ORDER BY u.pos "
    "RETURNING id, seq"
)
_INSERT_ARRAYS_AT = _INSERT_ARRAYS.format(base="%s").encode()
_INSERT_ARRAYS_NEXT = _INSERT_ARRAYS.format(  # after the session's last row, one round trip
    base="(SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s)").encode()
_TOUCH = (
    f"UPDATE sessions SET last_activity_at = {NOW}, last_activity_kind = 'message' "
    "WHERE id = %s AND end_reason IS DISTINCT FROM 'compression' "
    "RETURNING last_activity_at"
).encode()
_INSERT_TOUCHED = (  # a turn's append, sent with _TOUCH in one pipeline: the rows take the
    # activity time _TOUCH wrote, and go in only if it found the session live
    f"INSERT INTO messages (session_id, timestamp, seq, token_count, {MSG_COLS}, "
    "search_vector) "
    "SELECT %s, s.last_activity_at, "
    "(SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s) + u.pos, u.tokens, "
    f"{', '.join('u.' + c for c in ROW_COLUMNS)}, {SEARCH_VECTOR.format(content='u.content')} "
    "FROM (SELECT last_activity_at FROM sessions WHERE id = %s "
    "AND end_reason IS DISTINCT FROM 'compression') s, "
    f"unnest({_UNNEST}) AS u(pos, tokens, {MSG_COLS}) ORDER BY u.pos "
    "RETURNING id, seq"
).encode()
_STAGE = "hermes_append"
_STAGE_DDL = (
    f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (pos bigint, tokens integer, "
    + ", ".join(f"{c} {_TYPES.get(c, 'text')}" for c in ROW_COLUMNS)
    + ") ON COMMIT DELETE ROWS"
).encode()
_COPY = f"COPY {_STAGE} (pos, tokens, {MSG_COLS}) FROM STDIN".encode()
_INSERT = (  # consumes the staged rows: a second batch in one transaction starts empty
    f"WITH u AS (DELETE FROM {_STAGE} RETURNING *) "
    f"INSERT INTO messages (session_id, timestamp, seq, token_count, {MSG_COLS}, search_vector) "
    f"SELECT %s, %s, %s + u.pos, u.tokens, {', '.join('u.' + c for c in ROW_COLUMNS)}, "
    "{vector} FROM u ORDER BY u.pos "
    "RETURNING id, seq"
)
_INSERT_INDEXED = _INSERT.format(vector=SEARCH_VECTOR.format(content="u.content")).encode()
_INSERT_PENDING = _INSERT.format(vector="NULL").encode()
DEFER_INDEX_MIN = 256
"""Batches of at least this many rows go in *pending* (``search_vector`` NULL, in neither
search index) and are indexed by the catch-up (:mod:`hermes_store_postgres.indexing`):
maintaining the two GIN indexes row by row was ≈ 85 % of a bulk append's time.  Searches
scan the pending rows meanwhile, so nothing committed is ever unsearchable."""
BULK_MIN = DEFER_INDEX_MIN
"""Appends of at least this many messages are bulk writes a user started (``sessions
import``, a branch of a long window, a tool's import): they run without ``statement_timeout``
and without the client's answer limit (:func:`~hermes_store_postgres.bounded.bulk`;
``lock_timeout`` stays), so a big import on a slow server is not cut off half-way (200,000
messages: ≈ 7 s here, two statements of seconds each).  A turn's append (a few messages)
keeps every limit."""


class MessageRooms(SessionRooms):
    """Messages (one row each, stored once), guards, usage and engine state."""

    def _window_counts(self, session_id: str, size: int) -> dict[tuple[Any, ...], int]:
        """Token counts of the window's head and tail rows (``size`` each: a compressed
        window keeps a head and a tail), keyed by their column values."""
        known: dict[tuple[Any, ...], int] = {}
        with self._read() as conn:
            for order in ("ASC", "DESC"):
                rows = conn.execute(
                    f"SELECT token_count, {MSG_COLS} FROM messages WHERE session_id = %s "
                    f"AND active ORDER BY seq {order} LIMIT %s".encode(),
                    (session_id, size),
                ).fetchall()
                known.update((tuple(row[1:]), int(row[0])) for row in rows)
        return known

    @staticmethod
    def _insert(
        conn: Conn,
        session_id: str,
        prepared: Sequence[Prepared],
        now: float,
        *,
        positions: Sequence[int] | None = None,
        base: int | None = None,
    ) -> list[int]:
        """Insert ``prepared`` rows in order; returns their ids.  Row *i* gets the window
        order ``base + positions[i] + 1`` (by default right after the session's last row)."""
        if not prepared:
            return []
        where = range(len(prepared)) if positions is None else positions
        if len(prepared) < STAGE_MIN:
            # (the caller holds the session row's lock: no other append moves max(seq))
            columns: list[list[Any]] = [[p + 1 for p in where], [t for t, _ in prepared]]
            columns += [list(c) for c in zip(*(v for _, v in prepared), strict=True)]
            insert, at = ((_INSERT_ARRAYS_NEXT, session_id) if base is None
                          else (_INSERT_ARRAYS_AT, base))
            rows = conn.execute(insert, (session_id, now, at, *columns)).fetchall()
            return [int(r[0]) for r in sorted(rows, key=lambda r: int(r[1]))]
        if base is None:
            row = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s",
                (session_id,),
            ).fetchone()
            base = int(row[0]) if row else 0
        # COPY into a per-connection staging table (emptied at commit), then one
        # INSERT … SELECT: COPY's row format is written by psycopg's C code, where bound
        # arrays are dumped element by element in Python (≈ 56 ms of a 1,000-row batch).
        conn.execute(_STAGE_DDL)
        with conn.cursor().copy(_COPY) as copy:
            for pos, (tokens, values) in zip(where, prepared, strict=True):
                copy.write_row((pos + 1, tokens, *values))
        insert = _INSERT_PENDING if len(prepared) >= DEFER_INDEX_MIN else _INSERT_INDEXED
        rows = conn.execute(insert, (session_id, now, base)).fetchall()
        return [int(r[0]) for r in sorted(rows, key=lambda r: int(r[1]))]

    @errors("appending messages")
    def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None = None,
    ) -> list[int]:
        prepared = prepare_messages(messages, token_counts)
        if 0 < len(prepared) < STAGE_MIN:
            return self._append_small(session_id, prepared)
        with self._bulk_tx() if len(prepared) >= BULK_MIN else self._tx() as conn:
            row = conn.execute(_TOUCH, (session_id,)).fetchone()
            if row is None:
                self._require(conn, session_id)
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was written"))
            return self._insert(conn, session_id, prepared, float(row[0]))

    def _append_small(self, session_id: str, prepared: Sequence[Prepared]) -> list[int]:
        """A turn's append in one network round trip: ``BEGIN``, the session row's
        ``UPDATE`` (its lock orders appends to the session), the ``INSERT`` and ``COMMIT``
        go out together in pipeline mode.  The ``INSERT``'s ``max(seq)`` runs after the
        ``UPDATE`` holds the row lock, in a later statement, so it sees every append that
        committed before."""
        columns: list[list[Any]] = [list(range(1, len(prepared) + 1)),
                                    [t for t, _ in prepared]]
        columns += [list(c) for c in zip(*(v for _, v in prepared), strict=True)]
        with self._connection() as conn:
            with conn.pipeline(), conn.transaction():
                touched = conn.execute(_TOUCH, (session_id,))
                inserted = conn.execute(
                    _INSERT_TOUCHED, (session_id, session_id, session_id, *columns))
            if touched.fetchone() is None:
                self._require(conn, session_id)
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was written"))
            rows = inserted.fetchall()
        return [int(r[0]) for r in sorted(rows, key=lambda r: int(r[1]))]

    @errors("reading the window")
    def window_marker(self, session_id: str) -> WindowMarker:
        with self._read() as conn:
            return self._marker(conn, session_id)

    def _marker_row(self, conn: Conn, session_id: str) -> Sequence[Any] | None:
        return conn.execute(
            "SELECT end_reason, "
            "(SELECT coalesce(max(id), 0) FROM messages WHERE session_id = s.id), "
            "(SELECT count(*) FROM messages WHERE session_id = s.id AND active), "
            "(SELECT coalesce(sum(id), 0) FROM messages WHERE session_id = s.id AND active) "
            "FROM sessions s WHERE s.id = %s",
            (session_id,),
        ).fetchone()

    def active_messages(self, session_id: str) -> list[Message]:
        return self.active_messages_counted(session_id)[0]

    @errors("reading the window")
    def active_messages_counted(self, session_id: str) -> tuple[list[Message], list[int]]:
        """The window and, in the same order, each row's stored ``token_count``, in the
        window's one query (:class:`~hermes_host.store.base.CountedWindowStore`, issue 32):
        a resumed session reuses them instead of tokenising its window again."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT token_count, {MSG_COLS} FROM messages WHERE session_id = %s "
                f"AND active {WINDOW_ORDER}".encode(),
                (session_id,),
            ).fetchall()
            if not rows:
                self._require(conn, session_id)
        return [decode_row(r[1:]) for r in rows], [int(r[0]) for r in rows]

    @errors("counting window tokens")
    def active_token_count(self, session_id: str) -> int:
        with self._read() as conn:
            self._require(conn, session_id)
            row = conn.execute(
                "SELECT coalesce(sum(token_count), 0) FROM messages "
                "WHERE session_id = %s AND active",
                (session_id,),
            ).fetchone()
        return int(row[0]) if row else 0

    @errors("reading messages")
    def all_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        active = "" if include_inactive else " AND active"
        with self._read() as conn:
            self._require(conn, session_id)
            rows = conn.execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = %s{active} "
                f"{WINDOW_ORDER}".encode(),
                (session_id,),
            ).fetchall()
        return [stored_from_row(r) for r in rows]

    @errors("reading lineage messages")
    def lineage_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        """Every row of the lineage (root first), in order — what a history reader sees."""
        active = "" if include_inactive else " AND active"
        with self._read() as conn:
            ids = self._lineage(conn, session_id)
            rows = conn.execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ANY(%s){active} "
                "ORDER BY id".encode(),
                (ids,),
            ).fetchall()
        return [stored_from_row(r) for r in rows]

    # -- guards and usage -------------------------------------------------------------------

    @errors("reading guards")
    def read_guards(self, session_id: str) -> Guards:
        with self._read() as conn:
            row = conn.execute(
                "SELECT cooldown_until, fallback_streak, ineffective_count, ineffective_tokens "
                "FROM sessions WHERE id = %s",
                (session_id,),
            ).fetchone()
        if row is None:
            raise self._missing(session_id)
        return Guards(row[0], int(row[1]), int(row[2]),
                      None if row[3] is None else int(row[3]))

    @errors("writing guards")
    def write_guards(self, session_id: str, guards: Guards) -> None:
        with self._one() as conn:
            cur = conn.execute(
                "UPDATE sessions SET cooldown_until = %s, fallback_streak = %s, "
                "ineffective_count = %s, ineffective_tokens = %s WHERE id = %s",
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
        with self._one() as conn:
            cur = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + %s, "
                "output_tokens = output_tokens + %s, "
                "cache_read_tokens = cache_read_tokens + %s, "
                "cache_write_tokens = cache_write_tokens + %s, "
                "reasoning_tokens = reasoning_tokens + %s, cost_usd = cost_usd + %s "
                "WHERE id = %s",
                (int(input_tokens), int(output_tokens), int(cache_read_tokens),
                 int(cache_write_tokens), int(reasoning_tokens), float(cost_usd), session_id),
            )
            if cur.rowcount == 0:
                raise self._missing(session_id)

    # -- engine state -----------------------------------------------------------------------

    @errors("reading engine state")
    def get_engine_state(self, session_id: str, engine: str) -> dict[str, Any]:
        with self._read() as conn:
            row = conn.execute(
                "SELECT state FROM engine_state WHERE session_id = %s AND engine = %s",
                (session_id, engine),
            ).fetchone()
        return dict(json.loads(row[0])) if row else {}

    @errors("writing engine state")
    def set_engine_state(self, session_id: str, engine: str, state: dict[str, Any]) -> None:
        text = encode_state(engine, state)
        with self._tx() as conn:
            self._require(conn, session_id)
            conn.execute(
                "INSERT INTO engine_state (session_id, engine, state, updated_at) "
                f"VALUES (%s, %s, %s, {NOW}) ON CONFLICT (session_id, engine) "
                "DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at".encode(),
                (session_id, engine, text),
            )
