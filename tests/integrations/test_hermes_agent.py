"""Hermes Agent with ``context.engine: hermes_host`` (issue 18, deliverable 1): a real
``AIAgent`` from the ``hermes-agent`` package, its own plugin discovery, against the loopback
OpenAI-compatible server; hermes-host's engines, guards and store manage its context."""

from __future__ import annotations

import importlib.metadata
import json
import time
from typing import Any

import pytest

pytest.importorskip("run_agent", reason="needs the hermes-agent package (suite hermes-agent)")

from hermes_agent_hermes_host.engine import ENGINE_NAME, HermesHostEngine

from hermes_host import hookimpl
from hermes_host.host import ContextHost
from hermes_host.messages import SUMMARY_METADATA_KEY, SUMMARY_PREFIX
from tests.host_helpers import HangingEngine
from tests.integrations.hermes_agent_helpers import (
    HermesRig,
    rig_fixture,  # noqa: F401  (the `rig` fixture)
    run_turns,
)


def _stored(host: ContextHost, lineage: list[str]) -> list[dict[str, Any]]:
    """Every row of the conversation, each once, in the order it was written."""
    rows = [r for sid in lineage for r in host.store.all_messages(sid)]
    return [r.message for r in sorted(rows, key=lambda r: r.id)]


def _user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages
            if m.get("role") == "user" and isinstance(m.get("content"), str)
            and m["content"].startswith("question ")]


class Boom:
    """Every lifecycle hook raises."""

    @hookimpl
    def should_compress(self, request: Any) -> Any:
        raise RuntimeError("decision exploded")

    @hookimpl
    def compress(self, request: Any) -> Any:
        raise RuntimeError("engine exploded")

    @hookimpl
    def select_context(self, request: Any) -> Any:
        raise RuntimeError("selection exploded")


def _swap_engine(rig: HermesRig, **kwargs: Any) -> HermesHostEngine:
    """Test seam: the engine Hermes' plugin manager registered, replaced by one that also
    has in-test hermes-host engines (``extra_plugins``); discovery itself stays Hermes'."""
    manager = rig.discover()
    assert isinstance(manager._context_engine, HermesHostEngine)
    engine = HermesHostEngine(**kwargs)
    manager._context_engine = engine
    return engine


def test_hermes_discovers_the_entry_point_and_selects_the_engine_issue_18(
    rig: HermesRig,
) -> None:
    """The ``hermes_agent.plugins`` entry point named ``hermes_host`` is what Hermes' plugin
    manager loads; ``context.engine: hermes_host`` makes it the agent's context engine, with
    hermes-host's config and store found under the Hermes home."""
    eps = importlib.metadata.entry_points(group="hermes_agent.plugins")
    assert [ep.value for ep in eps if ep.name == "hermes_host"] == [
        "hermes_agent_hermes_host.plugin"]
    manager = rig.discover()
    assert manager._plugins["hermes_host"].enabled, manager._plugins["hermes_host"].error
    agent = rig.agent()
    engine = agent.context_compressor
    assert isinstance(engine, HermesHostEngine) and engine.name == ENGINE_NAME
    assert engine is not manager._context_engine            # Hermes' per-agent copy
    assert engine.context_length == 128000                  # Hermes' model, not the default
    assert engine.threshold_tokens == 2500                  # hermes-host's compression section
    assert engine.host is not None
    assert engine.host.store.location == str(rig.host_home / "state.db")
    assert engine.session is not None
    assert engine.session.conversation_id == agent.session_id
    tool_names = {t["function"]["name"] for t in agent.tools or []}
    assert "hermes_host_search" in tool_names


def test_without_plugins_enabled_hermes_keeps_its_own_compressor_issue_18(
    rig: HermesRig,
) -> None:
    rig.write_configs(enabled=False)
    rig.discover()
    agent = rig.agent()
    assert not isinstance(agent.context_compressor, HermesHostEngine)
    assert type(agent.context_compressor).__name__ == "ContextCompressor"


