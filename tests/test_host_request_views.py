"""Issue 32: ``build_request`` shares what did not change — the window's read-only messages,
their wire forms made once, their token counts — so its cost follows the change, not the
window.  These tests hold the other side of that bargain: nothing can be changed through the
shared objects (not by the caller, not by an engine), and every cache follows the window
when it changes (append, compression with its rotation, /undo, truncate), giving exactly
what a request built from scratch gives.  Real host, real SQLite store, real fence."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from host_helpers import TailEngine, chat_turn, make_config

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.fence import Provenance
from hermes_host.fence.frozen import thaw
from hermes_host.host import ContextHost, Session
from hermes_host.messages import SUMMARY_METADATA_KEY, sanitize_for_wire


class Keeper:
    """Returns the window it was handed, as is (the trivial engine of the benchmarks)."""

    read_only_messages = True

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        return SelectResult(messages=request.messages)


class Writer:
    """Declares read-only messages, then writes into them anyway."""

    read_only_messages = True

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        request.messages[-1]["content"] = "hijacked"
        return SelectResult(messages=request.messages)


class Editor:
    """Edits its own (deep-copied) messages: replaces one in the middle, adds a note."""

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        messages = request.messages
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if len(users) > 2:
            messages[users[len(users) // 2]]["content"] = "edited in the engine's own copy"
        if messages[-1]["role"] == "assistant":
            messages.append({"role": "user", "content": "(a turn-scoped note)"})
        return SelectResult(messages=messages)


def _host(tmp_path: Path, select: object | None = None) -> ContextHost:
    extra: dict[str, object] = {"tail": TailEngine(keep=2, threshold=10**9)}
    overrides: dict[str, Any] = {"model": {"context_length": 200_000, "max_output_tokens": 4000}}
    if select is not None:
        extra["sel"] = select
        overrides["context"] = {"engine": "tail", "hooks": {"select_context": ["sel"]}}
    return ContextHost.from_config(make_config("tail", **overrides), store=tmp_path / "s.db",
                                   extra_plugins=extra)


def _session(host: ContextHost, turns: int = 6) -> Session:
    session = host.open_session(system_prompt="You are terse.")
    for n in range(turns):
        chat_turn(session, n, size=8)
    return session


def _from_scratch(session: Session) -> list[dict[str, Any]]:
    """What the request is when nothing is shared: plain copies, sanitised one by one."""
    return sanitize_for_wire([thaw(m) for m in session.window()])


def _same_request(session: Session, request: list[dict[str, Any]],
                  expected: list[dict[str, Any]]) -> None:
    assert json.dumps(request, sort_keys=True) == json.dumps(expected, sort_keys=True)
    counted = session.host.tokens.count_all(expected)
    assert session.last_request_tokens == counted
    assert session.window_tokens == session.host.tokens.count_all(session.window())


def test_the_request_cannot_be_changed_through_and_copies_are_the_callers(tmp_path: Path) -> None:
    with _host(tmp_path) as host:
        session = _session(host)
        request = session.build_request()
        before = json.dumps(request)
        with pytest.raises(TypeError, match="read-only"):
            request[-1]["content"] = "changed"
        calls = next(m for m in request if m.get("tool_calls"))
        with pytest.raises(TypeError, match="read-only"):
            calls["tool_calls"].append({"id": "x"})
        with pytest.raises(TypeError, match="read-only"):
            calls["tool_calls"][0]["function"]["name"] = "rm"
        request.append({"role": "user", "content": "the list itself is the caller's"})
        del request[1]
        again = session.build_request()
        assert json.dumps(again) == before  # nothing the caller did reached the session
        mine = copy.deepcopy(again)  # the documented way to change a request: a plain copy
        mine[-1]["content"] = "changed"
        assert type(mine[-1]) is dict and json.dumps(session.build_request()) == before
        assert pickle.loads(pickle.dumps(again)) == again  # process isolation pickles
        assert all(type(m) is dict for m in pickle.loads(pickle.dumps(again)))


def test_an_engine_writing_into_the_shared_window_changes_nothing(tmp_path: Path) -> None:
    with _host(tmp_path, Writer()) as host:
        session = _session(host)
        expected = _from_scratch(session)
        request = session.build_request()
        assert session.last_select[0]["provenance"] in ("error", "breaker_open")
        row = next(r for r in host.engine_health() if r["plugin"] == "sel")
        assert row["errors"] > 0 and "read-only" in row["last_error"]
        _same_request(session, request, expected)
        assert "hijacked" not in json.dumps(host.store.active_messages(session.id))


def test_an_engine_keeping_the_window_gives_the_window_itself(tmp_path: Path) -> None:
    with _host(tmp_path, Keeper()) as host:
        session = _session(host)
        request = session.build_request()
        assert session.last_select[0]["provenance"] == Provenance.OK.value
        _same_request(session, request, _from_scratch(session))
        assert all(a is b for a, b in zip(request, session.build_request(), strict=True))


def test_an_engines_change_is_sent_and_counted_exactly(tmp_path: Path) -> None:
    with _host(tmp_path, Editor()) as host:
        session = _session(host)
        request = session.build_request(injections=["remember the deadline"])
        assert session.last_select[0]["provenance"] == Provenance.OK.value
        sent = json.dumps(request)
        assert "edited in the engine's own copy" in sent and "(a turn-scoped note)" in sent
        assert "remember the deadline" in sent
        assert session.last_request_tokens == host.tokens.count_all(request)
        assert "edited in the engine" not in json.dumps(session.window())  # its own copy
        assert "edited in the engine" not in json.dumps(host.store.active_messages(session.id))


@pytest.mark.parametrize("change", ["append", "compress", "undo", "truncate", "other_process"])
def test_every_cache_follows_the_window_when_it_changes(tmp_path: Path, change: str) -> None:
    with _host(tmp_path, Keeper()) as host:
        session = _session(host, turns=8)
        first = session.build_request()
        before_id = session.id
        if change == "append":
            chat_turn(session, 100, size=8)
        elif change == "compress":
            report = session.compress(force=True)
            assert report.status == "committed" and session.id != before_id  # rotated, R-8.1
            assert any(m.get(SUMMARY_METADATA_KEY) for m in session.window())
        elif change == "undo":
            assert session.undo(2) > 0
        elif change == "truncate":
            session.truncate(5)
        else:  # another process appends to the same conversation
            with ContextHost.from_config(host.config, store=tmp_path / "s.db",
                                         extra_plugins={"tail": TailEngine(), "sel": Keeper()}
                                         ) as other:
                theirs = other.resume(session.id)
                chat_turn(theirs, 200, size=8)
        request = session.build_request()
        assert request != first
        _same_request(session, request, _from_scratch(session))
        assert all(not k.startswith("_") for m in request for k in m)
        chat_turn(session, 300, size=8)  # and the next append extends the right caches
        _same_request(session, session.build_request(), _from_scratch(session))
