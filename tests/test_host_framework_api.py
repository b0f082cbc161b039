"""The embedding API a framework adapter needs when the framework owns the turn loop
(issue 18): a session opened under the framework's own id, the compression decision asked
on its own, the caller's memory text handed to ``compress``, and the ``select_context``
chain run over a request the framework built."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.host import ContextHost
from hermes_host.store import StoreError
from tests.host_helpers import TailEngine, chat_turn, make_config, make_host


def test_open_session_under_a_given_id_resumes_through_rotations_issue_18(
    tmp_path: Path,
) -> None:
    """A framework's session id opens the conversation and finds it again after rotations
    (the id is the conversation id, R-8.1)."""
    with make_host(tmp_path, TailEngine(keep=1, threshold=400)) as host:
        session = host.open_session(session_id="20260101_000000_abcdef")
        assert session.id == session.conversation_id == "20260101_000000_abcdef"
        for n in range(4):
            chat_turn(session, n)
            session.end_turn()
        assert session.id != "20260101_000000_abcdef"          # it rotated
        resumed = host.resume("20260101_000000_abcdef")
        assert resumed.id == session.id
        assert resumed.conversation_id == "20260101_000000_abcdef"
        with pytest.raises(StoreError):
            host.open_session(session_id="20260101_000000_abcdef")


def test_should_compress_asks_without_ending_the_turn_issue_18(tmp_path: Path) -> None:
    engine = TailEngine(keep=1, threshold=400)
    with make_host(tmp_path, engine) as host:
        session = host.open_session()
        session.add_user("short")
        assert session.should_compress().compress is False
        chat_turn(session, 1)
        chat_turn(session, 2)
        assert session.should_compress().compress is True
        assert engine.compress_calls == 0                       # deciding compresses nothing
        assert session.compress(force=False).status == "committed"


def test_compress_passes_the_callers_memory_context_first_R_11_4(tmp_path: Path) -> None:
    engine = TailEngine(keep=1, threshold=10**6)
    with make_host(tmp_path, engine) as host:
        session = host.open_session()
        for n in range(3):
            chat_turn(session, n)
        session.compress(memory_context="  the user prefers metric units  ")
        session.compress(memory_context="   ")
        assert engine.memory_contexts == ["the user prefers metric units", None]


class DropOldest:
    """select_context: send only the last two messages after the system prompt."""

    def __init__(self) -> None:
        self.seen: list[list[dict[str, object]]] = []

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.seen.append(request.messages)
        head = request.messages[:1]
        return SelectResult(messages=[*head, *request.messages[-2:]], decision={"kept": 2})


def test_select_context_runs_the_chain_over_the_callers_request_issue_18(
    tmp_path: Path,
) -> None:
    selector = DropOldest()
    config = make_config("tail", context={"engine": "tail",
                                          "hooks": {"select_context": ["drop"]}})
    with ContextHost.from_config(config, store=tmp_path / "s.db",
                                 extra_plugins={"tail": TailEngine(), "drop": selector}) as host:
        session = host.open_session()
        request = [{"role": "system", "content": "framework prompt"},
                   {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                   {"role": "user", "content": "c"}]
        selected = session.select_context(request)
        assert selected == [request[0], request[2], request[3]]
        assert selector.seen[0][0]["content"] == "framework prompt"  # the caller's list
        assert session.last_select[0]["decision"] == {"kept": 2}
        assert len(request) == 4                                  # the input is untouched


def test_select_context_without_engines_returns_the_request_as_given_issue_18(
    tmp_path: Path,
) -> None:
    with make_host(tmp_path, TailEngine()) as host:
        session = host.open_session()
        request = [{"role": "user", "content": "a", "_keep": 1}]
        assert session.select_context(request) == request
