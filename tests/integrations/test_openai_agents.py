"""``HermesSession`` under a real ``agents.Runner.run`` (issue 18, deliverable 2).

The agent's model is the real SDK's Chat Completions model on the real ``openai`` client,
talking HTTP to the loopback fake server; the summariser is hermes-host's ``openai`` provider
on the same server (so the provider runs on the openai 3.x the SDK needs).  The engine is the
real ``compressor`` with a small context length, so a few turns compress.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

import openai  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from hermes_host import CompressDecision, hookimpl  # noqa: E402
from hermes_host.config import HermesConfig  # noqa: E402
from hermes_host.host import ContextHost  # noqa: E402
from hermes_host.integrations.openai_agents import (  # noqa: E402
    ITEMS_KEY,
    HermesSession,
    items_to_messages,
    messages_to_items,
)
from hermes_host.messages import SUMMARY_PREFIX, check_invariants  # noqa: E402
from hermes_host.testing.fake_anthropic import default_summary_text  # noqa: E402
from hermes_host.testing.fake_openai import FakeOpenAI  # noqa: E402

INSTRUCTIONS = "You are the hermes-host test agent. Use the lookup tool, then answer."


def agent_responder(body: Any) -> Any:
    """The model: summary requests get a summary; an agent turn calls ``lookup`` once, then
    answers from the tool's output."""
    messages = body["messages"]
    if not any(INSTRUCTIONS in str(m.get("content")) for m in messages):
        return default_summary_text(body)
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": f"answer from {last['content'][:24]!r}: " + "conclusion " * 60}
    turn = str(last.get("content", "")).split(":")[0]
    return {"content": "", "tool_calls": [{"name": "lookup", "arguments": {"topic": turn}}]}


@function_tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    marker = " The deploy key of turn 1 is ZEBRA-0451." if topic == "turn 1" else ""
    return f"facts about {topic}:{marker} " + "detail " * 80


def make_config(fake: FakeOpenAI, context_length: int = 1200) -> HermesConfig:
    return HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": context_length, "max_output_tokens": 200},
        "summarizer": {"provider": "openai", "model": "gpt-fake-1", "base_url": fake.base_url,
                       "api_key_env": "HERMES_TEST_NO_SUCH_KEY"},
    })


@contextlib.asynccontextmanager
async def make_agent(fake: FakeOpenAI) -> AsyncIterator[Agent[Any]]:
    """The agent on the real SDK's Chat Completions model; its client is closed after."""
    client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-fake-1", openai_client=client)
    try:
        yield Agent(name="tester", instructions=INSTRUCTIONS, model=model, tools=[lookup])
    finally:
        await client.close()


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    agents.set_tracing_disabled(True)  # the trace exporter would call the real OpenAI


def agent_requests(fake: FakeOpenAI) -> list[list[dict[str, Any]]]:
    bodies = [json.loads(r.raw_body) for r in fake.requests if r.raw_body]
    return [b["messages"] for b in bodies
            if any(INSTRUCTIONS in str(m.get("content")) for m in b["messages"])]


def pairs_intact(items: list[dict[str, Any]]) -> bool:
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    return calls == outputs


