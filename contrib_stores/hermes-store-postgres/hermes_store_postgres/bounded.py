"""Waiting for the server, bounded (issue 31 (4)).

libpq would wait for ever on a server stopped (``SIGSTOP``) or hung mid-statement, or on a
network that drops packets: the server's ``statement_timeout`` cannot fire then, and TCP
keepalives and ``tcp_user_timeout`` see a healthy peer (its kernel still acknowledges).  So
every connection of the store waits for an answer at most ``statement_timeout`` +
``ANSWER_GRACE`` (:attr:`StoreSettings.answer_within
<hermes_store_postgres.settings.StoreSettings.answer_within>`), then closes itself and
raises :class:`~hermes_store_postgres.failures.NoAnswer`; the pool's check of an idle
connection gets ``pool_timeout`` (:func:`check_within`).  Maintenance that may take as long
as it takes runs :func:`unbounded`; a bulk operation a user started (an import, a store
migration) runs :func:`bulk` (no statement or answer limit, ``lock_timeout`` kept).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from hermes_store_postgres.failures import NoAnswer

__all__ = ["BoundedConnection", "Conn", "bulk", "check_within", "unbounded"]

Conn = psycopg.Connection[tuple[Any, ...]]


class BoundedConnection(Conn):
    """A connection that waits for the server's answer to one operation (a statement, a
    commit, a COPY block) at most ``answer_within`` seconds (``None``: no limit).  Past the
    limit the connection is closed and :class:`NoAnswer` raised."""

    answer_within: float | None = None
    closed_by_store = False
    """Closed for want of an answer (the store reports it; the pool need not warn)."""

    def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
        limit = self.answer_within
        if not limit or args[1:] or kwargs.get("timeout") is not None:
            return super().wait(gen, *args, **kwargs)  # a caller's own timeout wins
        kwargs["timeout"] = limit
        # Did the server change nothing yet?  Only a statement inside an explicit
        # transaction (not its commit): the transaction can no longer commit.
        sure = (self.pgconn.transaction_status == psycopg.pq.TransactionStatus.INTRANS
                and getattr(gen, "__name__", "") not in ("_exit_gen", "_commit_gen"))
        try:
            return super().wait(gen, *args, **kwargs)
        except psycopg.errors._WaitTimeout:
            self.closed_by_store = True
            self.pgconn.finish()
            raise NoAnswer(limit, unsure=not sure) from None


@contextmanager
def _lifted(conn: Conn, settings: tuple[str, ...]) -> Iterator[None]:
    """``settings`` set to 0 (no limit) and no answer limit on ``conn`` until the block
    ends; ``RESET`` then restores the connection's own values (the store's, or the URL's
    ``options``).  Entered outside a transaction (``conn`` in autocommit mode): a ``SET``
    inside one would be undone by its rollback, and a ``RESET`` in an aborted one fails."""
    for name in settings:
        conn.execute(f"SET {name} = 0".encode())
    within = getattr(conn, "answer_within", None)
    conn.answer_within = None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        conn.answer_within = within  # type: ignore[attr-defined]
        try:
            for name in settings:
                conn.execute(f"RESET {name}".encode())
        except psycopg.Error:
            conn.close()  # never back in the pool without its limits


def unbounded(conn: Conn) -> AbstractContextManager[None]:
    """Maintenance on ``conn`` (a migration waiting for another host's, ``VACUUM``, the
    search indexes' catch-up) that may take as long as it takes: no ``lock_timeout``,
    ``statement_timeout`` or answer limit until the block ends (``RESET`` restores the
    connection's own)."""
    return _lifted(conn, ("lock_timeout", "statement_timeout"))


def bulk(conn: Conn) -> AbstractContextManager[None]:
    """A bulk write or read a user started (``sessions import``, a branch or append of at
    least :data:`~hermes_store_postgres.messages.BULK_MIN` messages, ``store migrate``):
    one statement over many rows may take as long as its size needs, so no
    ``statement_timeout`` and no answer limit until the block ends — but ``lock_timeout``
    stays: a bulk write does not wait for ever on a row another client holds.  A turn's
    own writes are never bulk."""
    return _lifted(conn, ("statement_timeout",))


def check_within(conn: Conn, seconds: float) -> None:
    """psycopg_pool's check (one empty query), given ``seconds`` to answer.  libpq would wait
    for ever on a server that accepts but never answers (a stopped — ``SIGSTOP`` — or hung
    server, packets dropped on the way): past the deadline a watchdog shuts the socket down,
    the query fails at once, and the pool replaces the connection."""
    fd = conn.fileno()
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        with lock:
            if state["done"]:
                return
            state["fired"] = True
            try:
                with socket.socket(fileno=os.dup(fd)) as sock:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        ConnectionPool.check_connection(conn)
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            fired = state["fired"]
    if fired:  # even if the answer came just in time: the socket is shut now
        raise psycopg.OperationalError(f"no answer to the pool's check within {seconds:g} s")
