"""Time limits and bulk work (review of issue 31 (4)), against a real server.

The store's ``statement_timeout`` (30 s by default) and the client's answer limit (that +
5 s) bound a turn's statements.  A bulk operation a user starts — ``sessions import`` (one
``append_messages`` of the whole transcript, then ``index_pending``), a branch of a long
window, ``store migrate`` — runs single statements over many rows, which had no limit
before: on a slow server a big import would now fail half-way.  Those run without the
statement limits (``lock_timeout`` kept); a turn's append keeps every limit.  Measured here
with ``?statement_timeout=1``: each statement below runs past one second.

Also: an ``options`` ``statement_timeout`` is read by PostgreSQL's own grammar (units,
escaped spaces, hexadecimal, exponents …, compared with what the server itself reads), and
a value the store still cannot read is said once in a warning instead of silently leaving
the client without an answer limit.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from hermes_host.store import StoreError
from hermes_host.store.transfer import migrate_history
from hermes_store_postgres import PostgresStore
from hermes_store_postgres.messages import BULK_MIN
from hermes_store_postgres.settings import parse_url, setting_seconds
from hermes_store_postgres.testing import TestServer

IMPORT_SIZE = 200_000
MIGRATE_SIZE = 40_000


def _history(size: int, tag: str = "") -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"{tag}message {i} about the parser and its lexer, line {i * 7}"}
            for i in range(size)]


def _hold_session_row(server: TestServer, store: PostgresStore,
                      session_id: str) -> psycopg.Connection[Any]:
    """A second real client holding the session's row lock in an open transaction."""
    blocker: psycopg.Connection[Any] = server.admin(server.database)
    blocker.autocommit = False
    blocker.execute(f'SET search_path TO "{store.schema}"')
    blocker.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
    return blocker


def _limits(store: PostgresStore) -> tuple[Any, ...]:
    with store._read() as conn:
        return (conn.execute("SHOW statement_timeout").fetchone(),
                conn.execute("SHOW lock_timeout").fetchone(),
                getattr(conn, "answer_within", None))


def test_a_200k_message_import_succeeds_under_a_1s_statement_timeout_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """What ``sessions import`` does with a 200,000-message transcript — one
    ``append_messages`` (COPY, then one INSERT … SELECT), then the search index catch-up
    (here in one batch: one UPDATE of every row) — on a store whose statements may run one
    second.  Before, the append failed after 4.7 s ("a statement ran past
    statement_timeout=1s"; the import rolled back).  Now both succeed, every row is stored
    once and searchable, and the pooled connection (``pool_max=1``: the same one) has its
    limits back afterwards.  A turn's append on it is still bounded: blocked by another
    client's row lock it fails after the 1 s statement_timeout, while a bulk append blocked
    the same way is ended by ``lock_timeout`` (2 s), which bulk work keeps."""
    url = hermes_postgres.fresh_url() + "&statement_timeout=1&lock_timeout=2&pool_max=1"
    with PostgresStore(url) as store:
        assert _limits(store) == (("1s",), ("2s",), 6.0)
        session = store.create_session()
        started = time.monotonic()
        ids = store.append_messages(session.id, _history(IMPORT_SIZE))
        appended = time.monotonic() - started
        started = time.monotonic()
        indexed = store.index_pending(batch=IMPORT_SIZE)
        caught_up = time.monotonic() - started
        print(f"{IMPORT_SIZE:,}-message append under statement_timeout=1: {appended:.2f} s; "
              f"index catch-up in one batch: {caught_up:.2f} s")
        assert len(ids) == len(set(ids)) == IMPORT_SIZE
        assert indexed == IMPORT_SIZE and store.pending_index_rows() == 0
        assert appended > 1.0 and caught_up > 1.0  # longer than the limit lifted for them
        assert store.window_marker(session.id).active_count == IMPORT_SIZE
        hits = store.session_search("lexer", session_id=session.id, limit=3)
        assert len(hits) == 3
        assert _limits(store) == (("1s",), ("2s",), 6.0)  # back on the connection

        blocker = _hold_session_row(hermes_postgres, store, session.id)
        try:
            started = time.monotonic()
            with pytest.raises(StoreError) as turn:
                store.append_messages(session.id, [{"role": "user", "content": "a turn"}])
            turn_took = time.monotonic() - started
            started = time.monotonic()
            with pytest.raises(StoreError) as bulk:
                store.append_messages(session.id, _history(BULK_MIN, "late "))
            bulk_took = time.monotonic() - started
        finally:
            blocker.rollback()
            blocker.close()
        print(f"blocked by a row lock: a turn's append failed after {turn_took:.2f} s, "
              f"a bulk append after {bulk_took:.2f} s")
        assert "a statement ran past statement_timeout=1s while appending messages" \
            in str(turn.value), turn.value
        assert 0.9 <= turn_took < 5, turn_took
        assert "waited past lock_timeout=2s for a row another client holds" \
            in str(bulk.value), bulk.value
        assert 1.9 <= bulk_took < 6, bulk_took
        assert _limits(store) == (("1s",), ("2s",), 6.0)
        assert store.window_marker(session.id).active_count == IMPORT_SIZE  # nothing added