def test_runner_compresses_through_hermes_session(tmp_path: Path) -> None:
    """Issue 18: a real Runner.run over several turns compresses through hermes-host; the
    next run sends the model the summary and the kept tail, tool pairs intact; the store
    keeps every item; the session id stays the same across rotations."""
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        make_config(fake), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("support-chat-7", host=host, system_prompt=INSTRUCTIONS)
        assert isinstance(session, Session)  # the SDK's runtime-checkable protocol
        first_hermes_id = session.hermes.id

        async def conversation() -> list[str]:
            outputs = []
            async with make_agent(fake) as agent:
                for n in range(8):
                    result = await Runner.run(agent, f"turn {n}: tell me about topic {n}",
                                              session=session)
                    outputs.append(str(result.final_output))
            return outputs

        outputs = asyncio.run(conversation())
        assert all(o.startswith("answer from") for o in outputs)

        assert session.hermes.compression_count >= 1
        assert session.hermes.id != first_hermes_id  # rotated...
        assert session.session_id == "support-chat-7" == session.hermes.conversation_id
        assert session.last_outcome is not None

        window = asyncio.run(session.get_items())
        assert SUMMARY_PREFIX in window[0]["content"]  # summary first
        # written by hermes-host's openai provider through the fake, on the SDK's openai 3.x
        assert int(openai.__version__.split(".")[0]) >= 3
        summary_calls = [r for r in fake.requests
                         if INSTRUCTIONS not in r.raw_body and "/chat/completions" in r.path]
        assert summary_calls
        assert "SUMMARISE request" in window[0]["content"]
        assert pairs_intact(window)
        assert {"content": "turn 7: tell me about topic 7", "role": "user"} in window
        assert all("turn 0:" not in json.dumps(i) for i in window)

        # The last run's model call got the compressed window, not the whole conversation.
        last = agent_requests(fake)[-1]
        assert any(SUMMARY_PREFIX in str(m.get("content")) for m in last)
        assert not any("turn 0:" in str(m.get("content")) for m in last)
        assert not check_invariants([m for m in last if m["role"] != "system"])

        # The store keeps everything, each original item verbatim under ITEMS_KEY.
        rows = sorted((row for sid in host.store.lineage(session.hermes.id)
                       for row in host.store.all_messages(sid)), key=lambda r: r.id)
        stored = [row.message for row in rows]
        users = [m["content"] for m in stored if m.get("role") == "user"
                 and ITEMS_KEY in m]
        assert users == [f"turn {n}: tell me about topic {n}" for n in range(8)]
        outputs_stored = [m for m in stored if m.get("role") == "tool"]
        assert len(outputs_stored) == 8
        assert all(m[ITEMS_KEY][0]["type"] == "function_call_output" for m in outputs_stored)

        # One stable id: a new HermesSession on the same key resumes the newest window.
        again = HermesSession("support-chat-7", host=host)
        assert again.hermes.id == session.hermes.id
        assert asyncio.run(again.get_items()) == window


def test_get_items_limit_is_the_newest_items(tmp_path: Path) -> None:
    """Issue 18: get_items(limit=N) is the newest N items of the window, oldest first, as the
    SDK's session_settings.limit and its tail checks read them."""
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        make_config(fake, context_length=100_000), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession(host=host, session_settings=SessionSettings(limit=3))

        async def scenario() -> None:
            async with make_agent(fake) as agent:
                await Runner.run(agent, "turn 0: first", session=session)
                everything = await session.get_items()
                # user, function_call, function_call_output, final assistant message
                assert [i.get("type", "message") for i in everything] == [
                    "message", "function_call", "function_call_output", "message"]
                assert await session.get_items(limit=2) == everything[-2:]
                assert await session.get_items(limit=0) == []
                await Runner.run(agent, "turn 1: second", session=session)

        asyncio.run(scenario())
        # with limit=3 the runner sent only the newest three history items before turn 1
        second_call = agent_requests(fake)[2]
        assert "turn 0: first" not in json.dumps(second_call)
        assert second_call[-1] == {"role": "user", "content": "turn 1: second"}


def test_pop_item_and_clear_session_keep_the_rows(tmp_path: Path) -> None:
    """Issue 18: pop_item returns the newest item and takes it out of the window, clear_session
    empties it; every row stays in the store, and the conversation id does not change."""
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        make_config(fake, context_length=100_000), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("popper", host=host)

        async def scenario() -> list[dict[str, Any]]:
            async with make_agent(fake) as agent:
                await Runner.run(agent, "turn 0: first", session=session)
            before = await session.get_items()
            popped = await session.pop_item()
            assert popped == before[-1]
            assert await session.get_items() == before[:-1]
            # a message of several items loses only its newest one
            await session.add_items([{"role": "user", "content": "a"},
                                     {"role": "assistant", "content": "b"},
                                     {"type": "function_call", "call_id": "c1", "name": "f",
                                      "arguments": "{}"}])
            last = await session.pop_item()
            assert last is not None and last["call_id"] == "c1"
            assert (await session.get_items())[-1] == {"role": "assistant", "content": "b"}
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None
            return before

        before = asyncio.run(scenario())
        assert session.session_id == "popper"
        rows = host.store.all_messages(session.hermes.id)
        assert len(rows) >= len(before) and not any(r.active for r in rows)
        assert host.store.session_search("first", session_id=session.hermes.id)