def test_a_long_session_compresses_through_hermes_host_and_the_store_keeps_it_all_issue_18(
    rig: HermesRig,
) -> None:
    """Twelve turns on a 2,500-token threshold: hermes-host's compressor compresses (its
    rotations, its summary), Hermes carries on with the compressed window, and the store
    holds every question once, under one conversation id = Hermes' session id."""
    agent = rig.agent()
    engine: HermesHostEngine = agent.context_compressor
    results, history = run_turns(agent, range(12))
    assert all(r["final_response"].startswith("(fake model)") for r in results)
    assert engine.compression_count >= 1
    host, session = engine.host, engine.session
    assert host is not None and session is not None
    assert len(session.lineage) >= 2                        # hermes-host rotated
    assert session.conversation_id == session.lineage[0] == agent.session_id
    # Hermes' live messages are the hermes-host window: a summary, then the recent tail
    summaries = [m for m in history if str(m.get("content", "")).startswith(SUMMARY_PREFIX)]
    assert len(summaries) == 1
    assert len(_user_texts(history)) < 12
    # the store has everything, each question exactly once, the summary flagged
    stored = _stored(host, session.lineage)
    assert [t.split(":")[0] for t in _user_texts(stored)] == [f"question {n}" for n in range(12)]
    assert any(m.get(SUMMARY_METADATA_KEY) for m in stored)
    replies = [m for m in stored if m.get("role") == "assistant"
               and str(m.get("content", "")).startswith("(fake model)")]
    assert len(replies) == 12
    # usage reached the store; the status shows hermes-host's view
    row = host.store.get_session(session.id)
    assert row.input_tokens > 0
    status = engine.get_status()
    assert status["hermes_host"]["conversation_id"] == agent.session_id
    assert status["compression_count"] == engine.compression_count
    assert status["hermes_host"]["engine_problems"] == []
    # the request the model saw last is the compressed window, not the whole history
    last = rig.fake.requests[-1].body["messages"]
    assert sum(1 for m in last if str(m.get("content", "")).startswith("question ")) < 12


def test_the_search_tool_finds_compacted_history_issue_18(rig: HermesRig) -> None:
    agent = rig.agent()
    engine: HermesHostEngine = agent.context_compressor
    _, history = run_turns(agent, range(10))
    assert engine.compression_count >= 1
    assert "part 0 of" not in str(history)                 # compressed out of the window
    found = engine.handle_tool_call("hermes_host_search", {"query": "part 0 of the report"},
                                    messages=history)
    assert "question 0:" in found and '"compacted": true' in found


def test_resuming_the_hermes_session_continues_the_same_conversation_issue_18(
    rig: HermesRig,
) -> None:
    """A second agent on the same Hermes session id (``hermes --resume``) finds the
    hermes-host conversation again and does not store the reloaded history twice."""
    first = rig.agent()
    _, history = run_turns(first, range(8))
    sid = first.session_id
    first.context_compressor.on_session_end(sid, history)
    conversation = first.context_compressor.session.conversation_id
    again = rig.agent(session_id=sid)
    engine: HermesHostEngine = again.context_compressor
    assert engine.session is not None and engine.session.conversation_id == conversation
    run_turns(again, range(8, 10), history)
    stored = _stored(engine.host, engine.session.lineage)  # type: ignore[arg-type]
    assert [t.split(":")[0] for t in _user_texts(stored)] == [f"question {n}" for n in range(10)]


def test_focus_and_memory_context_reach_the_hermes_host_engine_issue_18(
    rig: HermesRig,
) -> None:
    """Hermes' manual ``/compress <focus>`` path: ``focus_topic`` and ``memory_context``
    arrive in hermes-host's CompressRequest."""
    from tests.host_helpers import TailEngine

    seen: list[tuple[str | None, str | None]] = []

    class Recording(TailEngine):
        def _tail(self, request: Any) -> Any:
            seen.append((request.focus_topic, request.memory_context))
            return super()._tail(request)

    rig.write_configs("""
        context: {engine: rec}
        compression: {threshold_tokens: 100000}
        memory: {providers: []}
        """)
    _swap_engine(rig, extra_plugins={"rec": Recording(keep=1, threshold=10**6)})
    agent = rig.agent()
    _, history = run_turns(agent, range(4))
    engine: HermesHostEngine = agent.context_compressor
    compressed = engine.compress(history, focus_topic="part 2",
                                 memory_context="user likes tables", force=True)
    assert seen == [("part 2", "user likes tables")]
    assert len(compressed) < len(history)
    assert engine.session is not None and engine.session.compression_count == 1


def test_a_hung_hermes_host_engine_never_breaks_the_turn_issue_18(rig: HermesRig) -> None:
    """The engine hangs in ``compress``: the fence gives up after ``hooks.timeouts.compress``,
    Hermes shows its "Compression aborted" warning, the turn answers, nothing is lost."""
    hanging = HangingEngine()
    rig.write_configs("""
        context: {engine: hang}
        hooks: {timeouts: {compress: 1.0}}
        compression: {threshold_tokens: 2500}
        memory: {providers: []}
        """)
    _swap_engine(rig, extra_plugins={"hang": hanging})
    try:
        agent = rig.agent()
        started = time.monotonic()
        results, history = run_turns(agent, range(5))
        elapsed = time.monotonic() - started
    finally:
        hanging.release.set()
    assert all(r["final_response"].startswith("(fake model)") for r in results)
    assert [t.split(":")[0] for t in _user_texts(history)] == [f"question {n}" for n in range(5)]
    assert any("Compression aborted" in w and "timed out" in w for w in rig.warnings), rig.warnings
    assert elapsed < 30
    engine: HermesHostEngine = agent.context_compressor
    problems = engine.get_status()["hermes_host"]["engine_problems"]
    assert any(p["plugin"] == "hang" and p["timeouts"] >= 1 for p in problems)


