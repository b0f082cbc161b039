"""The request bound under a real LangChain ``create_agent`` with ``HermesContextMiddleware``
and a real LangGraph ``create_react_agent`` with ``hermes_pre_model_hook`` (issue 28): every
input the chat model receives is within ``context_length - max_output_tokens``.

The model is langchain-core's ``GenericFakeChatModel`` recording each input; the tool runs
for real in the agents' tool node and returns a file read of ~52,000 characters (~12,000
tokens) against a 4,000-token window with 1,000 tokens reserved for the reply (a budget of
3,000).  The engine is the real ``compressor``.  Inputs are counted as the host counts a
request: converted to OpenAI chat messages, system prompt included, with the host's counter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from test_langchain import RecordingFakeModel

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.integrations.langchain import HermesContextMiddleware
from hermes_host.integrations.langgraph import hermes_pre_model_hook
from hermes_host.models import Message
from hermes_host.testing.fake_openai import FakeOpenAI

SYSTEM = "You are the hermes-host request-bound test agent. Read files when asked."
CONTEXT, MAX_OUTPUT = 4000, 1000
BUDGET = CONTEXT - MAX_OUTPUT
BIG_FILE = "\n".join(f"line {i:05d}: " + "payload data " * 3 for i in range(1000))
LAST_LINE = "line 00999: " + ("payload data " * 3).rstrip()


def script(turns: int) -> Iterator[AIMessage]:
    """Even turns read the big file (a tool call, then an answer), odd turns just answer."""
    for n in range(turns):
        if n % 2 == 0:
            yield AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "big.txt"},
                                             "id": f"call_{n}", "type": "tool_call"}])
        yield AIMessage(f"answer {n}: the file has a thousand numbered lines")


def turn(n: int) -> dict[str, Any]:
    text = f"turn {n}: read big.txt" if n % 2 == 0 else f"turn {n}: go on"
    return {"messages": [{"role": "user", "content": text}]}


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return BIG_FILE


def make_host(tmp_path: Path, summarizer: dict[str, Any] | None = None) -> ContextHost:
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": CONTEXT, "max_output_tokens": MAX_OUTPUT},
        "summarizer": summarizer or {"provider": "offline"},
    })
    return ContextHost.from_config(config, store=tmp_path / "state.db")


def count(host: ContextHost, model_input: list[BaseMessage]) -> int:
    """A model input's tokens, as the host counts a request (system prompt included)."""
    wire: list[Message] = convert_to_openai_messages(model_input)
    return host.tokens.count_all(wire)


def read_inputs(model: RecordingFakeModel) -> list[list[BaseMessage]]:
    """The inputs of the model calls made right after a file read."""
    return [i for i in model.inputs if isinstance(i[-1], ToolMessage)]


def stored_reads(host: ContextHost, conversation: str) -> int:
    session = host.resume(conversation)
    rows = [row.message for sid in host.store.lineage(session.id)
            for row in host.store.all_messages(sid)]
    return sum(1 for m in rows if m.get("role") == "tool" and m.get("content") == BIG_FILE)


def check_condensed_read(last: BaseMessage) -> None:
    """The newest file read as the model got it: a head-and-tail excerpt naming the stored
    original."""
    text = str(last.content)
    assert text.startswith("line 00000") and text.rstrip().endswith(LAST_LINE)
    assert "the store keeps this output (tool call call_0) whole" in text
    assert len(text) < len(BIG_FILE) // 4


