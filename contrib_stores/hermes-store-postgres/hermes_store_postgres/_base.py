"""The PostgreSQL store's connections, transactions, clock and error translation.

One :class:`psycopg_pool.ConnectionPool` per store, shared by its threads.  Every
connection runs in autocommit mode with ``search_path`` set to the store's schema (then
``public``); a method that writes, or reads several statements, opens one explicit
transaction (``READ COMMITTED`` plus row locks where a decision depends on a row).  A
connection idle for more than :data:`CHECK_IDLE` is checked on checkout, so one broken by a
server restart or ``pg_terminate_backend`` is replaced instead of failing the next turn.

Time comes from the database (``clock_timestamp()``), never from the host: leases expire
by one clock however many machines share the store.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from hermes_host.store import DEFAULT_LEASE_TTL, StoreError
from hermes_host.store.codec import MSG_COLS, WINDOW_ORDER
from hermes_host.store.errors import translating
from hermes_host.store.rooms import SharedRooms
from hermes_store_postgres.schema import migrate
from hermes_store_postgres.settings import StoreSettings, parse_url

__all__ = ["MSG_COLS", "NOW", "WINDOW_ORDER", "Conn", "PostgresBase", "errors"]

Conn = psycopg.Connection[tuple[Any, ...]]

NOW = "extract(epoch FROM clock_timestamp())::double precision"
"""The database's clock, in Unix seconds (what every stored time is)."""


def _why(exc: BaseException) -> str:
    if isinstance(exc, PoolTimeout):
        return (
            "no database connection became available in time (the server is down or "
            "unreachable, or every pooled connection is busy: raise pool_max)"
        )
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return "the store's role lacks a privilege on its schema (it should own the schema)"
    if isinstance(exc, psycopg.errors.AdminShutdown | psycopg.errors.CrashShutdown):
        return "the database server closed the connection (restart or terminated backend)"
    if isinstance(exc, psycopg.OperationalError):
        return "lost or could not open the database connection"
    if isinstance(exc, psycopg.errors.DiskFull):
        return "the database server's disk is full"
    return "database error"


def translate(settings: StoreSettings, exc: BaseException, action: str) -> StoreError:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if settings.password:
        text = text.replace(settings.password, "***")
    return StoreError(
        f"{settings.shown}: {_why(exc)} (while {action}: {text}); the transaction was rolled "
        "back, so nothing of it was stored"
    )


errors = translating(
    (psycopg.Error, PoolTimeout), lambda store, exc, action: translate(store.settings, exc, action)
)
"""Turn any driver or pool error inside a store method into a user-facing StoreError."""


CHECK_IDLE = 0.5
"""A pooled connection idle for longer than this (seconds) is checked (one empty query) when
it is checked out: one broken by a server restart or ``pg_terminate_backend`` between two
turns is replaced instead of failing the next turn.  A connection back in the pool for less
(the calls of one turn: marker, guards, append, usage) is not: that would add a round trip
to every store call."""


class _Pooled(psycopg.Connection[tuple[Any, ...]]):
    returned_at: float = 0.0
    """``time.monotonic()`` when the pool last got the connection back."""


def _stamp_return(conn: Conn) -> None:
    conn.returned_at = time.monotonic()  # type: ignore[attr-defined]


def _check_if_idle(conn: Conn) -> None:
    """The pool's check on checkout.  A connection the server closed while it sat in the
    pool (a restart, ``pg_terminate_backend``: the backend sends its FATAL notice first) has
    something to read on its socket, which an idle autocommit connection never has — a
    local test with no round trip; only a connection idle past :data:`CHECK_IDLE` also
    gets the empty query."""
    readable = bool(select.select([conn.fileno()], [], [], 0)[0])
    if readable or time.monotonic() - getattr(conn, "returned_at", 0.0) > CHECK_IDLE:
        ConnectionPool.check_connection(conn)


