"""Per-plugin circuit breaker (DESIGN "Fences" step 5, R-0.4), driven by an injected clock."""

from __future__ import annotations

from typing import Any

import pytest
from fence_helpers import (
    Decider,
    FakeClock,
    Flaky,
    Gate,
    Hung,
    Returns,
    make_pm,
    select_request,
    should_request,
)

from hermes_host import SelectResult, hookimpl
from hermes_host.config import BreakerSection, HooksSection
from hermes_host.fence import HookRunner, Provenance


def _runner(clock: FakeClock, **plugins: object) -> HookRunner:
    hooks = HooksSection(breaker=BreakerSection(failures=2, cooldown_seconds=30))
    return HookRunner(make_pm(**plugins), hooks, clock=clock)


def test_r0_4_breaker_opens_after_consecutive_failures_and_skips_the_plugin() -> None:
    clock, flaky = FakeClock(), Flaky()
    runner = _runner(clock, flaky=flaky)
    first = runner.call("flaky", "should_compress", should_request())
    second = runner.call("flaky", "should_compress", should_request())
    assert [first.provenance, second.provenance] == [Provenance.ERROR, Provenance.ERROR]
    assert flaky.calls == 2
    skipped = runner.call("flaky", "should_compress", should_request())
    assert skipped.provenance is Provenance.BREAKER_OPEN and skipped.failed
    assert flaky.calls == 2  # the plugin was not called at all
    assert "'flaky'" in skipped.error and "circuit breaker open" in skipped.error
    assert "2 consecutive failures" in skipped.error and "ConnectionError" in skipped.error
    assert "30.0s" in skipped.error
    state = runner.breaker_state()["flaky"]
    assert state["state"] == "open" and state["consecutive_failures"] == 2
    assert state["retry_in_seconds"] == pytest.approx(30)


def test_r0_4_breaker_trial_call_after_cooldown_closes_on_success() -> None:
    clock, flaky = FakeClock(), Flaky()
    runner = _runner(clock, flaky=flaky)
    for _ in range(2):
        runner.call("flaky", "should_compress", should_request())
    clock.advance(29.9)
    assert runner.call("flaky", "should_compress", should_request()).provenance is (
        Provenance.BREAKER_OPEN
    )
    clock.advance(0.2)
    assert runner.breaker_state()["flaky"]["state"] == "half_open"
    flaky.failing = False
    trial = runner.call("flaky", "should_compress", should_request())
    assert trial.adopted and trial.value.reason == "recovered"
    assert runner.breaker_state()["flaky"]["state"] == "closed"
    assert runner.breaker_state()["flaky"]["consecutive_failures"] == 0
    assert runner.call("flaky", "should_compress", should_request()).adopted


def test_r0_4_failed_trial_reopens_the_breaker_at_once() -> None:
    clock, flaky = FakeClock(), Flaky()
    runner = _runner(clock, flaky=flaky)
    for _ in range(2):
        runner.call("flaky", "should_compress", should_request())
    clock.advance(31)
    trial = runner.call("flaky", "should_compress", should_request())
    assert trial.provenance is Provenance.ERROR and flaky.calls == 3
    again = runner.call("flaky", "should_compress", should_request())
    assert again.provenance is Provenance.BREAKER_OPEN and flaky.calls == 3
    assert runner.breaker_state()["flaky"]["retry_in_seconds"] == pytest.approx(30)


def test_r0_4_success_resets_the_consecutive_count() -> None:
    clock, flaky = FakeClock(), Flaky()
    runner = _runner(clock, flaky=flaky)
    runner.call("flaky", "should_compress", should_request())
    flaky.failing = False
    runner.call("flaky", "should_compress", should_request())
    flaky.failing = True
    runner.call("flaky", "should_compress", should_request())
    assert runner.call("flaky", "should_compress", should_request()).provenance is (
        Provenance.ERROR
    )  # 1 + 1 failures separated by a success: still closed before this call
    assert runner.breaker_state()["flaky"]["state"] == "open"


def test_r0_4_breaker_is_per_plugin_and_counts_invalid_and_timeouts() -> None:
    clock, gate = FakeClock(), Gate()
    try:
        runner = _runner(clock, bad=Returns("wrong type"), hung=Hung(gate), good=Decider())
        for _ in range(2):
            assert runner.call("bad", "should_compress", should_request()).provenance is (
                Provenance.INVALID
            )
            assert runner.call(
                "hung", "should_compress", should_request(), timeout=0.05
            ).provenance is (Provenance.TIMEOUT)
        assert runner.call("bad", "should_compress", should_request()).provenance is (
            Provenance.BREAKER_OPEN
        )
        assert runner.call("hung", "should_compress", should_request()).provenance is (
            Provenance.BREAKER_OPEN
        )
        assert runner.call("good", "should_compress", should_request()).adopted
        states = runner.breaker_state()
        assert states["good"]["state"] == "closed" and states["good"]["calls"] == 1
        assert states["hung"]["last_error"].startswith(
            "plugin 'hung' hook 'should_compress' timed out after"
        )
        assert states["bad"]["last_error"].startswith(
            "plugin 'bad' hook 'should_compress' returned an invalid result"
        )
    finally:
        gate.release()


def test_r0_4_none_answers_do_not_count_as_failures() -> None:
    clock = FakeClock()
    runner = _runner(clock, quiet=Returns(None))
    for _ in range(5):
        assert runner.call("quiet", "should_compress", should_request()).provenance is (
            Provenance.NONE
        )
    assert runner.breaker_state()["quiet"]["state"] == "closed"


class HalfBroken:
    """``should_compress`` always fails; ``select_context`` works (issue 30)."""

    def __init__(self) -> None:
        self.selects = 0

    @hookimpl
    def should_compress(self, request: Any) -> Any:
        raise ConnectionError("trigger service down")

    @hookimpl
    def select_context(self, request: Any) -> Any:
        self.selects += 1
        return SelectResult(messages=list(request.messages), decision={"engine": "half"})


def test_each_hook_has_its_own_breaker_and_last_error() -> None:
    """Issue 30: one engine's should_compress failures opened a breaker that also skipped its
    select_context, and the "last error" then named the other hook."""
    clock, engine = FakeClock(), HalfBroken()
    runner = _runner(clock, half=engine)
    for _ in range(3):
        runner.call("half", "should_compress", should_request())
    skipped = runner.call("half", "should_compress", should_request())
    assert skipped.provenance is Provenance.BREAKER_OPEN
    assert "hook 'should_compress' skipped" in skipped.error
    selected = runner.call("half", "select_context", select_request())
    assert selected.adopted and engine.selects == 1  # not skipped by the other hook's breaker
    state = runner.breaker_state()["half"]
    assert state["state"] == "open"  # the plugin's summary: its worst hook
    assert state["hooks"]["should_compress"]["state"] == "open"
    assert state["hooks"]["select_context"] == {
        "state": "closed", "consecutive_failures": 0, "calls": 1, "failures": 0,
        "last_error": None, "retry_in_seconds": None}
    assert "hook 'should_compress' raised ConnectionError" in state["last_error"]
    rows = {row.hook: row for row in runner.health()}
    assert rows["should_compress"].breaker == "open"
    assert rows["select_context"].breaker == "closed"
    assert "should_compress" in (rows["should_compress"].last_error or "")
