"""Results are data, not objects; isolation is chosen per engine (issue 13, R-10.2)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fence_helpers import Gate, make_pm, select_request, window
from host_helpers import TailEngine, chat_turn, make_config

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.config import ConfigError, FenceSection, HermesConfig, parse_config
from hermes_host.fence import HookRunner, Provenance
from hermes_host.fence.snapshot import NotPlainData, ResultTooLarge, plain
from hermes_host.host import ContextHost


class SneakyDict(dict):  # type: ignore[type-arg]
    """A dict subclass whose methods lie: the fence must read the real items, run none of
    this code, and keep a plain dict."""

    def items(self):  # type: ignore[no-untyped-def, override]
        raise AssertionError("plugin code ran in the host's thread")

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("plugin code ran in the host's thread")


def test_issue13_plain_copies_through_base_class_methods_and_drops_subclasses() -> None:
    message = SneakyDict(role="user", content="hi")
    data, size = plain([message], cap=10_000, deadline=float("inf"), timer=time.perf_counter)
    assert data == [{"role": "user", "content": "hi"}] and type(data[0]) is dict
    assert data[0] is not message and size > 0


def test_issue13_plain_measures_size_before_scanning_and_refuses_other_types() -> None:
    huge = "x" * 50_000_000
    started = time.perf_counter()
    too_large = r"result too large: 500000\d\d bytes > cap of 1024 bytes"
    with pytest.raises(ResultTooLarge, match=too_large):
        plain({"content": huge}, cap=1024, deadline=float("inf"), timer=time.perf_counter)
    assert time.perf_counter() - started < 0.5  # len(), never a scan or a copy
    with pytest.raises(NotPlainData, match=r"a object at result\['x'\]"):
        plain({"x": object()}, cap=1024, deadline=float("inf"), timer=time.perf_counter)


class Keeper:
    """Returns a window and keeps the list, to change it after the fence has it."""

    def __init__(self) -> None:
        self.returned: list[Any] = []

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        result = SelectResult(messages=window())
        self.returned = result.messages
        return result


def test_issue13_the_adopted_value_is_the_hosts_copy_not_the_engines_object() -> None:
    keeper = Keeper()
    stamp = HookRunner(make_pm(k=keeper)).call("k", "select_context", select_request())
    assert stamp.adopted
    assert stamp.value.messages is not keeper.returned
    keeper.returned.append({"role": "assistant", "content": "injected later"})
    keeper.returned[0]["content"] = "HIJACKED"
    assert stamp.value.messages == window()


class HangingSelect:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.gate.hold()
        return SelectResult(messages=request.messages)


def test_issue13_a_hung_select_context_never_starves_the_compressor(tmp_path: Path) -> None:
    """Issue 13: a hung ``select_context`` leaked 8 workers, after which the compressor's
    ``compress`` was refused forever.  Leak caps are per plugin now."""
    gate = Gate()
    config = make_config(
        "tail",
        context={"engine": "tail", "hooks": {"select_context": ["hung"]}},
        hooks={"timeouts": {"select_context": 0.05}, "max_leaked_workers": 2},
    )
    host = ContextHost.from_config(
        config, store=tmp_path / "state.db",
        extra_plugins={"tail": TailEngine(keep=1, threshold=10**9), "hung": HangingSelect(gate)},
    )
    try:
        session = host.open_session(system_prompt="sys")
        for n in range(1, 6):  # 10 select_context calls: 2 stuck, the rest refused at once
            chat_turn(session, n)
        assert host.runner.pool_state()["leaked_by_plugin"] == {"hung": 2}
        report = session.compress(force=True)
        assert report.status == "committed", report.message
    finally:
        gate.release()
        host.close()


def test_issue13_isolation_is_set_globally_and_overridden_per_engine() -> None:
    config = parse_config({
        "fence": {"isolation": "process", "max_result_bytes": 4096},
        "engines": {"retrieval": {"max_hits": 3, "fence": {"isolation": "thread"}}},
    })
    expected = FenceSection(isolation="process", max_result_bytes=4096)
    assert config.fence_for("compressor") == expected
    assert config.fence_for("retrieval").isolation == "thread"
    assert config.fence_for("retrieval").max_result_bytes == 4096  # the rest is inherited
    assert HermesConfig().fence_for("x").isolation == "thread"  # the default
    with pytest.raises(ConfigError, match=r"engines\.x\.fence\.isolation: 'fork' is not allowed"):
        parse_config({"engines": {"x": {"fence": {"isolation": "fork"}}}})


def test_issue13_the_fence_key_is_the_hosts_and_never_reaches_the_engines_options() -> None:
    from hermes_host.plugins.loading import _options_for

    config = parse_config({"engines": {"e": {"ratio": 0.5, "fence": {"isolation": "process"}}}})
    assert _options_for(config, "engine", "e") == {"ratio": 0.5}


def test_issue13_the_real_compressor_compresses_in_a_worker_process(tmp_path: Path) -> None:
    """An entry-point engine in process mode: the worker builds its own instance from the
    entry point's class and ``options=``; the compression commits as in thread mode."""
    config = HermesConfig.model_validate({
        "memory": {"providers": []},
        "model": {"context_length": 4000, "max_output_tokens": 200},
        "engines": {"compressor": {"fence": {"isolation": "process"}}},
    })
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        assert host.runner.fence_for("compressor").isolation == "process"
        session = host.open_session(system_prompt="sys")
        for n in range(1, 13):
            chat_turn(session, n, size=80)
        report = session.compress(force=True)
        assert report.status == "committed", report.message
        assert host.runner.pool_state()["processes"]["compressor"]["idle"] >= 1
        assert [r for r in host.runner.health() if r.problems] == []