class PostgresBase(SharedRooms[Conn]):
    """Pool, transactions and the helpers every room uses."""

    def __init__(self, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.settings = parse_url(url)
        self.schema = self.settings.schema
        self.location = self.settings.shown
        self.lease_ttl = float(lease_ttl)
        params = conninfo_to_dict(self.settings.conninfo)
        path = f"-c search_path={self.schema},public"
        params["options"] = f"{params['options']} {path}" if params.get("options") else path
        params.setdefault("application_name", "hermes-host")
        params.setdefault("connect_timeout", "10")
        self._conninfo = make_conninfo("", **params)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self._conninfo,
            min_size=self.settings.pool_min,
            max_size=self.settings.pool_max,
            timeout=self.settings.pool_timeout,
            kwargs={"autocommit": True},
            connection_class=_Pooled,
            check=_check_if_idle,
            reset=_stamp_return,
            open=False,
            name=f"hermes-{self.schema}",
        )
        self._open()

    def _open(self) -> None:
        try:
            # One direct connection first: a refused login or an unreachable server fails
            # now with the server's own reason (a pool would only report a timeout).
            with psycopg.connect(self._conninfo, autocommit=True) as conn:
                migrate(conn, self.schema, self.location)
            self._pool.open(wait=True, timeout=self.settings.pool_timeout)
        except BaseException as exc:
            self._pool.close()
            if isinstance(exc, psycopg.Error | PoolTimeout):
                raise translate(self.settings, exc, "opening the store") from None
            raise

    @classmethod
    def from_url(cls, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> Any:
        """Open ``postgresql://…`` (the ``hermes_host.stores`` entry)."""
        return cls(url, lease_ttl=lease_ttl)

    # -- connections and transactions -------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        """A pooled connection; when the pool cannot deliver one in ``pool_timeout`` (the
        server was down and the pool is still backing off its reconnects, or every
        connection is busy), one direct connection: it either works — the turn goes on —
        or fails with the server's own reason instead of a bare timeout."""
        entered = False
        try:
            with self._pool.connection() as conn:
                entered = True
                yield conn
            return
        except PoolTimeout:
            if entered:
                raise
        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        """A connection for single-statement reads (autocommit)."""
        with self._connection() as conn:
            yield conn

    @contextmanager
    def _one(self) -> Iterator[Conn]:
        """A connection for one statement that writes (autocommit: the statement is its own
        transaction, two round trips fewer than ``BEGIN`` … ``COMMIT``)."""
        with self._connection() as conn:
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[Conn]:
        """One transaction: all of it commits, or none of it."""
        with self._connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _now(conn: Conn) -> float:
        row = conn.execute(f"SELECT {NOW}").fetchone()
        assert row is not None
        return float(row[0])

    def _table(self, name: str) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(name))

    # -- the shared rooms' hooks (hermes_host.store.rooms) ----------------------------------

    def _exists(self, conn: Conn, session_id: str) -> bool:
        return conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,)).fetchone() \
            is not None

    def _title_owner(self, conn: Conn, title: str) -> str | None:
        row = conn.execute("SELECT id FROM sessions WHERE title = %s", (title,)).fetchone()
        return None if row is None else str(row[0])

    def _last_active(self, conn: Conn) -> str | None:
        row = conn.execute(
            "SELECT id FROM sessions WHERE NOT archived "
            "ORDER BY last_activity_at DESC, created_at DESC LIMIT 1"
        ).fetchone()
        return None if row is None else str(row[0])

    def _titled_rows(self, conn: Conn, prefix: str) -> Sequence[tuple[str, str]]:
        return conn.execute(
            "SELECT id, title FROM sessions WHERE left(title, %s) = %s", (len(prefix), prefix)
        ).fetchall()

    def _tip(self, conn: Conn, session_id: str) -> str:
        """Follow compression rotations to the newest session of the lineage (one query)."""
        row = conn.execute(
            "WITH RECURSIVE tip(id, end_reason, conv, depth) AS ("
            " SELECT id, end_reason, conversation_id, 0 FROM sessions WHERE id = %s"
            " UNION ALL"
            " SELECT c.id, c.end_reason, c.conversation_id, t.depth + 1 FROM tip t"
            " CROSS JOIN LATERAL (SELECT s.id, s.end_reason, s.conversation_id FROM sessions s"
            "  WHERE s.parent_session_id = t.id AND s.conversation_id = t.conv"
            "  ORDER BY s.created_at DESC, s.id DESC LIMIT 1) c"
            " WHERE t.end_reason = 'compression' AND t.depth < 100000)"
            " SELECT id FROM tip ORDER BY depth DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        return str(row[0]) if row else session_id
