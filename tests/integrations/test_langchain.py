"""``HermesContextMiddleware`` under a real ``langchain.agents.create_agent`` and
``hermes_pre_model_hook`` under a real LangGraph ``create_react_agent`` (issue 18,
deliverable 3).

The model is langchain-core's own ``GenericFakeChatModel`` (scripted tool calls, then
answers), with ``bind_tools`` accepting the agent's tools and every input it gets recorded;
the tool runs for real in the agents' tool node; the engine is the real ``compressor`` with a
small context length, so a conversation of a few turns compresses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from hermes_host import CompressDecision, hookimpl
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.integrations._lc_window import ID_KEY
from hermes_host.integrations.langchain import HermesContextMiddleware
from hermes_host.integrations.langgraph import hermes_pre_model_hook
from hermes_host.messages import SUMMARY_PREFIX
from hermes_host.store import StoreError

TURNS = 8
SYSTEM = "You are the hermes-host LangChain test agent."


class RecordingFakeModel(GenericFakeChatModel):
    """langchain-core's fake chat model, recording each input; tools bind as a no-op."""

    inputs: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingFakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.inputs.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script(turns: int) -> Iterator[AIMessage]:
    for n in range(turns):
        yield AIMessage("", tool_calls=[{"name": "lookup", "args": {"topic": f"topic {n}"},
                                         "id": f"call_{n}", "type": "tool_call"}])
        yield AIMessage(f"answer {n}: " + "conclusion " * 60)


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}: " + "detail " * 80


def make_host(tmp_path: Path, context_length: int = 1200) -> ContextHost:
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": context_length, "max_output_tokens": 200},
        "summarizer": {"provider": "offline"},
    })
    return ContextHost.from_config(config, store=tmp_path / "state.db")


def text(message: BaseMessage) -> str:
    return str(message.content)


def pairs_intact(messages: Sequence[BaseMessage]) -> bool:
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    return calls == results


def check_conversation(host: ContextHost, model: RecordingFakeModel, state: list[BaseMessage],
                       thread: str, session_id: str, first_id: str) -> None:
    """What both integrations must show after the conversation (issue 18)."""
    # the graph state keeps every message
    assert len(state) == 4 * TURNS
    assert [text(m) for m in state if isinstance(m, HumanMessage)] == [
        f"turn {n}: tell me about topic {n}" for n in range(TURNS)]
    # the model got the hermes-host window: the summary, not turn 0, tool pairs intact
    last = [m for m in model.inputs[-1] if m.type != "system"]
    assert len(last) < len(state)
    assert SUMMARY_PREFIX in text(last[0])
    assert not any("turn 0:" in text(m) for m in last)
    assert pairs_intact(last)
    # unchanged messages are the state's own objects (ids and all)
    assert last[-1] is state[-2] or last[-1] == state[-2]
    assert isinstance(last[-1], ToolMessage) and last[-1].id == state[-2].id
    newest_user = next(m for m in reversed(last) if isinstance(m, HumanMessage))
    assert newest_user is not None and newest_user.id == state[-4].id
    # one stable conversation id (the thread id) across rotations
    session = host.resume(thread)
    assert session.conversation_id == thread == session_id
    assert session.compression_count >= 1 and session.id != first_id
    # the store keeps every state message, once
    rows = [row.message for sid in host.store.lineage(session.id)
            for row in host.store.all_messages(sid)]
    stored_ids = [m[ID_KEY] for m in rows if ID_KEY in m]
    assert sorted(stored_ids) == sorted(str(m.id) for m in state)


def test_create_agent_middleware_compresses_and_keeps_the_state(tmp_path: Path) -> None:
    """Issue 18: a create_agent conversation long enough to compress; the model input is the
    hermes-host window while the state keeps every message."""
    model = RecordingFakeModel(messages=script(TURNS), inputs=[])
    with make_host(tmp_path) as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [lookup], system_prompt=SYSTEM, middleware=[middleware],
                             checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lc-thread-1"}}
        agent.invoke({"messages": [{"role": "user", "content": "turn 0: tell me about topic 0"}]},
                     config)
        first_id = middleware.session("lc-thread-1").id
        for n in range(1, TURNS):
            agent.invoke({"messages": [
                {"role": "user", "content": f"turn {n}: tell me about topic {n}"}]}, config)
        state = agent.get_state(config).values["messages"]
        assert model.inputs[-1][0].type == "system" and text(model.inputs[-1][0]) == SYSTEM
        check_conversation(host, model, state, "lc-thread-1",
                           middleware.session("lc-thread-1").conversation_id, first_id)
        # two model calls per turn, and the middleware saw each of them
        assert len(model.inputs) == 2 * TURNS
        assert middleware.hermes.last_outcome is not None