def test_a_crashing_hermes_host_engine_never_breaks_the_turn_issue_18(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every lifecycle hook of the engine raises: should_compress falls back to the host's
    threshold, compress is refused (Hermes' warning), select_context fails open (a
    ``⚠ hermes-host`` line) — and every turn still gets its answer."""
    boom = Boom()
    rig.write_configs("""
        context: {engine: boom, hooks: {select_context: [boom]}}
        compression: {threshold_tokens: 2500}
        memory: {providers: []}
        """)
    _swap_engine(rig, extra_plugins={"boom": boom})
    agent = rig.agent()
    results, history = run_turns(agent, range(5))
    assert all(r["final_response"].startswith("(fake model)") for r in results)
    assert len(_user_texts(history)) == 5
    assert any("Compression aborted" in w and "engine exploded" in w for w in rig.warnings)
    err = capfd.readouterr().err
    assert "⚠ hermes-host: engine 'boom' select_context: " in err
    assert "the request was sent unchanged" in err


class LastTurnOnly:
    """select_context: send the system prompt, a note, and the newest user message only;
    offers one tool through the optional ``tool_schemas()``."""

    def __init__(self) -> None:
        self.calls = 0
        self.tool_args: list[dict[str, Any]] = []

    @hookimpl
    def select_context(self, request: Any) -> Any:
        from hermes_host import SelectResult

        self.calls += 1
        messages = request.messages
        head = [m for m in messages[:1] if m["role"] == "system"]
        note = {"role": "user", "content": "[selected by last-turn-only]"}
        last = [m for m in messages if m["role"] == "user"][-1]
        merged = {**last, "content": f"{note['content']}\n{last['content']}"}
        return SelectResult(messages=[*head, merged], decision={"kept": 1})

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "last_turn_echo", "description": "Echo.",
                 "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}]

    def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        self.tool_args.append(args)
        return json.dumps({"echo": args.get("x")})


def test_select_context_engines_shape_every_request_hermes_sends_issue_18(
    rig: HermesRig,
) -> None:
    """hermes-host's select_context chain runs inside Hermes' llm_request middleware: the
    server receives the selected messages, Hermes' own history and the store keep all."""
    selector = LastTurnOnly()
    rig.write_configs("""
        context: {engine: compressor, hooks: {select_context: [last]}}
        summarizer: {provider: offline}
        memory: {providers: []}
        """)
    _swap_engine(rig, extra_plugins={"last": selector})
    agent = rig.agent()
    _, history = run_turns(agent, range(3))
    assert selector.calls == 3
    sent = rig.fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[-1]["content"].startswith("[selected by last-turn-only]\nquestion 2:")
    assert sent[0]["content"] == rig.fake.requests[0].body["messages"][0]["content"]
    assert len(_user_texts(history)) == 3                   # Hermes keeps its whole history
    engine: HermesHostEngine = agent.context_compressor
    assert engine.session is not None
    assert engine.session.last_select[0]["decision"] == {"kept": 1}
    stored = _stored(engine.host, engine.session.lineage)  # type: ignore[arg-type]
    assert len(_user_texts(stored)) == 3            # what the selector added is turn-scoped
    assert not any("[selected" in str(m["content"]) for m in stored if m["role"] == "user")
    # the select engine's tool is offered to the model and dispatched to it
    tools = {t["function"]["name"] for t in agent.tools or []}
    assert {"hermes_host_search", "last_turn_echo"} <= tools
    assert engine.handle_tool_call("last_turn_echo", {"x": "hi"}) == '{"echo": "hi"}'
    assert selector.tool_args == [{"x": "hi"}]


def test_hermes_rotating_its_own_session_id_keeps_one_conversation_issue_18(
    rig: HermesRig,
) -> None:
    """With Hermes' session database and its legacy rotation (``compression.in_place:
    false``) Hermes' id changes at every compaction; the hermes-host conversation stays one,
    and resuming under the newest Hermes id finds it through Hermes' parent chain."""
    from hermes_state import SessionDB

    config = rig.home / "config.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("compression:\n", "compression:\n  in_place: false\n"),
                      encoding="utf-8")
    db = SessionDB(rig.home / "state.db")
    first = rig.agent(session_db=db)
    started_as = first.session_id
    _, history = run_turns(first, range(10))
    engine: HermesHostEngine = first.context_compressor
    assert engine.compression_count >= 1
    assert first.session_id != started_as                   # Hermes rotated its id
    assert db.get_session(first.session_id)["parent_session_id"] is not None
    assert engine.session is not None
    conversation = engine.session.conversation_id
    assert conversation == started_as
    assert engine.get_status()["hermes_host"]["hermes_session_id"] == first.session_id
    first.context_compressor.on_session_end(first.session_id, history)

    again = rig.agent(session_db=db, session_id=first.session_id)
    resumed: HermesHostEngine = again.context_compressor
    assert resumed.session is not None and resumed.session.conversation_id == conversation
    run_turns(again, range(10, 11), history)
    stored = _stored(resumed.host, resumed.session.lineage)  # type: ignore[arg-type]
    assert [t.split(":")[0] for t in _user_texts(stored)] == [f"question {n}" for n in range(11)]