def test_create_agent_sends_every_request_within_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: a create_agent turn whose tool output is four times the budget: the model
    call right after it — within the same turn — gets the read as an excerpt and stays within
    the budget (each read turn's); the graph state and the store keep the read whole;
    window_warning, status, the event line and the WARNING log say what was done.  (The
    later turns' calls: the test at the end.)"""
    caplog.set_level(logging.WARNING, logger="hermes_host")
    model = RecordingFakeModel(messages=script(4), inputs=[])
    with make_host(tmp_path) as host:
        middleware = HermesContextMiddleware(host)
        agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[middleware],
                             checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lc-bound"}}
        agent.invoke(turn(0), config)
        session = middleware.session("lc-bound")
        warning = session.window_warning
        assert warning is not None and warning.startswith("request condensed to fit the budget")
        assert "head-and-tail excerpt" in warning and "Why: " in warning
        status = session.status()
        assert status["request_budget"] == BUDGET
        assert status["request_bound"]["fits"] is True
        assert status["request_bound"]["excerpts"] >= 1
        assert any(e.startswith("⚠ request condensed") for e in session.events)
        assert any(r.name == "hermes_host.host" and "request condensed" in r.getMessage()
                   for r in caplog.records)

        for n in range(1, 4):
            agent.invoke(turn(n), config)
        assert len(model.inputs) == 6  # two calls on each read turn, one on the others
        reads = read_inputs(model)
        assert len(reads) == 2
        assert all(count(host, i) <= BUDGET for i in reads), [count(host, i) for i in reads]
        first_read = reads[0]
        assert first_read[0].type == "system" and first_read[0].content == SYSTEM
        check_condensed_read(first_read[-1])

        state = agent.get_state(config).values["messages"]
        assert [m.content for m in state if isinstance(m, ToolMessage)] == [BIG_FILE] * 2
        assert stored_reads(host, "lc-bound") == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent (LangGraph 1.x)
def test_langgraph_pre_model_hook_sends_every_request_within_the_budget(
    tmp_path: Path,
) -> None:
    """Issue 28: create_react_agent with hermes_pre_model_hook: the llm_input_messages of
    the model call right after each oversize read are within the budget; the state and the
    store keep the read whole, window_warning says what was condensed."""
    from langgraph.prebuilt import create_react_agent

    model = RecordingFakeModel(messages=script(4), inputs=[])
    with make_host(tmp_path) as host:
        hook = hermes_pre_model_hook(host, system_prompt=SYSTEM)
        agent = create_react_agent(model, [read_file], prompt=SYSTEM, pre_model_hook=hook,
                                   post_model_hook=hook.post_model_hook,
                                   checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lg-bound"}}
        agent.invoke(turn(0), config)
        warning = hook.window.session("lg-bound").window_warning
        assert warning is not None and warning.startswith("request condensed")
        for n in range(1, 4):
            agent.invoke(turn(n), config)
        assert len(model.inputs) == 6
        reads = read_inputs(model)
        assert len(reads) == 2
        assert all(count(host, i) <= BUDGET for i in reads), [count(host, i) for i in reads]
        first_read = reads[0]
        assert first_read[0].content == SYSTEM
        check_condensed_read(first_read[-1])
        state = agent.get_state(config).values["messages"]
        assert [m.content for m in state if isinstance(m, ToolMessage)] == [BIG_FILE] * 2
        assert stored_reads(host, "lg-bound") == 2


def test_a_summariser_failing_every_call_keeps_every_request_within_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: the summariser (hermes-host's ``openai`` provider on the loopback server)
    answers 429 to every call.  Over a long create_agent conversation the compressor goes on
    compressing with the offline summariser during the cooldown, without calling the LLM
    again; the model call after each read stays within the budget; when a read left the
    window over it, window_warning's cause names the cooldown."""
    caplog.set_level(logging.WARNING, logger="hermes_host")
    turns = 12
    model = RecordingFakeModel(messages=script(turns), inputs=[])
    with FakeOpenAI() as summariser:
        summariser.script(["429"] * 500)
        rate_limited = {"provider": "openai", "model": "gpt-fake-1",
                        "base_url": summariser.base_url,
                        "api_key_env": "HERMES_TEST_NO_SUCH_KEY"}
        with make_host(tmp_path, rate_limited) as host:
            middleware = HermesContextMiddleware(host)
            agent = create_agent(model, [read_file], system_prompt=SYSTEM,
                                 middleware=[middleware], checkpointer=InMemorySaver())
            config: Any = {"configurable": {"thread_id": "lc-429"}}
            warnings_after_reads: list[str | None] = []
            for n in range(turns):
                agent.invoke(turn(n), config)
                if n % 2 == 0:
                    warnings_after_reads.append(middleware.session("lc-429").window_warning)
            session = middleware.session("lc-429")

            assert len(model.inputs) == turns + turns // 2
            reads = read_inputs(model)
            assert len(reads) == turns // 2
            assert all(count(host, i) <= BUDGET for i in reads), [count(host, i) for i in reads]
            asked = [r for r in summariser.requests if "/chat/completions" in r.path]
            assert asked and all(r.behaviour == "429" for r in asked)
            assert len(asked) == 1  # no LLM call during the cooldown
            assert session.compression_count >= 2  # compression went on, offline
            assert session.status()["summarizer_cooldown"] is not None

            # every read turn's window went over the budget and was condensed; after the
            # summariser failed, the cause given is the cooldown
            assert all(w is not None and w.startswith("request condensed")
                       for w in warnings_after_reads), warnings_after_reads
            causes = [w.split("Why: ", 1)[1] for w in warnings_after_reads if w]
            assert any("cooling down" in c for c in causes), causes
            logged = [r.getMessage() for r in caplog.records if r.name == "hermes_host.host"]
            assert any("request condensed" in m and "cooling down" in m for m in logged)
            assert stored_reads(host, "lc-429") == turns // 2


def run_agent(kind: str, tmp_path: Path, summariser: FakeOpenAI) -> tuple[ContextHost, Any]:
    """Eight turns (four oversize reads) through ``kind``; the host is closed by the caller."""
    summarizer = None
    if kind == "create_agent+429":
        summariser.script(["429"] * 500)
        summarizer = {"provider": "openai", "model": "gpt-fake-1",
                      "base_url": summariser.base_url, "api_key_env": "HERMES_TEST_NO_SUCH_KEY"}
    model = RecordingFakeModel(messages=script(8), inputs=[])
    host = make_host(tmp_path, summarizer)
    config: Any = {"configurable": {"thread_id": "every-call"}}
    if kind == "langgraph":
        from langgraph.prebuilt import create_react_agent

        hook = hermes_pre_model_hook(host, system_prompt=SYSTEM)
        agent: Any = create_react_agent(model, [read_file], prompt=SYSTEM, pre_model_hook=hook,
                                        post_model_hook=hook.post_model_hook,
                                        checkpointer=InMemorySaver())
    else:
        agent = create_agent(model, [read_file], system_prompt=SYSTEM,
                             middleware=[HermesContextMiddleware(host)],
                             checkpointer=InMemorySaver())
    for n in range(8):
        agent.invoke(turn(n), config)
    return host, model


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent (LangGraph 1.x)
@pytest.mark.parametrize("kind", ["create_agent", "langgraph", "create_agent+429"])
def test_every_model_call_of_every_turn_is_within_the_budget(
    kind: str, tmp_path: Path
) -> None:
    """Issue 28: every input the chat model received over eight turns — not only the calls
    right after a read — is within the budget, and none carries a read whole."""
    with FakeOpenAI() as summariser:
        host, model = run_agent(kind, tmp_path, summariser)
        with host:
            sizes = [count(host, i) for i in model.inputs]
            assert len(sizes) == 12
            whole = [n for n, i in enumerate(model.inputs)
                     if any(m.content == BIG_FILE for m in i)]
            assert whole == [], (whole, sizes)
            assert all(size <= BUDGET for size in sizes), sizes
