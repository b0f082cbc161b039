"""The PostgreSQL store's base room: its pool, transactions and clock.

Every connection runs in autocommit mode (:mod:`.pool`); a method that writes, or reads
several statements, opens one explicit transaction (``READ COMMITTED`` plus row locks where
a decision depends on a row).  How a failure is reported lives in :mod:`.failures`, how long
the store waits for the server in :mod:`.bounded` (a bulk operation a user started runs in
:meth:`PostgresBase._bulk_tx`, without a statement time limit).

Time comes from the database (``clock_timestamp()``), never from the host: leases expire
by one clock however many machines share the store.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import PoolTimeout

from hermes_host.store import DEFAULT_LEASE_TTL
from hermes_host.store.codec import MSG_COLS, WINDOW_ORDER
from hermes_host.store.rooms import SharedRooms
from hermes_store_postgres.bounded import Conn, bulk, unbounded
from hermes_store_postgres.failures import Unreachable, translate
from hermes_store_postgres.pool import StorePool
from hermes_store_postgres.schema import migrate
from hermes_store_postgres.settings import parse_url, server_setting

__all__ = ["MSG_COLS", "NOW", "WINDOW_ORDER", "PostgresBase"]

log = logging.getLogger("hermes_store_postgres")

NOW = "extract(epoch FROM clock_timestamp())::double precision"
"""The database's clock, in Unix seconds (what every stored time is)."""


class PostgresBase(SharedRooms[Conn]):
    """Pool, transactions and the helpers every room uses."""

    def __init__(self, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.settings = parse_url(url)
        self.schema = self.settings.schema
        self.location = self.settings.shown
        self.lease_ttl = float(lease_ttl)
        self._pool = StorePool(self.settings)
        self._open()

    def _open(self) -> None:
        try:
            # One direct connection first: a refused login or an unreachable server fails
            # now with the server's own reason (a pool would only report a timeout).
            with self._pool.direct() as conn, unbounded(conn):
                # Hosts starting together wait for each other's migration (an advisory
                # lock), however long it takes: no time limit on this connection.
                migrate(conn, self.schema, self.location)
            self._warn_unread_limit()
            # The server just answered: the pool fills in the background.
            self._pool.open()
        except BaseException as exc:
            self.close()
            if isinstance(exc, psycopg.Error | PoolTimeout | Unreachable):
                raise translate(self.settings, exc, "opening the store") from None
            raise

    def _warn_unread_limit(self) -> None:
        """The server took the URL's ``-c statement_timeout=…`` but the store cannot read it
        (:func:`~hermes_store_postgres.settings.setting_seconds`: not PostgreSQL's number and
        unit grammar as the store knows it): say once that the client waits without limit."""
        own = server_setting(self.settings.options, "statement_timeout")
        if own is not None and self.settings.statement_limit is None:
            log.warning(
                "%s: cannot read statement_timeout=%s in the URL's options, so the store "
                "sets no limit of its own on waiting for the server's answer (a server that "
                "stops answering mid-statement holds the call until it answers again); "
                "write it as a number with a unit (us, ms, s, min, h, d), e.g. 30s",
                self.location, own)

    @classmethod
    def from_url(cls, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> Any:
        """Open ``postgresql://…`` (the ``hermes_host.stores`` entry)."""
        return cls(url, lease_ttl=lease_ttl)

    # -- connections and transactions -------------------------------------------------------

    def _connection(self) -> AbstractContextManager[Conn]:
        """A pooled connection, or a direct one when the pool has none to give
        (:meth:`StorePool.connection <hermes_store_postgres.pool.StorePool.connection>`)."""
        return self._pool.connection()

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

    @contextmanager
    def _bulk_tx(self) -> Iterator[Conn]:
        """One transaction of a bulk operation a user started (an import's append, a
        migration's batch): no ``statement_timeout`` and no answer limit for it
        (:func:`~hermes_store_postgres.bounded.bulk`; ``lock_timeout`` stays), the
        connection's own limits back when it ends."""
        with self._connection() as conn, bulk(conn), conn.transaction():
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
