"""PostgreSQL that fails fast and says why (issue 31 (4)), against a real server.

* Server down: a turn fails in about ``pool_timeout`` (1 s) with one line naming host:port
  and what to do — not after 30 s with a warning from the pool per reconnection attempt;
  the next turns of the outage fail at once; a CLI read against a closed port says it
  wrote nothing.
* A server that accepts TCP but never answers: libpq's ``connect_timeout`` (default 3 s).
* A row lock another client holds: ``lock_timeout`` (default 10 s) bounds the wait and the
  error says it is a lock wait; a ``statement_timeout`` from the URL's ``options`` is
  reported as one (the option reaches libpq as written: it was re-encoded with ``+`` and
  refused).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hermes_host.store import StoreError
from hermes_store_postgres import PostgresStore
from hermes_store_postgres.failures import NoAnswer, translate
from hermes_store_postgres.settings import parse_url
from hermes_store_postgres.testing import TestServer

HERMES = str(Path(sys.executable).parent / "hermes-host")


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when this returns


def _turn(session: Any, n: int) -> None:
    session.add_user(f"question {n} about the parser")
    session.build_request()
    session.add_assistant(f"answer {n}: the lexer was wrong")
    session.end_turn({"prompt_tokens": 120, "completion_tokens": 12})


def test_server_down_a_turn_fails_in_seconds_with_one_clear_line_issue_31(
    hermes_postgres: TestServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """Default settings, through ContextHost/Session: the server stops between two turns.
    The turn fails in about a second (was 30 s: the whole pool_timeout), the StoreError
    names host:port and what to do, not the password, and psycopg_pool's warning per
    reconnection attempt (about 15 two-line warnings before) is not logged; later turns of
    the outage fail at once; after a restart the session goes on."""
    if not hermes_postgres.managed:
        pytest.skip("HERMES_HOST_TEST_POSTGRES_URL's server is not ours to stop")
    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost

    config = HermesConfig.model_validate(
        {"summarizer": {"provider": "offline"}, "memory": {"providers": []}})
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.INFO, logger="hermes_store_postgres")
    with ContextHost.from_config(config, store=hermes_postgres.fresh_url()) as host:
        session = host.open_session(system_prompt="You fix parsers.")
        _turn(session, 0)
        hermes_postgres.stop_server()
        try:
            timings, errors = [], []
            for n in (1, 2):
                started = time.monotonic()
                with pytest.raises(StoreError) as caught:
                    _turn(session, n)
                timings.append(time.monotonic() - started)
                errors.append(str(caught.value))
            time.sleep(1.5)  # the pool retries in the background meanwhile: no warnings
        finally:
            hermes_postgres.start_server()
        _turn(session, 3)  # the server is back: the same Session goes on
    print(f"down-server turn failed after {timings[0]:.2f} s, then {timings[1]:.2f} s")
    assert timings[0] <= 5.0 and timings[1] <= 5.0, timings  # measured: 1.0 s, then 0.0 s
    for text in errors:
        assert f"cannot connect to the PostgreSQL server at 127.0.0.1:{hermes_postgres.port}" \
            " (Connection refused)" in text, text
        assert "Check that PostgreSQL is running" in text and "connect_timeout=3s" in text
        assert hermes_postgres.password not in text and "\n" not in text
        assert "rolled back" not in text  # the failing call was a read
    pool_warnings = [r for r in caplog.records if r.name.startswith("psycopg")]
    assert pool_warnings == [], [r.getMessage() for r in pool_warnings]
    ours = [r.getMessage() for r in caplog.records if r.name == "hermes_store_postgres"]
    assert len(ours) == 2, ours  # one line when the outage starts, one when it ends
    assert ours[0].startswith(f"cannot connect to PostgreSQL at 127.0.0.1:{hermes_postgres.port}")
    assert "reachable again" in ours[1]
    assert all(hermes_postgres.password not in line for line in ours)
    with PostgresStore(hermes_postgres.app_url(parse_url(host.store.location).schema)) as store:
        contents = [r.message["content"] for r in store.lineage_messages(session.id)]
    assert [c for c in contents if c.startswith("question")] == [
        "question 0 about the parser", "question 3 about the parser"]


def test_sessions_list_against_a_closed_port_is_one_line_that_wrote_nothing_issue_31(
    tmp_path: Path,
) -> None:
    """The CLI in a real subprocess: one line on stderr, host:port, no password, no claim
    that a transaction was rolled back (``sessions list`` writes nothing)."""
    port = _closed_port()
    url = f"postgresql://hermes:not-this-secret@127.0.0.1:{port}/hermes?schema=hermes"
    env = {**os.environ, "HERMES_HOST_HOME": str(tmp_path / "home")}
    started = time.monotonic()
    done = subprocess.run([HERMES, "sessions", "list", "--store", url], capture_output=True,
                          text=True, timeout=60, env=env, check=False)
    took = time.monotonic() - started
    print(f"hermes-host sessions list against a closed port: exit {done.returncode} "
          f"after {took:.2f} s")
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert f"cannot connect to the PostgreSQL server at 127.0.0.1:{port}" in line
    assert "nothing was written or changed" in line and "rolled back" not in line
    assert "not-this-secret" not in done.stderr and "hermes:***@" in line
    assert took < 30  # generous (interpreter start-up included); measured about 1.7 s


def test_reads_say_nothing_was_changed_and_writes_nothing_was_stored_issue_31(
    hermes_postgres: TestServer,
) -> None:
    if not hermes_postgres.managed:
        pytest.skip("HERMES_HOST_TEST_POSTGRES_URL's server is not ours to stop")
    store = PostgresStore(hermes_postgres.fresh_url())
    try:
        session = store.create_session()
        hermes_postgres.stop_server()
        try:
            with pytest.raises(StoreError) as read:
                store.list_sessions()
            with pytest.raises(StoreError) as write:
                store.append_messages(session.id, [{"role": "user", "content": "lost"}])
        finally:
            hermes_postgres.start_server()
        assert "while listing sessions; nothing was written or changed." in str(read.value)
        assert "while appending messages; nothing of it was stored." in str(write.value)
        assert store.active_messages(session.id) == []
    finally:
        store.close()


@contextmanager
def _silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (a hung server, or a
    proxy to nowhere): libpq waits for the server's first reply."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        listener.close()


def test_a_server_that_never_answers_fails_after_connect_timeout_issue_31() -> None:
    """Default ``connect_timeout`` 3 s (was 10); the URL's own value wins."""
    with _silent_server() as port:
        base = f"postgresql://hermes:pw-not-shown@127.0.0.1:{port}/hermes?sslmode=disable"
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            PostgresStore(base)
        took = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(StoreError):
            PostgresStore(base + "&connect_timeout=2")
        took_two = time.monotonic() - started
    print(f"silent server: open failed after {took:.2f} s (connect_timeout=2: {took_two:.2f})")
    text = str(caught.value)
    assert f"cannot connect to the PostgreSQL server at 127.0.0.1:{port}" in text
    assert "timeout" in text and "pw-not-shown" not in text
    assert 2.5 <= took <= 10 and 1.5 <= took_two < took, (took, took_two)