def test_with_hermes_session_database_in_place_the_store_keeps_each_message_once_issue_18(
    rig: HermesRig,
) -> None:
    """Hermes' CLI default: a session database and in-place compaction (one Hermes id)."""
    from hermes_state import SessionDB

    config = rig.home / "config.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("compression:\n", "compression:\n  in_place: true\n"),
                      encoding="utf-8")
    agent = rig.agent(session_db=SessionDB(rig.home / "state.db"))
    sid = agent.session_id
    run_turns(agent, range(12))
    engine: HermesHostEngine = agent.context_compressor
    assert engine.compression_count >= 1 and agent.session_id == sid
    assert engine.session is not None and engine.session.conversation_id == sid
    stored = _stored(engine.host, engine.session.lineage)  # type: ignore[arg-type]
    assert [t.split(":")[0] for t in _user_texts(stored)] == [f"question {n}" for n in range(12)]
    assert engine.get_status()["hermes_host"]["engine_problems"] == []


def test_a_broken_hermes_host_config_is_said_and_hermes_still_answers_issue_18(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """A config.yaml hermes-host refuses: one plain warning naming the problem, and Hermes'
    turns go on (without compression from hermes-host) instead of failing."""
    rig.write_configs("""
        context: {engine: compressor}
        compression: {threshold_percent: 7}
        """)
    agent = rig.agent()
    results, _ = run_turns(agent, range(2))
    assert all(r["final_response"].startswith("(fake model)") for r in results)
    err = capfd.readouterr().err
    assert "⚠ hermes-host: could not open the hermes-host session" in err
    assert "threshold_percent" in err
    assert agent.context_compressor.session is None
    assert agent.context_compressor.should_compress(10**6) is False


def test_status_keeps_every_documented_key_and_says_why_when_disabled_issue_30(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """A broken hermes-host config: code that follows the doc (``status["conversation_id"]``,
    ``status["store"]``) does not raise KeyError, and ``error`` says why hermes-host is not
    managing the context; a working one has the same keys with ``error`` None."""
    from hermes_agent_hermes_host.status import STATUS_KEYS

    unopened = HermesHostEngine().get_status()["hermes_host"]  # before any session
    assert set(unopened) == set(STATUS_KEYS) and unopened["conversation_id"] is None
    assert "Hermes has not started one" in unopened["error"]

    rig.write_configs("""
        context: {engine: compressor}
        compression: {threshold_percent: 7}
        """)
    agent = rig.agent()
    engine: HermesHostEngine = agent.context_compressor
    run_turns(agent, range(1))
    status = engine.get_status()["hermes_host"]
    assert set(status) == set(STATUS_KEYS)
    assert status["conversation_id"] is None and status["store"] is None
    assert status["engine_problems"] == [] and status["lineage"] == []
    assert "could not open the hermes-host session" in status["error"]
    assert "threshold_percent" in status["error"]
    assert "not managing Hermes' context" in status["error"]
    capfd.readouterr()

    rig.write_configs()  # a valid config: the next session opens, and the error is gone
    working = rig.agent()
    run_turns(working, range(1))
    status = working.context_compressor.get_status()["hermes_host"]
    assert set(status) == set(STATUS_KEYS)
    assert status["error"] is None
    assert status["conversation_id"] == working.session_id
    assert status["store"].endswith("state.db")


def test_a_model_switch_in_hermes_reaches_hermes_host_issue_18(rig: HermesRig) -> None:
    rig.write_configs("""
        context: {engine: compressor}
        summarizer: {provider: offline}
        compression: {threshold_percent: 0.5}
        memory: {providers: []}
        """)
    rig.discover()
    agent = rig.agent()
    engine: HermesHostEngine = agent.context_compressor
    assert engine.threshold_tokens == 64000                 # 50 % of Hermes' 128K
    engine.update_model("gpt-fake-2", 200000)
    assert engine.session is not None
    status = engine.session.status()
    assert (status["context_length"], status["model"]) == (200000, "gpt-fake-2")
    # the threshold the session's decision uses (the compressor's rule: issue 12), which
    # follows the new context length
    assert engine.threshold_tokens == status["threshold_tokens"] >= 100000
