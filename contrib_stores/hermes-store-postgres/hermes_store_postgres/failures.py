"""What went wrong, said as what it is: a driver or pool error inside a store method becomes
one user-facing :class:`~hermes_host.store.StoreError` (issue 31 (4)).

It names what happened (the server is down or refused the login, stopped answering, a
statement or lock wait ran past its limit, the connection was lost …), what to do, and
whether anything was written: a read changed nothing, a failed transaction was rolled
back, one that got no answer before its commit was sent will be (nothing of it is stored),
and a statement that got no answer after its commit was sent may have been stored.
The URL's password never appears in it.
"""

from __future__ import annotations

import psycopg
from psycopg_pool import PoolTimeout

from hermes_host.store import StoreError
from hermes_host.store.errors import translating
from hermes_store_postgres.settings import ANSWER_GRACE, StoreSettings, server_setting

__all__ = ["NoAnswer", "Unreachable", "errors", "reason", "translate"]


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


_READS = ("reading", "listing", "counting", "searching", "exporting", "building", "resuming",
          "opening")
"""Actions (the ``errors(action)`` texts) that write nothing: their failure changed nothing."""


def _scrub(settings: StoreSettings, text: str) -> str:
    text = " ".join(text.split())
    if settings.password:
        text = text.replace(settings.password, "***")
    return text


def reason(settings: StoreSettings, exc: BaseException) -> str:
    """Why libpq could not connect: what follows the last ``failed: `` of its error
    (``Connection refused``, ``timeout expired``, ``FATAL: password authentication failed
    …``), else the whole text; on one line, without the password."""
    text = str(exc)
    lines = [line for line in text.splitlines() if "failed: " in line]
    said = lines[-1].rsplit("failed: ", 1)[1] if lines else text
    return _scrub(settings, " ".join(said.split()) or " ".join(text.split()))


def _shown_setting(value: str | None) -> str | None:
    if value is None:
        return None
    return f"{value}ms" if value.isdigit() else value


def _what(settings: StoreSettings, exc: BaseException) -> tuple[str, str, bool]:
    """(what happened, what to do, whether the driver's own text adds anything)."""
    server = settings.server
    if isinstance(exc, Unreachable):
        why = reason(settings, exc.cause)
        if "FATAL" in why:  # the server answered, and refused
            todo = ("The server refused this login: check the user, password and database "
                    "in store.url (and the server's pg_hba.conf).")
        else:
            todo = (f"Check that PostgreSQL is running and accepts connections at {server} "
                    "(host, port, firewall) and that store.url is right; each attempt gives "
                    f"up after connect_timeout={settings.connect_timeout}s.")
        return (f"cannot connect to the PostgreSQL server at {server} ({why})", todo, False)
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
    elif isinstance(exc, NoAnswer):
        # No COMMIT was sent: the transaction can no longer commit, but the server only
        # aborts it when it runs again and finds the connection gone.
        outcome = ("no COMMIT was sent, so the transaction will be rolled back (by the "
                   "server once it runs again); nothing of it is stored")
    else:
        outcome = "the transaction was rolled back, so nothing of it was stored"
    return StoreError(f"{settings.shown}: {what}{where}; {outcome}." + (
        f" {todo}" if todo else ""))


errors = translating(
    (psycopg.Error, PoolTimeout, Unreachable),
    lambda store, exc, action: translate(store.settings, exc, action),
)
"""Turn any driver or pool error inside a store method into a user-facing StoreError."""
