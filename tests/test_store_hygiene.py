"""Store hygiene (issue 12): short non-ASCII queries are found (R-13.3), and a long-running
host whose threads come and go does not accumulate SQLite connections and descriptors."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from host_helpers import TailEngine

from hermes_host import SelectRequest, hookimpl
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.store.sqlite import SQLiteStore

# -- connections of threads that ended --------------------------------------------------------


def _fds_on(db: Path) -> int:
    """Open descriptors of this process on the store's files (db, -wal, -shm)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(db)):
            count += 1
    return count


def _all_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Searcher:
    """A select_context engine that reads the stored history in its fence worker, and waits
    until ``parties`` selects are in flight at once, so that the fence needs that many
    workers (more than it keeps idle: the extra ones exit after each burst)."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties)
        self.workers: set[str] = set()

    @hookimpl
    def select_context(self, request: SelectRequest) -> None:
        assert request.history is not None
        request.history.search("question", limit=1)
        self.workers.add(threading.current_thread().name)
        self.barrier.wait(timeout=20)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_connections_of_ended_threads_are_closed_across_many_turns(tmp_path: Path) -> None:
    """300 turns, 12 at a time, each on a fresh caller thread (a thread-per-request
    gateway); 12 concurrent selects need 12 fence workers and only 8 stay idle, so workers
    come and go too.  Every thread touches the store.  Descriptors stay bounded by the
    threads alive at once, not by every thread that ever ran (before: 2 per thread that
    ever touched the store, about 1,000 here)."""
    db = tmp_path / "state.db"
    config = HermesConfig.model_validate({
        "context": {"engine": "tail", "hooks": {"select_context": ["searcher"]}},
        "hooks": {"timeouts": {"select_context": 30}},
    })
    searcher = Searcher(parties=12)
    with ContextHost.from_config(
        config, store=db, extra_plugins={"tail": TailEngine(threshold=10**9),
                                         "searcher": searcher}
    ) as host:
        sessions = [host.open_session(system_prompt="sys") for _ in range(12)]
        errors: list[BaseException] = []

        def turn(session: object, n: int) -> None:
            try:
                session.add_user(f"question {n}")  # type: ignore[attr-defined]
                session.build_request()  # type: ignore[attr-defined]
                session.add_assistant(f"answer {n}")  # type: ignore[attr-defined]
                session.end_turn()  # type: ignore[attr-defined]
            except BaseException as exc:  # re-raised below, in the test's thread
                errors.append(exc)

        def burst(first: int) -> None:
            threads = [threading.Thread(target=turn, args=(s, first + i))
                       for i, s in enumerate(sessions)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        burst(0)  # warm up: the pool's idle workers exist, SQLite's file handles too
        baseline_all, baseline_db = _all_fds(), _fds_on(db)
        for n in range(12, 300, 12):
            burst(n)
        assert not errors, errors[0]
        assert len(searcher.workers) >= 12 + 4 * 24  # 4 workers exit after each burst
        # Flat after the warm-up burst (SQLite reuses the descriptors of closed connections
        # it still holds for POSIX lock safety), and within 2 per thread alive at the peak
        # of a burst: 12 callers, 12 workers, the main thread.
        assert _fds_on(db) <= baseline_db + 4, (_fds_on(db), baseline_db)
        assert _all_fds() <= baseline_all + 8, (_all_fds(), baseline_all)
        assert _fds_on(db) <= 2 * 25 + 2
        assert isinstance(host.store, SQLiteStore)
        for s in sessions:  # nothing was lost on the way
            assert len(host.store.all_messages(s.id)) == 2 * 25
    assert _fds_on(db) == 0  # close() closes the connections of live threads too


def test_close_closes_a_live_threads_connection(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = SQLiteStore(db)
    touched, finish = threading.Event(), threading.Event()

    def worker() -> None:
        store.list_sessions()
        touched.set()
        finish.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert touched.wait(10)
        assert _fds_on(db) >= 2  # the main thread's connection and the worker's
        store.close()
        assert _fds_on(db) == 0
    finally:
        finish.set()
        thread.join()