def test_async_agent_goes_through_awrap_model_call(tmp_path: Path) -> None:
    """Issue 18: ainvoke takes awrap_model_call; the same window, the same store."""
    model = RecordingFakeModel(messages=script(TURNS), inputs=[])
    with make_host(tmp_path) as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [lookup], system_prompt=SYSTEM, middleware=[middleware],
                             checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lc-async"}}

        async def conversation() -> str:
            first = ""
            for n in range(TURNS):
                await agent.ainvoke({"messages": [
                    {"role": "user", "content": f"turn {n}: tell me about topic {n}"}]}, config)
                first = first or middleware.session("lc-async").id
            return first

        first_id = asyncio.run(conversation())
        state = agent.get_state(config).values["messages"]
        check_conversation(host, model, state, "lc-async", "lc-async", first_id)


def test_without_a_checkpointer_history_is_not_stored_twice(tmp_path: Path) -> None:
    """Issue 18: without a thread, the caller resends the whole history each time (fresh
    LangChain ids); the middleware stores each message once, in one conversation."""
    model = RecordingFakeModel(messages=script(3), inputs=[])
    with make_host(tmp_path, context_length=100_000) as host:
        middleware = HermesContextMiddleware(host, session_id="no-thread")
        agent = create_agent(model, [lookup], middleware=[middleware])
        history: list[Any] = []
        for n in range(3):
            history.append({"role": "user", "content": f"turn {n}"})
            result = agent.invoke({"messages": history})
            history = [m.model_copy(update={"id": None}) for m in result["messages"]]
        rows = host.store.all_messages("no-thread")
        assert len(rows) == len(history) == 12
        assert [r.message["content"] for r in rows if r.message["role"] == "user"] == [
            "turn 0", "turn 1", "turn 2"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent (LangGraph 1.x)
def test_langgraph_pre_model_hook_returns_llm_input_messages(tmp_path: Path) -> None:
    """Issue 18: create_react_agent with hermes_pre_model_hook: the model input is the window
    (llm_input_messages), the state keeps every message."""
    from langgraph.prebuilt import create_react_agent

    model = RecordingFakeModel(messages=script(TURNS), inputs=[])
    with make_host(tmp_path) as host:
        hook = hermes_pre_model_hook(host, system_prompt=SYSTEM)
        agent = create_react_agent(model, [lookup], prompt=SYSTEM, pre_model_hook=hook,
                                   post_model_hook=hook.post_model_hook,
                                   checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lg-thread"}}
        first_id = ""
        for n in range(TURNS):
            agent.invoke({"messages": [
                {"role": "user", "content": f"turn {n}: tell me about topic {n}"}]}, config)
            first_id = first_id or hook.window.session("lg-thread").id
        state = agent.get_state(config).values["messages"]
        assert text(model.inputs[-1][0]) == SYSTEM
        check_conversation(host, model, state, "lg-thread", "lg-thread", first_id)


DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "langchain.md"


def test_docs_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 18: docs/integrations/langchain.md's config and both examples run as written."""
    import re

    page = DOC.read_text(encoding="utf-8")
    (tmp_path / "config.yaml").write_text(re.findall(r"```yaml\n(.*?)```", page, re.S)[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    assert "A context window is what the model reads.\nTo keep going.\n" in out
    assert "compressions, 4 in the state" in out
    assert "Hello.\nStill here.\n" in out and "tokens in the window" in out
    with ContextHost.from_config(store=tmp_path / "home" / "state.db") as host:
        for thread in ("my-first-thread", "my-graph-thread"):
            rows = host.store.all_messages(thread)
            assert len([r for r in rows if ID_KEY in r.message]) == 4


def test_select_engines_shape_the_model_input(tmp_path: Path) -> None:
    """Issue 18: a select_context engine (retrieval) works through the middleware: after the
    early turns were compressed away, a question about them gets the retrieved block in the
    model input, while the state's own message stays as the user wrote it."""
    pytest.importorskip("hermes_retrieval")
    turns = 12
    replies = list(script(turns + 1))
    for reply in replies[::2]:
        reply.tool_calls[0]["name"] = "vault"
    model = RecordingFakeModel(messages=iter(replies), inputs=[])
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor", "hooks": {"select_context": ["retrieval"]}},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": 3000, "max_output_tokens": 200},
        "summarizer": {"provider": "offline"},
    })

    @tool
    def vault(topic: str) -> str:
        """Look a topic up in the vault."""
        marker = " The deploy key of topic 1 is ZEBRA-0451." if topic == "topic 1" else ""
        return f"vault entry for {topic}:{marker} " + "detail " * 80

    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [vault], middleware=[middleware],
                             checkpointer=InMemorySaver())
        thread: Any = {"configurable": {"thread_id": "lc-select"}}
        for n in range(turns):
            agent.invoke({"messages": [
                {"role": "user", "content": f"turn {n}: tell me about topic {n}"}]}, thread)
        assert middleware.session("lc-select").compression_count >= 1
        window = middleware.session("lc-select").window()
        # turn 1 was compressed away (turn 0 is the protected head)
        assert not any("ZEBRA-0451" in str(m.get("content")) for m in window)

        question = "what was the deploy key ZEBRA-0451 for?"
        agent.invoke({"messages": [{"role": "user", "content": question}]}, thread)
        asked = model.inputs[-2]  # the first model call of the last turn
        newest = next(m for m in reversed(asked) if isinstance(m, HumanMessage))
        assert "[RETRIEVED CONTEXT — REFERENCE ONLY]" in text(newest)
        assert "ZEBRA-0451" in text(newest).split("[RETRIEVED CONTEXT")[1]
        state = agent.get_state(thread).values["messages"]
        assert [text(m) for m in state if isinstance(m, HumanMessage)][-1] == question