def test_item_conversion_round_trips_and_rebuilds_rewrites() -> None:
    """Issue 18: unchanged messages give their items back verbatim; a message an engine
    rewrote (pruned output, summary) is converted into valid items, keeping the output's own
    type and call id."""
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "let me check", "annotations": []}]},
        {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}",
         "id": "fc_1"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "patch", "input": "diff"},
        {"type": "function_call_output", "call_id": "c1", "output": "long output"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
    ]
    messages = items_to_messages(items)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["c1", "c2"]
    assert messages[1]["content"] == "let me check"
    assert messages_to_items(messages) == items

    pruned = dict(messages[2], content="[output pruned]")
    summary = {"role": "user", "content": f"{SUMMARY_PREFIX}\n\nwhat happened",
               "_compressed_summary": True}
    rebuilt = messages_to_items([summary, messages[1], pruned, messages[3]])
    assert rebuilt[0] == {"role": "user", "content": summary["content"]}
    assert rebuilt[1:5] == items[1:5]  # the unchanged assistant message, verbatim
    assert rebuilt[5] == {"type": "function_call_output", "call_id": "c1",
                          "output": "[output pruned]"}
    assert rebuilt[6] == items[6]


def test_bad_session_id_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """Issue 18: an empty session id is a clear error; no session is created."""
    with FakeOpenAI() as fake, ContextHost.from_config(
        make_config(fake), store=tmp_path / "state.db"
    ) as host:
        with pytest.raises(ValueError, match="non-empty"):
            HermesSession("  ", host=host)
        assert host.store.list_sessions(limit=5) == []


DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "openai-agents.md"


def test_docs_page_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 18: docs/integrations/openai-agents.md's config and example run as written
    (against the loopback server its last paragraph names)."""
    import re

    from hermes_host.testing.fake_openai import chat_responder

    page = DOC.read_text(encoding="utf-8")
    (tmp_path / "config.yaml").write_text(re.findall(r"```yaml\n(.*?)```", page, re.S)[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    (example,) = re.findall(r"```python\n(.*?)```", page, re.S)
    with FakeOpenAI(responder=chat_responder) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        exec(compile(example, str(DOC), "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    assert out.count("(fake model) You said") == 2
    assert "tokens in the window, 0 compressions" in out
    with ContextHost.from_config(store=tmp_path / "home" / "state.db") as host:
        rows = host.store.all_messages("my-first-chat")
        assert [r.message["role"] for r in rows] == ["user", "assistant"] * 2


class ExplodingEngine:
    """Always wants to compress, and raises when asked to (a broken engine)."""

    @hookimpl
    def should_compress(self, request: Any) -> CompressDecision:
        return CompressDecision(compress=True)

    @hookimpl
    def compress(self, request: Any) -> Any:
        raise RuntimeError("engine exploded")


def test_a_crashing_engine_never_breaks_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 18: an engine that raises in compress leaves every Runner.run intact and the
    window whole; the failed compression is logged at WARNING for the session."""
    config = HermesConfig.model_validate({
        "context": {"engine": "boom"}, "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": 100_000, "max_output_tokens": 200},
        "summarizer": {"provider": "offline"},
    })
    caplog.set_level(logging.WARNING, logger="hermes_host")
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        config, store=tmp_path / "state.db", extra_plugins={"boom": ExplodingEngine()}
    ) as host:
        session = HermesSession("broken-engine", host=host)

        async def runs() -> list[str]:
            async with make_agent(fake) as agent:
                return [str((await Runner.run(agent, f"turn {n}: go", session=session))
                            .final_output) for n in range(3)]

        assert all(o.startswith("answer from") for o in asyncio.run(runs()))
        assert len(asyncio.run(session.get_items())) == 12  # nothing compressed, nothing lost
        warnings_ = [r.getMessage() for r in caplog.records
                     if r.name == "hermes_host.integrations" and r.levelno == logging.WARNING]
        assert warnings_ and all("[broken-engine] hermes-host compression" in w
                                 for w in warnings_)