def _server_processes(server: TestServer) -> list[int]:
    """The postmaster and its children (backends, background workers)."""
    assert server._root is not None
    postmaster = int((server._root / "data" / "postmaster.pid").read_text().split()[0])
    found = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == postmaster:
                found.append(int(entry))
    return found


def test_a_hung_server_fails_the_turn_in_seconds_not_never_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """The server's processes are stopped (SIGSTOP: TCP still accepted, nothing answered —
    what a hung server or a dropped network looks like).  The pool's check of the idle
    connection used to wait for ever; now it has pool_timeout to answer, then the direct
    connection connect_timeout: the turn fails in about 4 s and says so.  After SIGCONT the
    session goes on."""
    if not hermes_postgres.managed or not Path("/proc/self/stat").exists():
        pytest.skip("needs our own server and /proc")
    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost

    config = HermesConfig.model_validate(
        {"summarizer": {"provider": "offline"}, "memory": {"providers": []}})
    with ContextHost.from_config(config, store=hermes_postgres.fresh_url()) as host:
        session = host.open_session(system_prompt="You fix parsers.")
        _turn(session, 0)
        time.sleep(0.6)  # idle past CHECK_IDLE: the next checkout checks the connection
        stopped = _server_processes(hermes_postgres)
        try:
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
        except PermissionError:
            pytest.skip("may not signal the server's processes")
        try:
            started = time.monotonic()
            with pytest.raises(StoreError) as caught:
                _turn(session, 1)
            took = time.monotonic() - started
        finally:
            for pid in stopped:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        print(f"hung server: the turn failed after {took:.2f} s")
        text = str(caught.value)
        assert f"cannot connect to the PostgreSQL server at 127.0.0.1:{hermes_postgres.port}" \
            " (" in text and "timeout expired" in text, text
        assert took < 10, took  # measured 4.0 s: pool_timeout 1 s + connect_timeout 3 s
        deadline = time.monotonic() + 30
        while True:  # the server answers again: the same Session goes on
            try:
                _turn(session, 2)
                break
            except StoreError:
                assert time.monotonic() < deadline
                time.sleep(0.5)