class ExplodingEngine:
    """Always wants to compress, and raises when asked to (a broken engine)."""

    @hookimpl
    def should_compress(self, request: Any) -> CompressDecision:
        return CompressDecision(compress=True)

    @hookimpl
    def compress(self, request: Any) -> Any:
        raise RuntimeError("engine exploded")


def test_a_crashing_engine_or_store_never_breaks_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 18: an engine that raises, and a store write that fails, leave every turn of
    the agent intact; both are logged at WARNING (the store's message redacted), and the
    messages the store missed are stored at the next call — nothing is lost."""
    config = HermesConfig.model_validate({
        "context": {"engine": "boom"}, "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": 100_000, "max_output_tokens": 200},
        "summarizer": {"provider": "offline"},
    })
    model = RecordingFakeModel(messages=script(3), inputs=[])
    with ContextHost.from_config(config, store=tmp_path / "state.db",
                                 extra_plugins={"boom": ExplodingEngine()}) as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [lookup], middleware=[middleware],
                             checkpointer=InMemorySaver())
        thread: Any = {"configurable": {"thread_id": "lc-broken"}}
        caplog.set_level(logging.WARNING, logger="hermes_host")
        agent.invoke({"messages": [{"role": "user", "content": "turn 0"}]}, thread)
        assert any("compression" in r.getMessage() and r.levelno == logging.WARNING
                   for r in caplog.records if r.name == "hermes_host.integrations")

        real = host.store.append_messages
        secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5

        def failing(*args: Any, **kwargs: Any) -> Any:
            raise StoreError(f"disk full while writing {secret}")

        monkeypatch.setattr(host.store, "append_messages", failing)
        caplog.clear()
        agent.invoke({"messages": [{"role": "user", "content": "turn 1"}]}, thread)
        failures = [r.getMessage() for r in caplog.records
                    if r.name == "hermes_host.integrations" and "hermes-host failed" in
                    r.getMessage()]
        assert failures and all(secret not in f and "disk full" in f for f in failures)
        assert text(model.inputs[-1][-1]).startswith("facts about topic 1")  # whole state

        monkeypatch.setattr(host.store, "append_messages", real)
        agent.invoke({"messages": [{"role": "user", "content": "turn 2"}]}, thread)
        state = agent.get_state(thread).values["messages"]
        assert len(state) == 12
        stored = {m.get(ID_KEY) for m in host.store.active_messages("lc-broken")}
        assert {m.id for m in state} <= stored


def scripted_with_usage(turns: int) -> Iterator[AIMessage]:
    for n, message in enumerate(script(turns)):
        message.usage_metadata = {"input_tokens": 100 + n, "output_tokens": 10,
                                  "total_tokens": 110 + n,
                                  "input_token_details": {"cache_read": 40}}
        yield message


def test_every_model_call_is_recorded_with_the_usage_its_reply_carried(tmp_path: Path) -> None:
    """Issue 29: the LangChain integration recorded no usage (`sessions list` showed 0/0).
    Each model call now has a manifest of what the model got, carrying the usage_metadata of
    the reply it produced."""
    from hermes_host.store.manifests import rebuild_request

    model = RecordingFakeModel(messages=scripted_with_usage(3), inputs=[])
    with make_host(tmp_path, context_length=6000) as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [lookup], system_prompt=SYSTEM, middleware=[middleware],
                             checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lc-usage"}}
        for n in range(3):
            agent.invoke({"messages": [
                {"role": "user", "content": f"turn {n}: tell me about topic {n}"}]}, config)
        session = middleware.session("lc-usage")
        records = host.store.list_requests(host.store.lineage(session.id))
        assert len(records) == len(model.inputs) == 6
        assert [r.input_tokens for r in records] == [100 + n for n in range(6)]
        assert {r.cache_read_tokens for r in records} == {40}
        for record, sent in zip(records, model.inputs, strict=True):
            rebuilt = rebuild_request(host.store, record)
            assert [m["content"] for m in rebuilt if m["role"] != "system"] == [
                m.content for m in sent if m.type != "system"]
        (row,) = host.store.list_conversations()
        assert row.input_tokens == sum(100 + n for n in range(6))
