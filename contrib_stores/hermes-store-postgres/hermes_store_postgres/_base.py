"""The PostgreSQL store's connections, transactions, clock and error translation.

One :class:`psycopg_pool.ConnectionPool` per store, shared by its threads.  Every
connection runs in autocommit mode with ``search_path`` set to the store's schema (then
``public``); a method that writes, or reads several statements, opens one explicit
transaction (``READ COMMITTED`` plus row locks where a decision depends on a row).  A
connection idle for more than :data:`CHECK_IDLE` is checked on checkout, so one broken by a
server restart or ``pg_terminate_backend`` is replaced instead of failing the next turn.

Failures are fast and named (issue 31 (4)): libpq's ``connect_timeout`` defaults to 3 s, a
call waits at most ``pool_timeout`` (1 s) for the pool and not at all while the pool knows
the server is unreachable (:class:`_Reach`); every connection has ``lock_timeout`` (10 s)
and ``statement_timeout`` (30 s), and waits for the server's answer to a statement at most
that plus ``ANSWER_GRACE`` (:class:`_Bounded`: a server stopped or hung mid-statement cannot
time its statement out itself); :func:`translate` says which of these happened, and whether
anything was written.

Time comes from the database (``clock_timestamp()``), never from the host: leases expire
by one clock however many machines share the store.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from hermes_host.store import DEFAULT_LEASE_TTL, StoreError
from hermes_host.store.codec import MSG_COLS, WINDOW_ORDER
from hermes_host.store.errors import translating
from hermes_host.store.rooms import SharedRooms
from hermes_store_postgres.schema import migrate
from hermes_store_postgres.settings import ANSWER_GRACE, StoreSettings, parse_url, server_setting

__all__ = ["MSG_COLS", "NOW", "WINDOW_ORDER", "Conn", "NoAnswer", "PostgresBase", "Unreachable",
           "errors", "unbounded"]

Conn = psycopg.Connection[tuple[Any, ...]]

NOW = "extract(epoch FROM clock_timestamp())::double precision"
"""The database's clock, in Unix seconds (what every stored time is)."""

log = logging.getLogger("hermes_store_postgres")