def test_store_migrate_copies_a_big_batch_under_a_1s_statement_timeout_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """``hermes-host store migrate --batch 40000`` into (and out of) stores whose
    statements may run one second: a batch of 40,000 messages is one INSERT … SELECT that
    computes every row's search vector (before: "copying messages stopped after 0 rows: …
    a statement ran past statement_timeout=1s").  Now it is copied and verified."""
    limited = "&statement_timeout=1&lock_timeout=2"
    with PostgresStore(hermes_postgres.fresh_url() + limited) as source, \
            PostgresStore(hermes_postgres.fresh_url() + limited) as target:
        session = source.create_session(title="big")
        source.append_messages(session.id, _history(MIGRATE_SIZE))
        started = time.monotonic()
        report = migrate_history(source, target, batch=MIGRATE_SIZE)
        took = time.monotonic() - started
        print(f"store migrate of {MIGRATE_SIZE:,} messages in one batch under "
              f"statement_timeout=1: {took:.2f} s")
        assert report.ok, report.problems
        assert report.copied["messages"] == report.verified_messages == MIGRATE_SIZE
        assert target.window_marker(session.id).active_count == MIGRATE_SIZE
        assert _limits(target)[0] == ("1s",) and _limits(source)[0] == ("1s",)


# -- reading the URL's own statement_timeout ------------------------------------------------

# (value in -c statement_timeout=…, as written in options; what the server makes of it)
_GRAMMAR = [
    ("5min", "5min"), (r"5\ min", "5min"), ("7\\ s", "7s"), ("1e3", "1s"), ("0x10", "16ms"),
    ("010", "8ms"), ("300000", "5min"), ("1.5h", "90min"), ("2d", "2d"), ("0.4", "0"),
    ("0.6", "1ms"), (".5s", "500ms"), ("+5s", "5s"), ("1e-1s", "100ms"), ("1500us", "2ms"),
    ("2147483647", "2147483647ms"), ("0", "0"),
    ("5MIN", None), ("-5", None), ("5sec", None), ("min", None), ("2147483648", None),
    ("25d", None), ("inf", None),
]


def test_the_url_s_statement_timeout_is_read_as_the_server_reads_it_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """Each value is given to a real server in ``options`` and compared: the store's
    reading equals the server's (``SHOW statement_timeout``), and a value the server
    refuses is one the store cannot read either.  Before, ``5\\ min``, ``1e3`` and ``0x10``
    (all taken by the server) were unreadable, so the client waited without limit."""
    for value, server_says in _GRAMMAR:
        options = f"-c statement_timeout={value}"
        try:
            with psycopg.connect(hermes_postgres.admin_url, options=options) as conn:
                row = conn.execute("SHOW statement_timeout").fetchone()
                shown = None if row is None else str(row[0])
        except psycopg.OperationalError:
            shown = None  # the server refused the value
        assert shown == server_says, (value, shown)
        settings = parse_url("postgresql://u@h/db?options=" + quote(options, safe=""))
        expected = None if shown is None else setting_seconds(shown)
        assert settings.statement_limit == expected, (value, settings.statement_limit)
        assert settings.answer_within == (expected + 5.0 if expected else None), value
    assert parse_url("postgresql://u@h/db?options=-c%20statement-timeout%3D5s").answer_within \
        == 10.0  # the server reads - as _ in a setting's name


def test_a_statement_timeout_the_store_cannot_read_is_said_once_issue_31(
    hermes_postgres: TestServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """``0x1.8p13`` is a C hexadecimal float the server reads (12,288 ms; a few ms would
    time out the store's own reads on a loaded machine) and the store does not:
    the client then has no answer limit, and says so once when the store opens (before:
    silently).  A readable value, or none, logs nothing."""
    caplog.set_level(logging.WARNING, logger="hermes_store_postgres")
    unread = hermes_postgres.fresh_url() + "&options=-c%20statement_timeout%3D0x1.8p13"
    with PostgresStore(unread) as store:
        with store._read() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("12288ms",)
            assert getattr(conn, "answer_within", "unset") is None
        store.list_sessions()
    warnings = [r.getMessage() for r in caplog.records if r.name == "hermes_store_postgres"]
    assert len(warnings) == 1, warnings
    assert "cannot read statement_timeout=0x1.8p13 in the URL's options" in warnings[0]
    assert "no limit of its own on waiting for the server's answer" in warnings[0]
    assert hermes_postgres.password not in warnings[0]
    caplog.clear()
    for url in (hermes_postgres.fresh_url() + "&options=-c%20statement_timeout%3D5%5C%20min",
                hermes_postgres.fresh_url() + "&statement_timeout=0"):
        with PostgresStore(url):
            pass
    assert [r.getMessage() for r in caplog.records if r.name == "hermes_store_postgres"] == []


def test_bulk_limits_come_back_after_a_failed_bulk_write_issue_31(pg_url: str) -> None:
    """A bulk append that fails (a missing session) leaves the pooled connection with its
    limits: the lifted statement_timeout is RESET outside the rolled-back transaction."""
    with PostgresStore(pg_url + "&statement_timeout=3&pool_max=1") as store:
        with pytest.raises(StoreError):
            store.append_messages("no-such-session", _history(BULK_MIN))
        assert _limits(store) == (("3s",), ("10s",), 8.0)
        session = store.create_session()
        store.append_messages(session.id, [{"role": "user", "content": "fine"}])
        assert [m["content"] for m in store.active_messages(session.id)] == ["fine"]
