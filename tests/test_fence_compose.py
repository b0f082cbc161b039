"""Composition over the fence: firstresult chains, the select_context chain, broadcast
(R-14.3, R-14.4, R-14.8; hookspecs fail policies)."""

from __future__ import annotations

import time

from fence_helpers import (
    Decider,
    Gate,
    Hung,
    Provider,
    Raiser,
    Returns,
    Tagger,
    make_pm,
    pre_compress_request,
    select_request,
    session_event,
    should_request,
    window,
)

from hermes_host.fence import HookRunner, Provenance
from hermes_host.models import SelectResult

# --- first_result ---------------------------------------------------------------------------


def test_r14_8_first_result_skips_none_and_failed_links_and_stops_at_the_first_answer() -> None:
    first, second = Decider(reason="first"), Decider(reason="second")
    boom = Raiser()
    runner = HookRunner(make_pm(quiet=Returns(None), boom=boom, first=first, second=second))
    value, stamps = runner.first_result(
        "should_compress", ["quiet", "boom", "first", "second"], should_request()
    )
    assert value is not None and value.reason == "first"
    assert [s.plugin for s in stamps] == ["quiet", "boom", "first"]
    assert [s.provenance for s in stamps] == [Provenance.NONE, Provenance.ERROR, Provenance.OK]
    assert (boom.calls, first.calls, second.calls) == (1, 1, 0)


def test_r14_8_first_result_order_is_the_configured_order_not_registration_order() -> None:
    a, b = Decider(reason="a"), Decider(reason="b")
    runner = HookRunner(make_pm(a=a, b=b))  # pluggy alone would call b first (LIFO)
    value, _ = runner.first_result("should_compress", ["a", "b"], should_request())
    assert value.reason == "a"
    value, _ = runner.first_result("should_compress", ["b", "a"], should_request())
    assert value.reason == "b"


def test_r0_4_first_result_with_no_answer_returns_none_and_every_stamp(gate: Gate) -> None:
    runner = HookRunner(make_pm(hung=Hung(gate), bad=Returns("x"), quiet=Returns(None)))
    value, stamps = runner.first_result(
        "should_compress", ["hung", "bad", "quiet"], should_request(), timeout=0.1
    )
    assert value is None
    assert [s.provenance for s in stamps] == [
        Provenance.TIMEOUT,
        Provenance.INVALID,
        Provenance.NONE,
    ]


# --- chain (select_context) -----------------------------------------------------------------


def test_r14_8_select_context_chain_feeds_each_adopted_result_to_the_next_link() -> None:
    a, b, c = Tagger("a"), Tagger("b"), Tagger("c")
    request = select_request()
    before = request.model_dump()
    result, stamps = HookRunner(make_pm(c=c, b=b, a=a)).chain(
        "select_context", ["a", "b", "c"], request
    )
    assert isinstance(result, SelectResult)
    assert result.messages[-1]["_chain"] == ["a", "b", "c"]
    assert (a.seen_chains, b.seen_chains, c.seen_chains) == ([[]], [["a"]], [["a", "b"]])
    assert result.decision == {"by": "c"}
    assert [s.plugin for s in stamps] == ["a", "b", "c"] and all(s.adopted for s in stamps)
    assert request.model_dump() == before  # the caller's window is untouched


def test_r10_2_select_context_chain_fails_open_past_a_failed_or_empty_link(gate: Gate) -> None:
    a, c = Tagger("a"), Tagger("c")
    invalid = Returns({"messages": [{"role": "user", "content": "x"}] * 2})
    runner = HookRunner(
        make_pm(a=a, boom=Raiser(), hung=Hung(gate), quiet=Returns(None), invalid=invalid, c=c)
    )
    result, stamps = runner.chain(
        "select_context", ["a", "boom", "quiet", "invalid", "c"], select_request(), timeout=0.2
    )
    assert result is not None and result.messages[-1]["_chain"] == ["a", "c"]
    assert c.seen_chains == [["a"]]  # c saw a's output, untouched by the failed links
    assert [s.provenance for s in stamps] == [
        Provenance.OK,
        Provenance.ERROR,
        Provenance.NONE,
        Provenance.INVALID,
        Provenance.OK,
    ]