class Unreachable(Exception):
    """No connection to the server could be opened (``cause``: libpq's error)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class NoAnswer(psycopg.OperationalError):
    """The server did not answer a statement within ``seconds`` (the connection is closed).
    ``unsure``: the statement was a commit, or ran outside an explicit transaction — the
    server may have carried it out before it stopped answering."""

    def __init__(self, seconds: float, *, unsure: bool) -> None:
        super().__init__(f"no answer from the server within {seconds:g} s")
        self.seconds = seconds
        self.unsure = unsure


# -- what went wrong, said as what it is --------------------------------------------------

_READS = ("reading", "listing", "counting", "searching", "exporting", "building", "resuming",
          "opening")
"""Actions (the ``errors(action)`` texts) that write nothing: their failure changed nothing."""


def _scrub(settings: StoreSettings, text: str) -> str:
    text = " ".join(text.split())
    if settings.password:
        text = text.replace(settings.password, "***")
    return text


def _libpq_reason(text: str) -> str:
    """What follows the last ``failed: `` of a libpq connection error (``Connection
    refused``, ``timeout expired``, ``FATAL: password authentication failed …``), else the
    whole text."""
    lines = [line for line in text.splitlines() if "failed: " in line]
    reason = lines[-1].rsplit("failed: ", 1)[1] if lines else text
    return " ".join(reason.split()) or " ".join(text.split())


def _shown_setting(value: str | None) -> str | None:
    if value is None:
        return None
    return f"{value}ms" if value.isdigit() else value


def _what(settings: StoreSettings, exc: BaseException) -> tuple[str, str, bool]:
    """(what happened, what to do, whether the driver's own text adds anything)."""
    server = settings.server
    if isinstance(exc, Unreachable):
        reason = _scrub(settings, _libpq_reason(str(exc.cause)))
        if "FATAL" in reason:  # the server answered, and refused
            todo = ("The server refused this login: check the user, password and database "
                    "in store.url (and the server's pg_hba.conf).")
        else:
            todo = (f"Check that PostgreSQL is running and accepts connections at {server} "
                    "(host, port, firewall) and that store.url is right; each attempt gives "
                    f"up after connect_timeout={settings.connect_timeout}s.")
        return (f"cannot connect to the PostgreSQL server at {server} ({reason})", todo, False)
    if isinstance(exc, NoAnswer):
        statement = settings.statement_limit or 0.0
        return (
            f"the PostgreSQL server at {server} stopped answering during a statement (no "
            f"answer within {exc.seconds:g} s: statement_timeout={statement:g}s + "
            f"{ANSWER_GRACE:g} s), so the store closed the connection",
            "The server is stopped, hung or overloaded, or the network drops packets: check "
            "it; if statements legitimately run longer, raise statement_timeout in store.url "
            "(?statement_timeout=SECONDS, 0 = none).",
            False,
        )
    if isinstance(exc, PoolTimeout):
        return (
            f"no pooled connection to {server} became free within "
            f"pool_timeout={settings.pool_timeout:g}s",
            "Every pooled connection is busy: raise pool_max (or pool_timeout) in store.url.",
            False,
        )
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        shown = _shown_setting(server_setting(settings.options, "lock_timeout"))
        limit = shown or f"{settings.lock_timeout:g}s"
        return (
            f"waited past lock_timeout={limit} for a row another client holds",
            "Another host's transaction or an open admin session holds it (see pg_locks and "
            "pg_stat_activity); retry, or raise lock_timeout in store.url "
            "(?lock_timeout=SECONDS, 0 = no limit).",
            False,
        )
    if isinstance(exc, psycopg.errors.QueryCanceled):
        if "statement timeout" in str(exc):
            shown = _shown_setting(server_setting(settings.options, "statement_timeout"))
            if shown is None and settings.statement_timeout:
                shown = f"{settings.statement_timeout:g}s"
            limit = f"statement_timeout={shown}" if shown else (
                "statement_timeout (set on the server, database or role)")
            return (
                f"a statement ran past {limit}",
                "Raise statement_timeout (?statement_timeout=SECONDS in store.url, 0 = none) "
                "or find what slows the server.",
                False,
            )
        return ("a statement was cancelled (pg_cancel_backend or a client's cancel request)",
                "Retry.", True)
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return ("the store's role lacks a privilege on its schema (it should own the schema)",
                "", True)
    if isinstance(exc, psycopg.errors.AdminShutdown | psycopg.errors.CrashShutdown):
        return (f"the database server at {server} closed the connection (restart or "
                "terminated backend)", "Retry once the server is back.", True)
    if isinstance(exc, psycopg.errors.DiskFull):
        return (f"the database server's disk is full ({server})", "", True)
    if isinstance(exc, psycopg.OperationalError):
        return (f"lost the connection to the PostgreSQL server at {server}",
                "Retry; if it persists, check the server and the network.", True)
    return ("database error", "", True)


def translate(settings: StoreSettings, exc: BaseException, action: str) -> StoreError:
    what, todo, detail = _what(settings, exc)
    cause = exc.cause if isinstance(exc, Unreachable) else exc
    text = _scrub(settings, str(cause)) or type(cause).__name__
    where = f" (while {action}: {text})" if detail else f" while {action}"
    if action.startswith(_READS):
        outcome = "nothing was written or changed"
    elif isinstance(exc, Unreachable):
        outcome = "nothing of it was stored"
    elif isinstance(exc, NoAnswer) and exc.unsure:
        outcome = ("the server may have carried it out before it stopped answering: whether "
                   "it was stored is unknown until the server answers again")
    else:
        outcome = "the transaction was rolled back, so nothing of it was stored"
    return StoreError(f"{settings.shown}: {what}{where}; {outcome}." + (
        f" {todo}" if todo else ""))


errors = translating(
    (psycopg.Error, PoolTimeout, Unreachable),
    lambda store, exc, action: translate(store.settings, exc, action),
)
"""Turn any driver or pool error inside a store method into a user-facing StoreError."""


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
        reason = _scrub(self._settings, _libpq_reason(str(exc)))
        (log.info if first else log.debug)(
            "cannot connect to PostgreSQL at %s (%s)%s", self._settings.server, reason,
            "; store calls fail at once until it is back" if first else "")

    def succeeded(self, *, pool: bool) -> None:
        with self._lock:
            since, self.down_since = self.down_since, None
            if pool:
                self.pool_down = False
        if since is not None:
            log.info("PostgreSQL at %s is reachable again (after %.1f s)",
                     self._settings.server, time.monotonic() - since)


class _Bounded(psycopg.Connection[tuple[Any, ...]]):
    """A connection that waits for the server's answer to one operation (a statement, a
    commit, a COPY block) at most ``answer_within`` seconds (``None``: no limit).  libpq
    would wait for ever on a server stopped (``SIGSTOP``) or hung mid-statement, or on a
    network that drops packets — the server's ``statement_timeout`` cannot fire then, and
    TCP keepalives and ``tcp_user_timeout`` see a healthy peer (its kernel still
    acknowledges).  Past the limit the connection is closed and :class:`NoAnswer` raised."""

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


class _Pooled(_Bounded):
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
    answer (:class:`_Bounded`: the StoreError says so)."""

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


@contextmanager
def unbounded(conn: Conn) -> Iterator[None]:
    """Maintenance on ``conn`` (a migration waiting for another host's, ``VACUUM``) that may
    take as long as it takes: no ``lock_timeout``, ``statement_timeout`` or answer limit
    until the block ends (``RESET`` restores the connection's own)."""
    conn.execute("SET lock_timeout = 0")
    conn.execute("SET statement_timeout = 0")
    within = getattr(conn, "answer_within", None)
    conn.answer_within = None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        conn.answer_within = within  # type: ignore[attr-defined]
        try:
            conn.execute("RESET lock_timeout")
            conn.execute("RESET statement_timeout")
        except psycopg.Error:
            conn.close()  # never back in the pool without its limits


def _stamp_return(conn: Conn) -> None:
    conn.returned_at = time.monotonic()  # type: ignore[attr-defined]


def _check_within(conn: Conn, seconds: float) -> None:
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


def _check_if_idle(seconds: float) -> Callable[[Conn], None]:
    """The pool's check on checkout.  A connection the server closed while it sat in the
    pool (a restart, ``pg_terminate_backend``: the backend sends its FATAL notice first) has
    something to read on its socket, which an idle autocommit connection never has — a
    local test with no round trip; only a connection idle past :data:`CHECK_IDLE` also
    gets the empty query, which must answer within ``seconds`` (``pool_timeout``)."""

    def check(conn: Conn) -> None:
        readable = bool(select.select([conn.fileno()], [], [], 0)[0])
        if readable or time.monotonic() - getattr(conn, "returned_at", 0.0) > CHECK_IDLE:
            _check_within(conn, seconds)

    return check


class PostgresBase(SharedRooms[Conn]):
    """Pool, transactions and the helpers every room uses."""

    def __init__(self, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.settings = parse_url(url)
        self.schema = self.settings.schema
        self.location = self.settings.shown
        self.lease_ttl = float(lease_ttl)
        params = conninfo_to_dict(self.settings.conninfo)
        # lock_timeout first, so the URL's own options (-c lock_timeout=…) override it;
        # search_path last: the store's tables are found through it.
        # statement_timeout likewise (none when ?statement_timeout=0: the server's applies).
        params["options"] = " ".join(part for part in (
            f"-c lock_timeout={round(self.settings.lock_timeout * 1000)}",
            f"-c statement_timeout={round(self.settings.statement_timeout * 1000)}"
            if self.settings.statement_timeout else "",
            str(params.get("options") or ""),
            f"-c search_path={self.schema},public",
        ) if part)
        params.setdefault("application_name", "hermes-host")
        params["connect_timeout"] = str(self.settings.connect_timeout)
        self._conninfo = make_conninfo("", **params)
        self._reach = _Reach(self.settings)
        within = self.settings.answer_within
        self._direct_class: type[_Bounded] = type("_Direct", (_Bounded,),
                                                  {"answer_within": within})
        pooled = type("_Pooled", (_Pooled,), {"reach": self._reach, "answer_within": within})
        self._pool_name = f"hermes-{self.schema}"
        _QUIET.add(self._pool_name)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self._conninfo,
            min_size=self.settings.pool_min,
            max_size=self.settings.pool_max,
            timeout=self.settings.pool_timeout,
            kwargs={"autocommit": True},
            connection_class=pooled,
            check=_check_if_idle(self.settings.pool_timeout),
            reset=_stamp_return,
            open=False,
            name=self._pool_name,
        )
        self._open()

    def _open(self) -> None:
        try:
            # One direct connection first: a refused login or an unreachable server fails
            # now with the server's own reason (a pool would only report a timeout).
            with self._direct() as conn, unbounded(conn):
                # Hosts starting together wait for each other's migration (an advisory
                # lock), however long it takes: no time limit on this connection.
                migrate(conn, self.schema, self.location)
            # The server just answered: the pool fills in the background (a call that
            # comes before its first connection waits pool_timeout, then goes direct).
            self._pool.open(wait=False)
        except BaseException as exc:
            self.close()
            if isinstance(exc, psycopg.Error | PoolTimeout | Unreachable):
                raise translate(self.settings, exc, "opening the store") from None
            raise

    @classmethod
    def from_url(cls, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> Any:
        """Open ``postgresql://…`` (the ``hermes_host.stores`` entry)."""
        return cls(url, lease_ttl=lease_ttl)

    # -- connections and transactions -------------------------------------------------------

    @contextmanager
    def _direct(self) -> Iterator[Conn]:
        """A connection of its own, outside the pool (closed after use).  Failing to open it
        raises :class:`Unreachable` with libpq's reason."""
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
    def _connection(self) -> Iterator[Conn]:
        """A pooled connection.  When the pool cannot reach the server (its last connection
        attempt failed) and has none ready, a direct connection at once, without waiting;
        when the pool delivers none in ``pool_timeout`` (the server just went down, or every
        connection is busy), one direct connection too.  Either works — the turn goes on —
        or fails with the server's own reason, in about ``connect_timeout`` at most."""
        if self._reach.pool_down and not self._pool.get_stats().get("pool_available", 0):
            with self._direct() as conn:
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
        with self._direct() as conn:
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
        if self._pool_name:
            _QUIET.remove(self._pool_name)
            self._pool_name = ""

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