def _stop(pids: list[int]) -> None:
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
    except PermissionError:
        _resume(pids)
        pytest.skip("may not signal the server's processes")


def _resume(pids: list[int]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def test_a_server_stopped_mid_statement_fails_the_turn_within_its_bound_issue_31(
    hermes_postgres: TestServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """The server's processes stop (SIGSTOP) while a connection is checked out and fresh
    (no checkout check): the turn's statement is sent and never answered.  The server's
    statement_timeout cannot fire (it is stopped), nor can TCP keepalives or
    tcp_user_timeout (the kernel still acknowledges): before, the turn waited until SIGCONT
    (a probe: 20 s and counting, keepalives and tcp_user_timeout=3000 in the URL too).  Now
    the client gives it statement_timeout + 5 s (here 1 + 5), closes the connection and the
    turn fails with one line saying so; after SIGCONT the session goes on and every message
    is stored once."""
    if not hermes_postgres.managed or not Path("/proc/self/stat").exists():
        pytest.skip("needs our own server and /proc")
    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost

    config = HermesConfig.model_validate(
        {"summarizer": {"provider": "offline"}, "memory": {"providers": []}})
    caplog.set_level(logging.WARNING)
    url = hermes_postgres.fresh_url() + "&statement_timeout=1"
    with ContextHost.from_config(config, store=url) as host:
        session = host.open_session(system_prompt="You fix parsers.")
        _turn(session, 0)
        stopped = _server_processes(hermes_postgres)
        _stop(stopped)  # within CHECK_IDLE of the last call: the next checkout is not checked
        try:
            started = time.monotonic()
            with pytest.raises(StoreError) as caught:
                _turn(session, 1)
            took = time.monotonic() - started
        finally:
            _resume(stopped)
        print(f"server stopped mid-statement: the turn failed after {took:.2f} s")
        text = str(caught.value)
        assert (f"the PostgreSQL server at 127.0.0.1:{hermes_postgres.port} stopped answering "
                "during a statement (no answer within 6 s: statement_timeout=1s + 5 s)") \
            in text, text
        assert "?statement_timeout=SECONDS" in text and "\n" not in text
        assert hermes_postgres.password not in text
        assert 5.5 <= took < 10, took
        assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []
        deadline = time.monotonic() + 30
        while True:  # the server answers again: the same Session goes on
            try:
                _turn(session, 2)
                break
            except StoreError:
                assert time.monotonic() < deadline
                time.sleep(0.5)
        contents = [r.message["content"] for r in host.store.lineage_messages(session.id)]
    questions = [c for c in contents if c.startswith("question")]
    assert questions in (
        ["question 0 about the parser", "question 2 about the parser"],
        # the stopped statement was the append of turn 1's question, which the server
        # carried out once it ran again (the error said it might have been)
        ["question 0 about the parser", "question 1 about the parser",
         "question 2 about the parser"],
    ), questions
    assert len(set(contents)) == len(contents)  # nothing twice


@pytest.mark.parametrize("size", [1, 64])
def test_a_statement_stopped_mid_lock_wait_fails_in_bound_and_says_what_was_stored_issue_31(
    hermes_postgres: TestServer, caplog: pytest.LogCaptureFixture, size: int,
) -> None:
    """Really in the middle of a statement: the append waits for a row lock another client
    holds, and then its backend is stopped.  The call fails after statement_timeout + 5 s
    saying the server stopped answering, and what that means for the write:

    * 64 messages (an explicit transaction, statement by statement): no COMMIT was sent, so
      "the transaction will be rolled back" — after SIGCONT the server aborts it when it
      finds the connection closed; nothing of it is stored;
    * 1 message (a turn's append: BEGIN, UPDATE, INSERT and COMMIT sent together in pipeline
      mode): the COMMIT is already in the server's hands, so "whether it was stored is
      unknown" — after SIGCONT it is stored once or not at all.

    Nothing earlier is lost, and the store works after SIGCONT."""
    if not hermes_postgres.managed or not Path("/proc/self/stat").exists():
        pytest.skip("needs our own server and /proc")
    caplog.set_level(logging.WARNING)
    url = hermes_postgres.fresh_url() + "&statement_timeout=2&lock_timeout=0"
    batch = [{"role": "user", "content": f"stalled {i}"} for i in range(size)]
    with PostgresStore(url) as store:
        session = store.create_session()
        store.append_messages(session.id, [{"role": "user", "content": "before"}])
        blocker = _hold_session_row(hermes_postgres, store, session.id)
        backend: list[int] = []
        failure: list[BaseException] = []
        took: list[float] = []

        def append() -> None:
            started = time.monotonic()
            try:
                store.append_messages(session.id, batch)
            except BaseException as exc:  # handed to the test's thread
                failure.append(exc)
            took.append(time.monotonic() - started)

        worker = threading.Thread(target=append, daemon=True)
        try:
            worker.start()
            deadline = time.monotonic() + 10
            while not backend:  # the append's backend, waiting for the lock
                row = blocker.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND application_name = 'hermes-host'").fetchone()
                if row:
                    backend.append(int(row[0]))
                assert time.monotonic() < deadline, "the append never waited for the lock"
                time.sleep(0.05)
            _stop(backend)
            try:
                worker.join(20)
                assert not worker.is_alive(), "the append still waits"
            finally:
                _resume(backend)
        finally:
            blocker.rollback()
            blocker.close()
        assert len(failure) == 1 and isinstance(failure[0], StoreError), failure
        text = str(failure[0])
        assert "stopped answering during a statement (no answer within 7 s: " \
            "statement_timeout=2s + 5 s)" in text, text
        assert 6.5 <= took[0] < 12, took
        assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []
        time.sleep(1.0)  # the resumed backend finishes, or finds its client gone and aborts
        store.append_messages(session.id, [{"role": "user", "content": "after"}])
        contents = [m["content"] for m in store.active_messages(session.id)]
    stalled = [c for c in contents if c.startswith("stalled")]
    if size > 1:
        assert "while appending messages; no COMMIT was sent, so the transaction will be " \
            "rolled back (by the server once it runs again); nothing of it is stored." \
            in text, text
        assert "was rolled back" not in text
        assert contents == ["before", "after"]
    else:
        assert "while appending messages; the server may have carried it out before it " \
            "stopped answering: whether it was stored is unknown until the server answers " \
            "again" in text, text
        assert contents in (["before", "after"], ["before", "stalled 0", "after"]), contents
        print(f"pipelined append stopped mid-statement: stored after SIGCONT: {bool(stalled)}")


def test_statement_timeout_is_on_by_default_and_the_url_s_options_win_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """30 s by default (there was none); ``?statement_timeout=`` sets it, ``0`` sets none
    (the server's own applies, and the client waits without limit); the URL's libpq
    ``options`` win over both.  The client's answer limit follows the value in effect."""
    cases = [("", "30s", 35.0), ("&statement_timeout=2.5", "2500ms", 7.5),
             ("&statement_timeout=0", "0", None),
             ("&statement_timeout=2&options=-c%20statement_timeout%3D1min", "1min", 65.0)]
    for option, shown, within in cases:
        with PostgresStore(hermes_postgres.fresh_url() + option) as store:
            with store._read() as conn:
                assert conn.execute("SHOW statement_timeout").fetchone() == (shown,), option
                assert conn.answer_within == within, option  # type: ignore[attr-defined]
            assert store.settings.answer_within == within
    with pytest.raises(StoreError, match="statement_timeout"):
        parse_url("postgresql://u:s3cret@h/db?statement_timeout=-1")


def test_a_write_that_may_have_committed_says_so_issue_31() -> None:
    """A commit (or an autocommit statement) that got no answer may have been carried out:
    the error says it is unknown, not that nothing was stored."""
    settings = parse_url("postgresql://u:s3cret@db:5432/app")
    unsure = str(translate(settings, NoAnswer(35, unsure=True), "appending messages"))
    sure = str(translate(settings, NoAnswer(35, unsure=False), "appending messages"))
    read = str(translate(settings, NoAnswer(35, unsure=True), "reading the window"))
    assert "whether it was stored is unknown until the server answers again" in unsure
    assert "rolled back" not in unsure and "s3cret" not in unsure
    assert "no COMMIT was sent, so the transaction will be rolled back (by the server once " \
        "it runs again); nothing of it is stored." in sure
    assert "was rolled back" not in sure
    assert "nothing was written or changed" in read
    for text in (unsure, sure, read):
        assert "stopped answering during a statement (no answer within 35 s: " \
            "statement_timeout=30s + 5 s)" in text


def _hold_session_row(server: TestServer, store: PostgresStore,
                      session_id: str) -> psycopg.Connection[Any]:
    """A second real client holding the session's row lock in an open transaction."""
    blocker = server.admin(server.database)
    blocker.autocommit = False
    blocker.execute(f'SET search_path TO "{store.schema}"')
    blocker.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
    return blocker


@pytest.mark.parametrize(("option", "shown", "limit"), [
    ("lock_timeout=1", "lock_timeout=1s", 1.0),
    ("options=-c%20lock_timeout%3D700", "lock_timeout=700ms", 0.7),
])
def test_a_row_lock_held_by_another_client_bounds_the_wait_and_says_so_issue_31(
    hermes_postgres: TestServer, option: str, shown: str, limit: float,
) -> None:
    """The turn's append waits for the session row another client holds: lock_timeout
    (from ?lock_timeout= or from the URL's libpq options) ends the wait and the error is a
    lock wait, not "lost the connection"; the store works once the lock is gone."""
    with PostgresStore(hermes_postgres.fresh_url() + "&" + option) as store:
        session = store.create_session()
        blocker = _hold_session_row(hermes_postgres, store, session.id)
        try:
            started = time.monotonic()
            with pytest.raises(StoreError) as caught:
                store.append_messages(session.id, [{"role": "user", "content": "blocked"}])
            took = time.monotonic() - started
        finally:
            blocker.rollback()
            blocker.close()
        text = str(caught.value)
        assert f"waited past {shown} for a row another client holds" in text, text
        assert "while appending messages; the transaction was rolled back" in text
        assert "lost" not in text and "connect" not in text
        assert limit <= took < limit + 5, took
        store.append_messages(session.id, [{"role": "user", "content": "after"}])
        assert [m["content"] for m in store.active_messages(session.id)] == ["after"]


def test_lock_timeout_is_on_by_default_issue_31(hermes_postgres: TestServer) -> None:
    """Without any option a lock wait ends after 10 s (it had no limit)."""
    with PostgresStore(hermes_postgres.fresh_url()) as store:
        with store._read() as conn:
            assert conn.execute("SHOW lock_timeout").fetchone() == ("10s",)
        session = store.create_session()
        blocker = _hold_session_row(hermes_postgres, store, session.id)
        try:
            started = time.monotonic()
            with pytest.raises(StoreError, match=r"waited past lock_timeout=10s"):
                store.append_messages(session.id, [{"role": "user", "content": "blocked"}])
            took = time.monotonic() - started
        finally:
            blocker.rollback()
            blocker.close()
        assert 9.5 <= took < 20, took


def test_libpq_options_reach_the_server_as_written_and_statement_timeout_is_named_issue_31(
    hermes_postgres: TestServer,
) -> None:
    """``options=-c%20statement_timeout%3D500`` (what psql accepts) was re-encoded as
    ``-c+statement_timeout%3D500`` and refused by the server; now it reaches libpq as
    written, and a statement cut by it is reported as such (it was "lost or could not open
    the database connection")."""
    url = hermes_postgres.fresh_url() + "&options=-c%20statement_timeout%3D500&lock_timeout=0"
    assert "options=-c%20statement_timeout%3D500" in parse_url(url).conninfo
    with PostgresStore(url) as store:
        with store._read() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("500ms",)
            assert conn.execute("SHOW lock_timeout").fetchone() == ("0",)
        session = store.create_session()
        blocker = _hold_session_row(hermes_postgres, store, session.id)
        try:  # no lock_timeout: the append waits until statement_timeout ends it
            with pytest.raises(StoreError) as caught:
                store.append_messages(session.id, [{"role": "user", "content": "slow"}])
        finally:
            blocker.rollback()
            blocker.close()
        text = str(caught.value)
        assert "a statement ran past statement_timeout=500ms" in text, text
        assert "lost" not in text and hermes_postgres.password not in text


def test_url_query_options_pass_through_unchanged_issue_31() -> None:
    url = ("postgresql://u:s3cret@db:6543/app?schema=team_a&options=-c%20statement_timeout"
           "%3D500&application_name=my+app&lock_timeout=2.5&sslmode=disable&pool_max=4")
    settings = parse_url(url)
    assert settings.conninfo == ("postgresql://u:s3cret@db:6543/app?options=-c%20"
                                 "statement_timeout%3D500&application_name=my+app"
                                 "&sslmode=disable")
    assert settings.options == "-c statement_timeout=500"
    assert (settings.schema, settings.pool_max, settings.lock_timeout) == ("team_a", 4, 2.5)
    assert (settings.pool_timeout, settings.connect_timeout) == (1.0, 3)
    assert settings.server == "db:6543" and "s3cret" not in settings.shown
    assert parse_url("postgresql://u@h1:5433,h2/db?connect_timeout=7").server == \
        "h1:5433,h2:5432"
    assert parse_url("postgresql://u@h/db?connect_timeout=7").connect_timeout == 7
    with pytest.raises(StoreError, match="lock_timeout"):
        parse_url("postgresql://u:s3cret@h/db?lock_timeout=-1")


def test_a_busy_pool_waits_pool_timeout_then_uses_a_direct_connection_issue_31(
    pg_url: str,
) -> None:
    """``pool_max=1`` and its connection busy in another thread: a call waits pool_timeout
    (1 s) and goes on over a direct connection — a full pool is no error."""
    with PostgresStore(pg_url + "&pool_max=1") as store:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store._connection():
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(30)
            started = time.monotonic()
            assert store.list_sessions() == []
            took = time.monotonic() - started
        finally:
            release.set()
            holder.join(30)
    assert 0.9 <= took < 10, took


def test_only_this_store_s_pool_warnings_are_silenced_issue_31(
    pg_url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    from psycopg_pool import ConnectionPool

    caplog.set_level(logging.WARNING)
    pool: ConnectionPool[Any] = ConnectionPool(
        f"postgresql://u:x@127.0.0.1:{_closed_port()}/db", min_size=1, open=False,
        name="someone-else")
    store = PostgresStore(pg_url)
    try:
        pool.open(wait=False)
        deadline = time.monotonic() + 10
        while not any("someone-else" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the other pool's warning was silenced"
            time.sleep(0.1)
    finally:
        pool.close()
        store.close()