def test_issue13_concurrent_calls_of_one_process_isolated_plugin(tmp_path: Path) -> None:
    """Two sessions' threads calling the same process-isolated engine at once: each gets a
    worker (a second one is started), both answers are adopted."""
    from fence_helpers import Decider, should_request

    runner = HookRunner(make_pm(d=Decider(compress=True)), fence=FenceSection(isolation="process"))
    stamps: list[Any] = []
    try:
        threads = [
            threading.Thread(
                target=lambda: stamps.append(runner.call("d", "should_compress",
                                                         should_request(), timeout=30))
            )
            for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(stamps) == 3 and all(s.provenance is Provenance.OK for s in stamps), stamps
    finally:
        runner.close()


def test_issue13_a_plugin_that_cannot_reach_a_worker_process_is_a_clear_error() -> None:
    """An instance that cannot be pickled (it holds a lock) and has no entry-point recipe:
    every call says why, instead of silently running it in a thread."""
    from fence_helpers import Hung, should_request

    gate = Gate()
    runner = HookRunner(make_pm(h=Hung(gate)), fence=FenceSection(isolation="process"))
    stamp = runner.call("h", "should_compress", should_request())
    assert stamp.provenance is Provenance.ERROR
    assert stamp.error_type == "IsolationUnavailable"
    assert "cannot hand the plugin to a worker process" in (stamp.error or "")
    gate.release()


def test_r10_2_the_snapshot_keeps_what_pydantic_keeps_and_shares_nothing_mutable() -> None:
    """The snapshot's own shallow copy (issue 15: pydantic's ``__copy__`` without its
    dispatch) keeps the fields set, extras and private attributes, and a plugin that edits
    its copy — fields, nested models, extras, private state — changes nothing of the
    caller's request."""
    from pydantic import ConfigDict, PrivateAttr

    from hermes_host.fence.snapshot import snapshot
    from hermes_host.models import GuardState, ShouldCompressRequest

    class Request(ShouldCompressRequest):
        model_config = ConfigDict(extra="allow")
        _seen: list[str] = PrivateAttr(default_factory=list)

    request = Request(
        session_id="s", messages=[{"role": "user", "content": "hi"}], current_tokens=1,
        context_length=1000, guards=GuardState(now=1.0), note={"k": ["v"]},
    )
    request._seen.append("host")
    copy = snapshot(request)
    assert type(copy) is Request
    assert copy.model_fields_set == request.model_fields_set
    assert copy.model_extra == {"note": {"k": ["v"]}}
    assert copy._seen == ["host"]

    copy.guards.now = 99.0
    copy.messages[0]["content"] = "edited"
    assert copy.model_extra is not None
    copy.model_extra["note"]["k"].append("w")
    copy._seen.append("plugin")
    copy.model_fields_set.add("model")
    assert request.guards.now == 1.0
    assert request.messages[0]["content"] == "hi"
    assert request.model_extra == {"note": {"k": ["v"]}}
    assert request._seen == ["host"]
    assert "model" not in request.model_fields_set