def test_select_filter_runs_select_engines_on_the_model_input(tmp_path: Path) -> None:
    """Issue 18: with RunConfig(call_model_input_filter=session.select_filter) a
    select_context engine (retrieval) shapes the model input: after turn 1 was compressed
    away, a question about it gets the retrieved block; the stored input stays as typed."""
    pytest.importorskip("hermes_retrieval")
    from agents import RunConfig

    config = HermesConfig.model_validate({
        "context": {"engine": "compressor", "hooks": {"select_context": ["retrieval"]}},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": 6000, "max_output_tokens": 200},
        "summarizer": {"provider": "offline"},
    })
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        config, store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("selecting", host=host)
        run_config = RunConfig(call_model_input_filter=session.select_filter)
        question = "what was the deploy key ZEBRA-0451 for?"

        async def conversation() -> list[dict[str, Any]]:
            async with make_agent(fake) as agent:
                for n in range(26):
                    await Runner.run(agent, f"turn {n}: tell me about topic {n}",
                                     session=session, run_config=run_config)
                window = await session.get_items()
                await Runner.run(agent, question, session=session, run_config=run_config)
            return window

        window = asyncio.run(conversation())
        assert session.hermes.compression_count >= 1
        assert "ZEBRA-0451" not in json.dumps(window)  # compressed away before the question
        asked = agent_requests(fake)[-2]  # the first model call of the last run
        newest = [m for m in asked if m["role"] == "user"][-1]
        assert "[RETRIEVED CONTEXT — REFERENCE ONLY]" in newest["content"]
        assert "ZEBRA-0451" in newest["content"].split("[RETRIEVED CONTEXT")[1]
        stored = [m for m in host.store.active_messages(session.hermes.id)
                  if m["role"] == "user"]
        assert stored[-1]["content"] == question


def test_run_hooks_and_select_filter_record_every_model_call_with_its_usage(
    tmp_path: Path,
) -> None:
    """Issue 29: `sessions list` showed 0/0 for an OpenAI Agents conversation although every
    response carried usage.  With hooks=session.run_hooks() and the select filter, each
    model call has a manifest carrying the usage the server reported for it."""
    from agents import RunConfig

    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        make_config(fake, context_length=6000), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("usage-run", host=host)
        run_config = RunConfig(call_model_input_filter=session.select_filter)

        async def conversation() -> None:
            async with make_agent(fake) as agent:
                for n in range(3):
                    await Runner.run(agent, f"turn {n}: tell me about topic {n}",
                                     session=session, run_config=run_config,
                                     hooks=session.run_hooks())

        asyncio.run(conversation())
        bodies = [json.loads(r.raw_body) for r in fake.requests if r.raw_body]
        calls = [b for b in bodies
                 if any(INSTRUCTIONS in str(m.get("content")) for m in b["messages"])]
        lineage = host.store.lineage(session.hermes.id)
        filtered = [r for r in host.store.list_requests(lineage)
                    if r.details["source"] == "fit_request"]
        assert len(calls) == 6  # each run: a tool call, then the answer
        with_usage = [r for r in filtered if r.has_usage]
        assert len(with_usage) == len(calls)
        expected = [len(json.dumps(b["messages"])) // 4 for b in calls]
        assert [r.input_tokens for r in with_usage] == expected
        conversation_row = host.store.list_conversations()[0]
        assert conversation_row.input_tokens == sum(expected)