def test_r10_2_chain_with_no_adopted_link_returns_none() -> None:
    result, stamps = HookRunner(make_pm(boom=Raiser(), quiet=Returns(None))).chain(
        "select_context", ["boom", "quiet"], select_request()
    )
    assert result is None and [s.provenance for s in stamps] == [
        Provenance.ERROR,
        Provenance.NONE,
    ]


def test_r14_8_chain_gives_each_engine_its_own_state() -> None:
    a, b = Tagger("a"), Tagger("b")
    HookRunner(make_pm(a=a, b=b)).chain(
        "select_context",
        ["a", "b"],
        select_request(state={"shared": True}),
        states={"a": {"topic": "deploy"}},
    )
    assert a.seen_states == [{"topic": "deploy"}]
    assert b.seen_states == [{}]


def test_r14_8_chain_without_states_passes_the_request_state() -> None:
    a = Tagger("a")
    HookRunner(make_pm(a=a)).chain("select_context", ["a"], select_request(state={"k": 1}))
    assert a.seen_states == [{"k": 1}]


# --- broadcast (memory providers) -----------------------------------------------------------


def test_r14_4_broadcast_isolates_failing_and_hung_providers(gate: Gate) -> None:
    keep, empty = Provider("deploy key lives in ~/.ssh/id_deploy"), Provider(None)
    runner = HookRunner(make_pm(hung=Hung(gate), boom=Raiser(), keep=keep, empty=empty))
    started = time.perf_counter()
    stamps = runner.broadcast(
        "on_pre_compress", ["hung", "boom", "keep", "empty"], pre_compress_request(), timeout=0.3
    )
    elapsed = time.perf_counter() - started
    assert [s.plugin for s in stamps] == ["hung", "boom", "keep", "empty"]
    assert [s.provenance for s in stamps] == [
        Provenance.TIMEOUT,
        Provenance.ERROR,
        Provenance.OK,
        Provenance.NONE,
    ]
    assert stamps[2].value == "deploy key lives in ~/.ssh/id_deploy"
    assert keep.calls == 1 and empty.calls == 1
    assert elapsed < 1.0  # one timeout's worth, not one per provider


def test_r14_4_broadcast_runs_providers_concurrently(gate: Gate) -> None:
    """Three hung providers with a 0.3 s limit cost about 0.3 s, not 0.9 s."""
    runner = HookRunner(make_pm(h1=Hung(gate), h2=Hung(gate), h3=Hung(gate)))
    started = time.perf_counter()
    stamps = runner.broadcast(
        "on_pre_compress", ["h1", "h2", "h3"], pre_compress_request(), timeout=0.3
    )
    elapsed = time.perf_counter() - started
    assert all(s.provenance is Provenance.TIMEOUT for s in stamps)
    assert 0.29 <= elapsed < 0.85  # sequential calls would take >= 0.9 s


def test_r14_4_broadcast_of_an_ignored_return_hook_stamps_success() -> None:
    a, b = Provider("x"), Provider(None)
    stamps = HookRunner(make_pm(a=a, b=b)).broadcast(
        "on_session_start", ["a", "b"], session_event()
    )
    assert [s.provenance for s in stamps] == [Provenance.NONE, Provenance.NONE]
    assert a.calls == b.calls == 1
    stamps = HookRunner(make_pm(r=Returns("ignored"))).broadcast(
        "on_session_start", ["r"], session_event()
    )
    assert stamps[0].provenance is Provenance.OK and stamps[0].value is None


def test_r10_2_select_answer_aliasing_the_snapshot_is_safe() -> None:
    """An engine may return its own (mutated) snapshot list; the caller's list is separate."""
    request = select_request()
    result, _ = HookRunner(make_pm(t=Tagger("t"))).chain("select_context", ["t"], request)
    assert result is not None and result.messages is not request.messages
    assert "_chain" not in request.messages[-1]
    assert request.messages == window()
