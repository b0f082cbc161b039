"""The store's connections: one :class:`psycopg_pool.ConnectionPool` per store, shared by its
threads, and a direct connection when the pool has none to give — failing fast and named
(issue 31 (4)).

Every connection runs in autocommit mode with ``lock_timeout`` (10 s), ``statement_timeout``
(30 s) and ``search_path`` set to the store's schema (then ``public``); libpq's
``connect_timeout`` defaults to 3 s.  A call waits at most ``pool_timeout`` (1 s) for the
pool, and not at all while the pool knows the server is unreachable (:class:`_Reach`): it
opens a direct connection at once, which either works or fails with the server's own
reason.  An outage is logged once (INFO) when it starts and once when it ends, instead of
psycopg_pool's warning per retry (:class:`_Quiet`).  A connection idle for more than
:data:`CHECK_IDLE` is checked on checkout, so one broken by a server restart or
``pg_terminate_backend`` is replaced instead of failing the next turn.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from hermes_store_postgres.bounded import BoundedConnection, Conn, check_within
from hermes_store_postgres.failures import Unreachable, reason
from hermes_store_postgres.settings import StoreSettings

__all__ = ["CHECK_IDLE", "StorePool"]

log = logging.getLogger("hermes_store_postgres")

CHECK_IDLE = 0.5
"""A pooled connection idle for longer than this (seconds) is checked (one empty query) when
it is checked out: one broken by a server restart or ``pg_terminate_backend`` between two
turns is replaced instead of failing the next turn.  A connection back in the pool for less
(the calls of one turn: marker, guards, append, usage) is not: that would add a round trip
to every store call."""


# -- knowing when the server is down --------------------------------------------------------


class _Reach:
    """What one store knows of its server.  ``pool_down``: the pool's own last connection
    attempt failed — a call then does not wait for the pool (it would wait ``pool_timeout``
    for a connection the pool cannot make) but opens a direct connection at once, which
    either works or fails with the server's reason.  An outage is logged once (INFO) when it
    starts and once when it ends; the pool's warning per retry is silenced (:class:`_Quiet`)."""

    def __init__(self, settings: StoreSettings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self.pool_down = False
        self.down_since: float | None = None

    def failed(self, exc: BaseException, *, pool: bool) -> None:
        with self._lock:
            first = self.down_since is None
            if first:
                self.down_since = time.monotonic()
            if pool:
                self.pool_down = True
        (log.info if first else log.debug)(
            "cannot connect to PostgreSQL at %s (%s)%s", self._settings.server,
            reason(self._settings, exc),
            "; store calls fail at once until it is back" if first else "")

    def succeeded(self, *, pool: bool) -> None:
        with self._lock:
            since, self.down_since = self.down_since, None
            if pool:
                self.pool_down = False
        if since is not None:
            log.info("PostgreSQL at %s is reachable again (after %.1f s)",
                     self._settings.server, time.monotonic() - since)


class _Pooled(BoundedConnection):
    returned_at: float = 0.0
    """``time.monotonic()`` when the pool last got the connection back."""
    reach: ClassVar[_Reach | None] = None
    """The store whose pool makes connections of this class (a subclass per store)."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
        """psycopg's ``connect``, telling the store whether the pool reached the server."""
        try:
            conn = super().connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            if cls.reach is not None:
                cls.reach.failed(exc, pool=True)
            raise
        if cls.reach is not None:
            cls.reach.succeeded(pool=True)
        return conn


class _Quiet(logging.Filter):
    """Drops psycopg_pool's warning per failed (re)connection attempt of this package's
    pools — about one a second while a server is down, each with libpq's two-line text.
    The store says it once instead (the failing call's StoreError; :class:`_Reach`'s INFO
    line).  Also the pool's "discarding closed connection", and psycopg's "error ignored
    terminating" a pipeline, for a connection the store closed because the server did not
    answer (:class:`~hermes_store_postgres.bounded.BoundedConnection`: the StoreError says
    so)."""

    _MESSAGES = ("error connecting in %r", "reconnection attempt in pool %r failed")

    def __init__(self) -> None:
        super().__init__()
        self.pools: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        with self._lock:
            self.pools[name] += 1

    def remove(self, name: str) -> None:
        with self._lock:
            self.pools[name] -= 1
            if self.pools[name] <= 0:
                del self.pools[name]

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (isinstance(record.msg, str) and isinstance(args, tuple) and args
                and record.msg.startswith(("discarding closed", "error ignored terminating"))
                and getattr(getattr(args[0], "_conn", args[0]), "closed_by_store", False)):
            return False  # a connection the store closed, a pipeline on it: reported
        return not (
            isinstance(record.msg, str) and record.msg.startswith(self._MESSAGES)
            and isinstance(args, tuple) and bool(args) and isinstance(args[0], str)
            and args[0] in self.pools
        )


_QUIET = _Quiet()
logging.getLogger("psycopg.pool").addFilter(_QUIET)
logging.getLogger("psycopg").addFilter(_QUIET)


# -- the pool's check on checkout -----------------------------------------------------------


def _stamp_return(conn: Conn) -> None:
    conn.returned_at = time.monotonic()  # type: ignore[attr-defined]


def _check_if_idle(seconds: float) -> Callable[[Conn], None]:
    """The pool's check on checkout.  A connection the server closed while it sat in the
    pool (a restart, ``pg_terminate_backend``: the backend sends its FATAL notice first) has
    something to read on its socket, which an idle autocommit connection never has — a
    local test with no round trip; only a connection idle past :data:`CHECK_IDLE` also
    gets the empty query, which must answer within ``seconds`` (``pool_timeout``)."""

    def check(conn: Conn) -> None:
        readable = bool(select.select([conn.fileno()], [], [], 0)[0])
        if readable or time.monotonic() - getattr(conn, "returned_at", 0.0) > CHECK_IDLE:
            check_within(conn, seconds)

    return check


def _conninfo(settings: StoreSettings) -> str:
    """The URL's libpq parameters plus the store's own: lock_timeout first, so the URL's own
    options (-c lock_timeout=…) override it; statement_timeout likewise (none when
    ?statement_timeout=0: the server's applies); search_path last: the store's tables are
    found through it."""
    params = conninfo_to_dict(settings.conninfo)
    params["options"] = " ".join(part for part in (
        f"-c lock_timeout={round(settings.lock_timeout * 1000)}",
        f"-c statement_timeout={round(settings.statement_timeout * 1000)}"
        if settings.statement_timeout else "",
        str(params.get("options") or ""),
        f"-c search_path={settings.schema},public",
    ) if part)
    params.setdefault("application_name", "hermes-host")
    params["connect_timeout"] = str(settings.connect_timeout)
    return make_conninfo("", **params)


class StorePool:
    """One store's pool, and its direct connections when the pool has none to give."""

    def __init__(self, settings: StoreSettings) -> None:
        self._conninfo = _conninfo(settings)
        self._reach = _Reach(settings)
        within = settings.answer_within
        self._direct_class: type[BoundedConnection] = type(
            "_Direct", (BoundedConnection,), {"answer_within": within})
        pooled = type("_Pooled", (_Pooled,), {"reach": self._reach, "answer_within": within})
        self._name = f"hermes-{settings.schema}"
        _QUIET.add(self._name)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self._conninfo,
            min_size=settings.pool_min,
            max_size=settings.pool_max,
            timeout=settings.pool_timeout,
            kwargs={"autocommit": True},
            connection_class=pooled,
            check=_check_if_idle(settings.pool_timeout),
            reset=_stamp_return,
            open=False,
            name=self._name,
        )

    def open(self) -> None:
        """Fill the pool in the background (a call that comes before its first connection
        waits pool_timeout, then goes direct)."""
        self._pool.open(wait=False)

    @contextmanager
    def direct(self) -> Iterator[Conn]:
        """A connection of its own, outside the pool (closed after use).  Failing to open it
        raises :class:`~hermes_store_postgres.failures.Unreachable` with libpq's reason."""
        try:
            conn = self._direct_class.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            self._reach.failed(exc, pool=False)
            raise Unreachable(exc) from exc
        self._reach.succeeded(pool=False)
        if self._reach.pool_down:
            # The server is back but the pool may be backing off (or have given up): let it
            # start a new attempt now.  A no-op while one is under way.
            self._pool.check()
        with conn:
            yield conn

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A pooled connection.  When the pool cannot reach the server (its last connection
        attempt failed) and has none ready, a direct connection at once, without waiting;
        when the pool delivers none in ``pool_timeout`` (the server just went down, or every
        connection is busy), one direct connection too.  Either works — the turn goes on —
        or fails with the server's own reason, in about ``connect_timeout`` at most."""
        if self._reach.pool_down and not self._pool.get_stats().get("pool_available", 0):
            with self.direct() as conn:
                yield conn
            return
        entered = False
        try:
            with self._pool.connection() as conn:
                entered = True
                yield conn
            return
        except PoolTimeout:
            if entered:
                raise
        with self.direct() as conn:
            yield conn

    def close(self) -> None:
        self._pool.close()
        if self._name:
            _QUIET.remove(self._name)
            self._name = ""
