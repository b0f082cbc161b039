"""The fence's worker pool: daemon threads, leak cap, prompt exit, trace switch (R-0.4, R-10.2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from fence_helpers import (
    Decider,
    Gate,
    Hung,
    Raiser,
    make_pm,
    should_request,
    wait_until,
)

from hermes_host.config import HooksSection
from hermes_host.fence import TRACE_ENV, HookRunner, Provenance

REPO = Path(__file__).resolve().parents[1]


def test_r10_2_workers_are_daemon_threads_and_are_reused() -> None:
    decider = Decider()
    runner = HookRunner(make_pm(d=decider))
    for _ in range(20):
        assert runner.call("d", "should_compress", should_request()).adopted
    assert len(set(decider.threads)) == 1  # one warm worker served every sequential call
    worker = next(t for t in threading.enumerate() if t.name == decider.threads[0])
    assert worker.daemon
    assert runner.pool_state()["threads"] == 1


def test_r0_4_leaked_workers_are_capped_per_plugin_and_its_calls_fail_fast() -> None:
    """Issue 13: the leak cap counts each plugin's stuck calls on their own — a hung plugin
    is refused once it has ``max_leaked_workers`` stuck, and another plugin is not."""
    gate = Gate()
    hung = Hung(gate)
    runner = HookRunner(make_pm(hung=hung, d=Decider()), HooksSection(max_leaked_workers=2))
    try:
        for _ in range(2):
            stamp = runner.call("hung", "should_compress", should_request(), timeout=0.05)
            assert stamp.provenance is Provenance.TIMEOUT
        state = runner.pool_state()
        assert state["leaked"] == 2 and state["leaked_by_plugin"] == {"hung": 2}
        refused = runner.call("hung", "should_compress", should_request(), timeout=5)
        assert refused.duration < 0.5  # fails fast: no thread, no 5 s wait
        assert refused.provenance is Provenance.ERROR and refused.error_type == "PoolExhausted"
        assert "max_leaked_workers = 2" in refused.error and "'hung'" in refused.error
        assert hung.calls == 2  # nothing new was started for it
        # another plugin is not affected by the hung one's stuck workers
        for _ in range(5):
            assert runner.call("d", "should_compress", should_request(), timeout=5).adopted
    finally:
        gate.release()
    assert wait_until(lambda: runner.pool_state()["leaked"] == 0)
    assert runner.call("hung", "should_compress", should_request()).adopted


def test_r0_4_no_breaker_trial_while_the_plugins_previous_call_is_stuck() -> None:
    """Issue 13: after the cooldown the trial call waits until the plugin's stuck call has
    returned — it would only leak one more thread — and then runs."""
    from fence_helpers import FakeClock

    from hermes_host.config import BreakerSection

    gate, clock = Gate(), FakeClock()
    hung = Hung(gate)
    hooks = HooksSection(breaker=BreakerSection(failures=1, cooldown_seconds=10))
    runner = HookRunner(make_pm(hung=hung, d=Decider()), hooks, clock=clock)
    try:
        first = runner.call("hung", "should_compress", should_request(), timeout=0.05)
        assert first.provenance is Provenance.TIMEOUT
        clock.advance(11)
        skipped = runner.call("hung", "should_compress", should_request(), timeout=0.05)
        assert skipped.provenance is Provenance.BREAKER_OPEN
        assert "still running" in skipped.error
        assert hung.calls == 1
        assert runner.call("d", "should_compress", should_request()).adopted
    finally:
        gate.release()
    assert wait_until(lambda: runner.pool_state()["leaked"] == 0)
    trial = runner.call("hung", "should_compress", should_request())
    assert trial.adopted and hung.calls == 2
    assert runner.breaker_state()["hung"]["state"] == "closed"


def test_r0_4_process_with_a_hung_plugin_exits_promptly(tmp_path: Path) -> None:
    """A real interpreter: the plugin sleeps forever, the call times out, the script ends."""
    script = tmp_path / "hung_plugin.py"
    script.write_text(
        textwrap.dedent(
            """
            import time
            import pluggy
            from hermes_host import hookimpl, hookspecs
            from hermes_host.fence import HookRunner
            from hermes_host.models import GuardState, ShouldCompressRequest

            class SleepsForever:
                @hookimpl
                def should_compress(self, request):
                    while True:
                        time.sleep(3600)

            pm = pluggy.PluginManager("hermes_host")
            pm.add_hookspecs(hookspecs)
            pm.register(SleepsForever(), name="sleeper")
            request = ShouldCompressRequest(
                session_id="s", messages=[], current_tokens=1, context_length=10,
                guards=GuardState(now=0.0),
            )
            stamp = HookRunner(pm).call("sleeper", "should_compress", request, timeout=0.2)
            print("provenance", stamp.provenance.value)
            """
        )
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "provenance timeout" in done.stdout
    assert elapsed < 5.0, f"interpreter took {elapsed:.1f}s to exit"


def test_r0_4_trace_switch_prints_one_line_per_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TRACE_ENV, "1")
    runner = HookRunner(make_pm(d=Decider(), boom=Raiser(KeyError("k"))))
    monkeypatch.delenv(TRACE_ENV)  # read once, at construction
    runner.call("d", "should_compress", should_request())
    runner.call("boom", "should_compress", should_request())
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    assert "plugin=d hook=should_compress" in lines[0] and "provenance=ok" in lines[0]
    assert "ms" in lines[0] and "error=" not in lines[0]
    assert "plugin=boom" in lines[1] and "provenance=error error=KeyError" in lines[1]


def test_r0_4_trace_is_off_without_the_switch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TRACE_ENV, raising=False)
    HookRunner(make_pm(d=Decider())).call("d", "should_compress", should_request())
    assert capsys.readouterr().err == ""


def test_r0_4_trace_in_a_real_process_goes_to_stderr(tmp_path: Path) -> None:
    script = tmp_path / "trace.py"
    script.write_text(
        textwrap.dedent(
            """
            import pluggy
            from hermes_host import hookimpl, hookspecs
            from hermes_host.fence import HookRunner
            from hermes_host.models import CompressDecision, GuardState, ShouldCompressRequest

            class Yes:
                @hookimpl
                def should_compress(self, request):
                    return CompressDecision(compress=True)

            pm = pluggy.PluginManager("hermes_host")
            pm.add_hookspecs(hookspecs)
            pm.register(Yes(), name="yes")
            request = ShouldCompressRequest(
                session_id="s", messages=[], current_tokens=1, context_length=10,
                guards=GuardState(now=0.0),
            )
            HookRunner(pm).call("yes", "should_compress", request)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={**os.environ, TRACE_ENV: "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "plugin=yes hook=should_compress" in done.stderr
    assert "provenance=ok" in done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_r0_4_a_forked_child_gets_fresh_workers() -> None:
    """The parent's worker threads do not exist after fork; the child's calls still work."""
    runner = HookRunner(make_pm(d=Decider()))
    assert runner.call("d", "should_compress", should_request()).adopted  # warm parent pool
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            stamp = runner.call("d", "should_compress", should_request(), timeout=2)
            code = 0 if stamp.adopted else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung calling the fence")
    assert os.waitstatus_to_exitcode(status) == 0
    assert runner.call("d", "should_compress", should_request()).adopted  # parent unaffected


def test_r10_2_idle_workers_exit_so_a_dropped_runner_frees_its_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hermes_host.fence import workers

    monkeypatch.setattr(workers, "IDLE_SECONDS", 0.05)
    decider = Decider()
    runner = HookRunner(make_pm(d=decider))
    assert runner.call("d", "should_compress", should_request()).adopted
    name = decider.threads[0]
    assert wait_until(lambda: runner.pool_state()["threads"] == 0)
    assert wait_until(lambda: name not in {t.name for t in threading.enumerate()})
    assert runner.call("d", "should_compress", should_request()).adopted  # a new worker
    assert decider.threads[1] != name
