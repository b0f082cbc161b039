"""The composition rule, end to end (R-14.8): config → discovery → registration → the fence.

``context.hooks.<hook>`` is used as given and in that order; every other lifecycle hook is
answered by ``context.engine``; ``select_context`` is a chain (each engine gets the previous
one's messages); the other lifecycle hooks take the first adopted answer.
"""

from __future__ import annotations

import pytest
import yaml
from plugins_helpers import ENGINE_GROUP, FakeDist, FakeInstall, fake_installation

from hermes_host import GuardState, PruneRequest, SelectRequest, ShouldCompressRequest
from hermes_host.config import HermesConfig, parse_config
from hermes_host.fence import HookRunner
from hermes_host.plugins import load_plugins

fake = pytest.fixture(fake_installation, name="fake")

ENGINES = '''
from hermes_host import CompressDecision, PruneResult, SelectResult, hookimpl


def _tag(request, tag):
    *window, last = request.messages
    return SelectResult(messages=[*window, dict(last, content=last["content"] + tag)],
                        decision={"by": tag})


class Router:
    @hookimpl
    def select_context(self, request):
        return _tag(request, " [router]")


class Lookup:
    @hookimpl
    def select_context(self, request):
        return _tag(request, " [lookup]")


class Silent:
    """Implements everything, answers nothing: "not mine"."""

    @hookimpl
    def should_compress(self, request):
        return None

    @hookimpl
    def select_context(self, request):
        return None


class Keeper:
    @hookimpl
    def should_compress(self, request):
        return CompressDecision(compress=True, reason=None)

    @hookimpl
    def prune_tool_results_only(self, request):
        out = [dict(m, content="[pruned]") if m["role"] == "tool" else m
               for m in request.messages]
        return PruneResult(messages=out, pruned=sum(m["role"] == "tool" for m in out))
'''

WINDOW = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "where is the config loader?"},
]


@pytest.fixture
def engines(fake: FakeInstall) -> FakeInstall:
    fake.add(
        FakeDist(
            "acme-compose",
            "1.0",
            {ENGINE_GROUP: {"router": "acme_compose:Router", "lookup": "acme_compose:Lookup",
                            "silent": "acme_compose:Silent", "keeper": "acme_compose:Keeper"}},
            {"acme_compose": ENGINES},
        )
    )
    fake.activate()
    return fake


def _runner(text: str) -> tuple[HookRunner, HermesConfig]:
    cfg = parse_config({**_yaml(text), "memory": {"providers": []}})
    return HookRunner(load_plugins(cfg).pm, cfg.hooks), cfg


def _yaml(text: str) -> dict[str, object]:
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _select(runner: HookRunner, chain: list[str]) -> tuple[str, list[str]]:
    request = SelectRequest(session_id="s", messages=WINDOW, incoming_message=WINDOW[-1],
                            budget_tokens=1000)
    result, stamps = runner.chain("select_context", chain, request)
    assert result is not None
    return result.messages[-1]["content"], [s.plugin for s in stamps]


@pytest.mark.usefixtures("engines")
def test_select_context_chain_runs_in_the_configured_order_r14_8() -> None:
    runner, cfg = _runner(
        "context:\n  engine: keeper\n  hooks:\n    select_context: [router, lookup]\n"
    )
    chain = cfg.context.chain("select_context")
    content, asked = _select(runner, chain)
    assert asked == ["router", "lookup"]
    assert content == "where is the config loader? [router] [lookup]"

    runner, cfg = _runner(
        "context:\n  engine: keeper\n  hooks:\n    select_context: [lookup, silent, router]\n"
    )
    chain = cfg.context.chain("select_context")
    content, asked = _select(runner, chain)
    assert asked == ["lookup", "silent", "router"]  # a None link passes messages through
    assert content == "where is the config loader? [lookup] [router]"


@pytest.mark.usefixtures("engines")
def test_should_compress_first_adopted_answer_in_configured_order_r14_8() -> None:
    runner, cfg = _runner(
        "context:\n  engine: router\n  hooks:\n    should_compress: [silent, keeper]\n"
    )
    request = ShouldCompressRequest(session_id="s", messages=WINDOW, current_tokens=10,
                                    context_length=1000, guards=GuardState(now=0.0))
    chain = cfg.context.chain("should_compress")
    decision, stamps = runner.first_result("should_compress", chain, request)
    assert [s.plugin for s in stamps] == ["silent", "keeper"]
    assert decision is not None and decision.compress is True


@pytest.mark.usefixtures("engines")
def test_prune_tool_results_only_falls_back_to_context_engine_r14_8() -> None:
    runner, cfg = _runner(
        "context:\n  engine: keeper\n  hooks:\n    select_context: [router]\n"
    )
    chain = cfg.context.chain("prune_tool_results_only")
    assert chain == ["keeper"]  # not listed under context.hooks → context.engine answers
    window = [
        *WINDOW,
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 9000},
        {"role": "assistant", "content": "done"},
    ]
    request = PruneRequest(session_id="s", messages=window, current_tokens=5000,
                           context_length=10_000)
    result, stamps = runner.first_result("prune_tool_results_only", chain, request)
    assert [s.plugin for s in stamps] == ["keeper"]
    assert result is not None and result.pruned == 1
    assert result.messages[3]["content"] == "[pruned]"
    assert window[3]["content"] == "x" * 9000  # the engine worked on a private copy
