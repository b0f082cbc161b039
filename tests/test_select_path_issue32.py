"""``Session.build_request`` with ``select_context`` engines, on a real SQLite store (issue
32): the session hands the fence its cached window itself, so nothing an engine does to its
request may reach that window; engines without the hook are not asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from host_helpers import chat_turn

from hermes_host import hookimpl
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.models import SelectRequest, SelectResult


class Meddler:
    """Changes the list it was handed (appends, drops, reorders) and returns None."""

    def __init__(self, read_only: bool) -> None:
        self.read_only_messages = read_only
        self.calls = 0

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult | None:
        self.calls += 1
        request.messages.append({"role": "user", "content": "smuggled"})
        del request.messages[1]
        request.messages.reverse()
        return None


class Keeper:
    read_only_messages = True

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        return SelectResult(messages=request.messages, decision={"kept": len(request.messages)})


def _host(tmp_path: Path, plugins: dict[str, Any], chain: list[str]) -> ContextHost:
    config = HermesConfig.model_validate(
        {"context": {"hooks": {"select_context": chain}}, "memory": {"providers": []}})
    return ContextHost.from_config(config, store=tmp_path / "state.db", extra_plugins=plugins)


@pytest.mark.parametrize("read_only", [True, False])
def test_issue32_an_engine_changing_its_request_list_leaves_the_window_alone(
    tmp_path: Path, read_only: bool
) -> None:
    meddler = Meddler(read_only)
    with _host(tmp_path, {"meddler": meddler}, ["meddler"]) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(3):
            chat_turn(session, n)
        window = session.window()
        before = meddler.calls
        first = session.build_request()
        for _ in range(3):  # each call hands the engine the cached window again
            assert session.build_request() == first
        assert meddler.calls == before + 4
        assert session.window() == window
        assert not any(m.get("content") == "smuggled" for m in first)
        session.add_user("and now?")
        grown = session.build_request()
        assert grown[:-1] == first and grown[-1] == {"role": "user", "content": "and now?"}


def test_issue32_engines_without_select_context_are_not_asked(tmp_path: Path) -> None:
    """The default engine (the compressor, no select_context) is in the chain by default:
    it is skipped, with no health row; an engine that has the hook is called and its
    decision is recorded."""
    keeper = Keeper()
    with _host(tmp_path, {"keeper": keeper}, ["compressor", "keeper"]) as host:
        assert not host.runner.implements("compressor", "select_context")
        assert host.runner.implements("keeper", "select_context")
        assert not host.runner.implements("nobody", "select_context")
        session = host.open_session(system_prompt="sys")
        session.add_user("question")
        sent = session.build_request()
        rows = {(r["plugin"], r["hook"]): r for r in host.engine_health()}
        assert ("compressor", "select_context") not in rows
        assert rows[("keeper", "select_context")]["calls"] == 1
        assert session.last_select == [
            {"engine": "keeper", "provenance": "ok", "decision": {"kept": len(sent)}}]
