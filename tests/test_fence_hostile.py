"""Hostile engines through the real host, fence and SQLite store, in both isolation modes
(issue 13, R-0.4, R-10.2).

Each test runs a compression pass (or a turn) against an engine that misbehaves one way and
checks: the pass returns within the hook's timeout plus a generous margin (the machine is
loaded: the bound proves a kill or a refusal, the benchmark has the precise figures), the
session keeps its original window, and the failure is on record with its provenance.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from host_helpers import chat_turn, make_host
from hostile_engines import Hostile

from hermes_host.messages import check_invariants

TIMEOUT = 1.0
MARGIN = 2.0  # "< timeout + 2 s" proves the call was cut off, not waited out
REPO = Path(__file__).resolve().parents[1]


def _host(
    tmp_path: Path, engine: object, mode: str, timeout: float = TIMEOUT, **fence: Any
) -> Any:
    return make_host(
        tmp_path,
        engine,
        name="hostile",
        hooks={"timeouts": {"compress": timeout, "select_context": timeout}},
        engines={"hostile": {"fence": {"isolation": mode, **fence}}},
    )


def _compress_once(host: Any) -> tuple[Any, Any, list[Any], float]:
    session = host.open_session(system_prompt="sys")
    chat_turn(session, 1)
    chat_turn(session, 2)
    before = host.store.active_messages(session.id)
    started = time.monotonic()
    report = session.compress(force=True)
    return session, report, before, time.monotonic() - started


def _problem(host: Any) -> Any:
    rows = [r for r in host.runner.health() if r.plugin == "hostile" and r.hook == "compress"]
    assert rows and rows[0].problems, host.runner.health()
    return rows[0]


CASES = [
    # behaviour, options, provenance, words in the error
    ("hang", {"seconds": 4.0}, "timeout", "timed out after 1s"),
    ("raise", {}, "error", "raised RuntimeError: hostile engine raised"),
    ("invalid", {}, "invalid", "window invariant violation"),
    ("dict", {}, "invalid", "returned a plain dict"),
    ("late", {"seconds": 1.6}, "timeout", "timed out after 1s"),
    ("huge", {}, "invalid", "result too large: "),
    ("sys_exit", {}, "error", "raised SystemExit: 3"),
]


@pytest.mark.parametrize("mode", ["thread", "process"])
@pytest.mark.parametrize(("behaviour", "options", "provenance", "words"), CASES)
def test_issue13_hostile_engine_leaves_the_window_and_a_provenance_record(
    tmp_path: Path, mode: str, behaviour: str, options: dict[str, Any], provenance: str,
    words: str,
) -> None:
    """Issue 13: hang, raise, invalid output, a dict, a late return, a 100 MB result and
    ``sys.exit`` — in both modes the pass returns in time, the window is unchanged and the
    failure is stamped with its provenance.  (Building 100 MB takes the engine itself about
    a second on this loaded machine: that case gets 5 s, and must not take 68 s.)"""
    timeout = 5.0 if behaviour == "huge" else TIMEOUT
    with _host(tmp_path, Hostile(behaviour, **options), mode, timeout) as host:
        session, report, before, elapsed = _compress_once(host)
        assert (report.status, report.outcome) == ("rejected", provenance), report.message
        assert elapsed < timeout + MARGIN, f"{behaviour}/{mode}: {elapsed:.2f}s"
        assert host.store.active_messages(session.id) == before
        assert host.store.lineage(session.id) == [session.id]  # no rotation
        row = _problem(host)
        assert words in (row.last_error or ""), row.last_error
        if behaviour == "huge":
            assert "bytes > cap of 16777216 bytes" in row.last_error


def test_issue13_gil_holding_engine_is_killed_at_its_deadline_in_process_mode(
    tmp_path: Path,
) -> None:
    """A catastrophic regex never releases the GIL; the worker process is SIGKILLed at the
    deadline (size 40 would run for days)."""
    with _host(tmp_path, Hostile("regex", size=40), "process") as host:
        session, report, before, elapsed = _compress_once(host)
        assert (report.status, report.outcome) == ("rejected", "timeout")
        assert elapsed < TIMEOUT + MARGIN, f"{elapsed:.2f}s"
        assert "worker process was killed" in (_problem(host).last_error or "")
        assert host.store.active_messages(session.id) == before
        # a fresh worker serves the next call
        host.plugins.pm.get_plugin("hostile").behaviour = "ok"  # the parent's copy only
        assert host.runner.pool_state()["processes"]["hostile"]["idle"] >= 1


def test_issue13_thread_mode_cannot_stop_a_gil_holding_engine_but_never_adopts_it(
    tmp_path: Path,
) -> None:
    """The documented limit of thread mode: a GIL-holding engine delays the caller until it
    lets go (~4 s here, against a 1 s timeout) — and its answer is still never adopted."""
    with _host(tmp_path, Hostile("regex", size=26), "thread") as host:
        session, report, before, elapsed = _compress_once(host)
        assert (report.status, report.outcome) == ("rejected", "timeout")
        assert host.store.active_messages(session.id) == before
        assert elapsed > TIMEOUT  # not cut off: the thread could not be stopped


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_issue13_an_engine_mutating_its_result_after_returning_commits_nothing_invalid(
    tmp_path: Path, mode: str
) -> None:
    """Issue 13: a thread appending orphan tool calls to the returned window put one in the
    store in 13 of 24 runs.  The fence validates (and the host commits) its own copy."""
    for run in range(6):
        with _host(tmp_path / str(run), Hostile("mutate", seconds=1.0), mode) as host:
            session, report, before, _ = _compress_once(host)
            stored = host.store.active_messages(session.id)
            assert check_invariants(stored) == [], report
            assert "call_orphan" not in repr(stored)
            if report.status != "committed":
                assert report.outcome == "invalid" and stored == before
            time.sleep(0.05)  # let the vandal run on against the engine's own objects
            assert host.store.active_messages(session.id) == stored


def test_issue13_os_exit_in_process_mode_is_an_error_and_the_host_lives(tmp_path: Path) -> None:
    with _host(tmp_path, Hostile("os_exit"), "process") as host:
        session, report, before, elapsed = _compress_once(host)
        assert (report.status, report.outcome) == ("rejected", "error")
        assert elapsed < TIMEOUT + MARGIN
        row = _problem(host)
        assert row.last_error_type == "WorkerDied" and "exited with status 7" in row.last_error
        assert host.store.active_messages(session.id) == before


def test_issue13_a_memory_hungry_engine_in_process_mode_is_contained(tmp_path: Path) -> None:
    """The worker's address space is capped (``fence.memory_limit_mb``): the engine gets a
    MemoryError (or dies) in its own process; the host does not grow."""
    engine = Hostile("memory")
    with _host(tmp_path, engine, "process", memory_limit_mb=400) as host:
        session, report, before, elapsed = _compress_once(host)
        assert (report.status, report.outcome) in {("rejected", "error"), ("rejected", "timeout")}
        assert elapsed < TIMEOUT + MARGIN
        assert host.store.active_messages(session.id) == before


def test_issue13_thread_mode_does_not_survive_os_exit(tmp_path: Path) -> None:
    """The documented limit of thread mode: ``os._exit`` in an engine ends the host process
    (the reason process mode exists).  Run in a real interpreter."""
    script = tmp_path / "exit.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from host_helpers import chat_turn, make_host
        from hostile_engines import Hostile
        from pathlib import Path
        host = make_host(Path({str(tmp_path)!r}), Hostile("os_exit"), name="hostile")
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        chat_turn(session, 2)
        session.compress(force=True)
        print("survived")
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 7 and "survived" not in done.stdout, done.stderr


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_issue13_history_handle_cannot_write_the_store(tmp_path: Path, mode: str) -> None:
    """Issue 13: ``request.history._store._conn().execute("UPDATE …")`` rewrote stored user
    messages.  The reader holds no store and a read-only connection; in process mode the
    handle is a proxy whose questions the host answers."""
    with _host(tmp_path, Hostile("write_history"), mode) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        sent = session.build_request()
        assert "PWNED" not in repr(sent)
        rows = host.runner.health()
        select = next(r for r in rows if r.plugin == "hostile" and r.hook == "select_context")
        assert select.errors >= 1 and "write attempts" in (select.last_error or "")
        assert "wrote" not in select.last_error
        assert "PWNED" not in repr(host.store.all_messages(session.id))
        reader = host.store.history_reader(session.id)
        assert not hasattr(reader, "_store")
        assert reader.search("question")  # it reads
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._conn[0].execute("UPDATE messages SET content = 'PWNED'")  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_issue13_threads_left_behind_by_an_engine_do_not_delay_later_hooks(
    tmp_path: Path, mode: str
) -> None:
    """An engine that returns at once but leaves a thread running: in thread mode a Python
    loop (it shares the GIL), in process mode a GIL-holding regex — which may cost that call
    its answer (the worker cannot send it) but is killed with its worker, so the next hook
    runs in the spare warm worker (``fence.workers: 2``), undelayed."""
    size = 40 if mode == "process" else 0  # 0: a Python busy loop for 10 s
    engine = Hostile("threads", size=size, seconds=10.0)
    with _host(tmp_path, engine, mode, workers=2) as host:
        session, report, _, elapsed = _compress_once(host)
        assert elapsed < TIMEOUT + MARGIN
        if mode == "thread":
            assert report.status == "committed", report.message
        else:
            assert (report.status, report.outcome) in {("committed", "summarised"),
                                                       ("rejected", "timeout")}
        started = time.monotonic()
        session.build_request()  # select_context: answered None at once by a fresh worker
        assert time.monotonic() - started < TIMEOUT + MARGIN
        select = next(r for r in host.runner.health() if r.hook == "select_context")
        assert select.problems == 0 and select.none >= 1, select
