"""The topic router inside a real host: real SQLite store, real fence (HookRunner.chain),
state persisted by the host between turns, and composition with retrieval (R-14.8, R-11.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.config import parse_config
from hermes_host.host import ContextHost
from hermes_host.messages import check_invariants, text_of

DB = [
    "Write an alembic migration that adds an email_verified column to the users table.",
    "The alembic migration fails on sqlite: ALTER TABLE users cannot add a NOT NULL column.",
    "Make the users migration batch_alter_table so sqlite accepts the email_verified column.",
]
CSS = [
    "Restyle the navbar header with css flexbox so the logo sits left and links right.",
    "The navbar links wrap on narrow screens; use a flexbox media query for the header.",
]


def _host(tmp_path: Path, chain: list[str]) -> ContextHost:
    config = parse_config({
        "context": {"engine": "topic_router", "hooks": {"select_context": chain}},
        "memory": {"providers": []},
        "model": {"context_length": 200_000, "max_output_tokens": 4096},
    })
    return ContextHost.from_config(config, store=tmp_path / "state.db")


def _turn(session, text: str, reply: str) -> list[dict]:
    session.add_user(text)
    request = session.build_request()
    session.add_assistant(reply)
    session.end_turn()
    return request


def test_router_state_lives_in_the_store_and_routes_each_turn(tmp_path: Path):
    host = _host(tmp_path, ["topic_router"])
    try:
        session = host.open_session(title="routing", system_prompt="You are a coding agent.")
        requests = []
        for text in [DB[0], CSS[0], DB[1], CSS[1], DB[2]]:
            requests.append(_turn(session, text, f"Done: {text.lower()}"))
            (entry,) = session.last_select
            assert entry["engine"] == "topic_router" and entry["provenance"] == "ok"
        decision = entry["decision"]
        assert decision["route"] == "switch" and decision["omitted_turns"] == 1
        last = requests[-1]
        assert check_invariants(last) == []
        assert last[0]["role"] == "system"
        sent = "\n".join(text_of(m) for m in last)
        assert DB[0] in sent and DB[1] in sent and CSS[1] in sent and CSS[0] not in sent
        state = host.store.get_engine_state(session.id, "topic_router")
        assert state["version"] == 1 and len(state["topics"]) == 2
        assert all(not k.startswith("_") for m in last for k in m), "wire-sanitised"
    finally:
        host.close()

    # A new process (here: a new host on the same store) resumes with the stored state.
    host = _host(tmp_path, ["topic_router"])
    try:
        resumed = host.resume("routing")
        _turn(resumed, CSS[1] + " Also on the header.", "ok")
        decision = resumed.last_select[0]["decision"]
        assert "bootstrapped_turns" not in decision
        assert decision["route"] == "switch"
    finally:
        host.close()


def test_composition_router_then_retrieval_brings_back_an_omitted_turn(tmp_path: Path):
    """The router leaves the navbar turn out of a database turn; retrieval, next in the
    chain, finds the one fact from it the database question needs in the store."""
    pytest.importorskip("hermes_retrieval")
    host = _host(tmp_path, ["topic_router", "retrieval"])
    try:
        session = host.open_session(title="compose", system_prompt="You are a coding agent.")
        _turn(session, DB[0], "Created migrations/versions/0042_email_verified.py.")
        _turn(session, CSS[0], "Restyled the navbar; the shared constants live in "
              "web/theme/brand_tokens.py.")
        _turn(session, DB[1], "Switched to server_default to satisfy sqlite.")
        _turn(session, CSS[1], "Added a media query to the navbar header.")
        request = _turn(
            session,
            "For the users table migration with email_verified, reuse BRAND_PREFIX from "
            "web/theme/brand_tokens.py in the alembic revision id.",
            "ok",
        )
        router, retrieval = session.last_select
        assert router["engine"] == "topic_router" and router["decision"]["omitted_turns"] >= 1
        assert retrieval["engine"] == "retrieval"
        assert retrieval["decision"]["reason"] == "injected", retrieval
        sent = "\n".join(text_of(m) for m in request)
        assert "Restyled the navbar; the shared constants" in sent, "retrieved excerpt"
        assert CSS[0] not in sent, "the omitted turn's request is not back in full"
        assert check_invariants(request) == []
        stored = host.store.active_messages(session.id)
        assert not any("RETRIEVED CONTEXT" in text_of(m) for m in stored), "never persisted"
    finally:
        host.close()
