"""The request bound under the OpenAI Agents SDK (issue 28): what ``HermesSession`` hands the
real ``agents.Runner`` is never larger than ``context_length - max_output_tokens``.

The agent runs on the real SDK's Chat Completions model and the real ``openai`` client, over
HTTP to the loopback fake server, which records every request body; the engine is the real
``compressor``.  The window is 4,000 tokens with 1,000 reserved for the reply: a request
budget of 3,000 tokens, and a file read of ~52,000 characters (~12,000 tokens) is four times
that.  Tokens are counted with the host's own counter (the model's encoding), as the bound
counts them.
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

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from hermes_host.config import HermesConfig  # noqa: E402
from hermes_host.host import ContextHost  # noqa: E402
from hermes_host.integrations.openai_agents import HermesSession, items_to_messages  # noqa: E402
from hermes_host.models import Message  # noqa: E402
from hermes_host.testing.fake_anthropic import default_summary_text  # noqa: E402
from hermes_host.testing.fake_openai import FakeOpenAI  # noqa: E402

INSTRUCTIONS = "You are the hermes-host request-bound test agent. Read files when asked."
CONTEXT, MAX_OUTPUT = 4000, 1000
BUDGET = CONTEXT - MAX_OUTPUT
BIG_FILE = "\n".join(f"line {i:05d}: " + "payload data " * 3 for i in range(1000))
"""A file read far larger than the budget: its first line is ``line 00000``, its last
``line 00999``."""


def make_config(summarizer: dict[str, Any] | None = None) -> HermesConfig:
    return HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": CONTEXT, "max_output_tokens": MAX_OUTPUT},
        "summarizer": summarizer or {"provider": "offline"},
    })


def rate_limited_summarizer(fake: FakeOpenAI) -> dict[str, Any]:
    """hermes-host's ``openai`` summariser on a server that answers 429 to every call."""
    fake.script(["429"] * 500)
    return {"provider": "openai", "model": "gpt-fake-1", "base_url": fake.base_url,
            "api_key_env": "HERMES_TEST_NO_SUCH_KEY"}


def responder(body: Any) -> Any:
    """The model: a read request calls ``read_file``; after its output, a short answer."""
    messages = body["messages"]
    if not any(INSTRUCTIONS in str(m.get("content")) for m in messages):
        return default_summary_text(body)
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": "the file has a thousand numbered lines"}
    if "read" in str(last.get("content")):
        return {"content": "", "tool_calls": [{"name": "read_file",
                                               "arguments": {"path": "big.txt"}}]}
    return {"content": "noted: " + str(last.get("content"))[:60]}


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return BIG_FILE


@contextlib.asynccontextmanager
async def make_agent(fake: FakeOpenAI) -> AsyncIterator[Agent[Any]]:
    client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-fake-1", openai_client=client)
    try:
        yield Agent(name="reader", instructions=INSTRUCTIONS, model=model, tools=[read_file])
    finally:
        await client.close()


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    agents.set_tracing_disabled(True)  # the trace exporter would call the real OpenAI


def agent_requests(fake: FakeOpenAI) -> list[list[Message]]:
    """The messages of every agent request the model server received (not summaries)."""
    bodies = [json.loads(r.raw_body) for r in fake.requests if r.raw_body]
    return [b["messages"] for b in bodies
            if any(INSTRUCTIONS in str(m.get("content")) for m in b["messages"])]


def stored_messages(host: ContextHost, session: HermesSession) -> list[Message]:
    rows = sorted((row for sid in host.store.lineage(session.hermes.id)
                   for row in host.store.all_messages(sid)), key=lambda r: r.id)
    return [row.message for row in rows]


def request_tokens(host: ContextHost, items: list[dict[str, Any]]) -> int:
    """Tokens of a request made of the agent's instructions and ``items``."""
    return host.tokens.count_all([{"role": "system", "content": INSTRUCTIONS},
                                  *items_to_messages(items)])


async def pending_big_read(session: HermesSession, call: str) -> None:
    """One turn left open, as a run interrupted for a tool approval leaves it: two parallel
    calls, the file read's output is in, the other call still waits for its approval (no end
    of turn, so nothing compresses the read)."""
    await session.add_items([{"role": "user", "content": "read big.txt and archive it"}])
    await session.add_items([
        {"type": "function_call", "call_id": call, "name": "read_file",
         "arguments": '{"path": "big.txt"}'},
        {"type": "function_call", "call_id": f"{call}-archive", "name": "archive_file",
         "arguments": '{"path": "big.txt"}'},
        {"type": "function_call_output", "call_id": call, "output": BIG_FILE},
    ])


def test_get_items_is_within_the_budget_and_the_store_keeps_the_output_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: a tool output four times the request budget, in a turn still open: the
    window ``get_items`` returns (with the instructions) fits the budget, the output is a
    head-and-tail excerpt naming the stored original, every call keeps its items, the store
    holds the output whole, and status / events / the log say what was condensed and why."""
    caplog.set_level(logging.WARNING, logger="hermes_host")
    with ContextHost.from_config(make_config(), store=tmp_path / "state.db") as host:
        session = HermesSession("bound-direct", host=host, system_prompt=INSTRUCTIONS)
        asyncio.run(pending_big_read(session, "c1"))
        assert session.hermes.window_tokens > 3 * BUDGET  # the window itself is whole

        items = asyncio.run(session.get_items())
        assert request_tokens(host, items) <= BUDGET
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        assert calls == ["c1", "c1-archive"]
        (output,) = [i["output"] for i in items if i.get("type") == "function_call_output"]
        assert output.startswith("line 00000") and output.rstrip().endswith(
            "line 00999: " + ("payload data " * 3).rstrip())
        assert "the store keeps this output (tool call c1) whole" in output
        assert len(output) < len(BIG_FILE) // 4

        tools = [m for m in stored_messages(host, session) if m.get("role") == "tool"]
        assert [m["content"] for m in tools] == [BIG_FILE]  # the original, whole

        status = session.status()
        assert status["request_budget"] == BUDGET
        assert status["last_request_tokens"] is not None
        assert status["last_request_tokens"] <= BUDGET
        assert status["request_bound"]["fits"] is True
        assert status["request_bound"]["excerpts"] >= 1
        warning = status["window_warning"]
        assert warning.startswith("request condensed to fit the budget")
        assert "head-and-tail excerpt" in warning and "Why: " in warning
        assert any(e.startswith("⚠ request condensed") for e in session.hermes.events)
        assert any(r.name == "hermes_host.host" and r.levelno == logging.WARNING
                   and "request condensed" in r.getMessage() for r in caplog.records)


def test_every_run_starts_within_the_budget_and_the_store_keeps_every_read(
    tmp_path: Path,
) -> None:
    """Issue 28, the path users run: four ``Runner.run`` turns, two of them reading the
    oversize file; the first model call of every run — the history ``get_items`` gave the
    SDK, plus the new input — reached the model server within the budget; the store keeps
    both reads whole."""
    with FakeOpenAI(responder=responder) as fake, ContextHost.from_config(
        make_config(), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("bound-runs", host=host, system_prompt=INSTRUCTIONS)
        turns = ["turn 0: read big.txt", "turn 1: what did it say?",
                 "turn 2: read it again", "turn 3: thanks"]

        async def conversation() -> None:
            async with make_agent(fake) as agent:
                for text in turns:
                    await Runner.run(agent, text, session=session)

        asyncio.run(conversation())
        requests = agent_requests(fake)
        starts = [r for r in requests if r[-1]["role"] == "user"]
        assert [r[-1]["content"] for r in starts] == turns
        sizes = [host.tokens.count_all(r) for r in starts]
        assert all(size <= BUDGET for size in sizes), sizes
        # later runs carried the earlier read in some form, within the budget
        assert any(m["role"] == "tool" for m in starts[1])
        # both reads whole (a compression's rewritten copies are stored beside them)
        tools = [m for m in stored_messages(host, session) if m.get("role") == "tool"]
        assert sum(m["content"] == BIG_FILE for m in tools) == 2


def test_every_model_call_within_a_run_is_within_the_budget(tmp_path: Path) -> None:
    """Issue 28: with ``RunConfig(call_model_input_filter=session.select_filter)`` — the
    per-model-call hook the SDK offers — every request the model server received, including
    the one right after the oversize file read within the same run, is within the budget."""
    with FakeOpenAI(responder=responder) as fake, ContextHost.from_config(
        make_config(), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession("bound-in-run", host=host, system_prompt=INSTRUCTIONS)
        run_config = RunConfig(call_model_input_filter=session.select_filter)

        async def conversation() -> None:
            async with make_agent(fake) as agent:
                for text in ["turn 0: read big.txt", "turn 1: thanks"]:
                    await Runner.run(agent, text, session=session, run_config=run_config)

        asyncio.run(conversation())
        sizes = [host.tokens.count_all(r) for r in agent_requests(fake)]
        assert len(sizes) == 3
        assert all(size <= BUDGET for size in sizes), sizes


def test_a_summariser_failing_every_call_leaves_every_run_within_the_budget(
    tmp_path: Path,
) -> None:
    """Issue 28: the summariser answers 429 to every call.  Runs go on compressing (the
    offline summariser during the cooldown, no LLM call then), every run's first request is
    within the budget, and when a turn leaves the window over the budget during the cooldown
    ``get_items`` still fits it, with a ``window_warning`` whose cause names the cooldown."""
    with FakeOpenAI(responder=responder) as fake, FakeOpenAI() as summariser, \
            ContextHost.from_config(make_config(rate_limited_summarizer(summariser)),
                                    store=tmp_path / "state.db") as host:
        session = HermesSession("bound-429", host=host, system_prompt=INSTRUCTIONS)
        turns = [f"turn {n}: read big.txt" if n % 2 == 0 else f"turn {n}: go on"
                 for n in range(8)]

        async def conversation() -> None:
            async with make_agent(fake) as agent:
                for text in turns:
                    await Runner.run(agent, text, session=session)

        asyncio.run(conversation())
        starts = [r for r in agent_requests(fake) if r[-1]["role"] == "user"]
        assert [r[-1]["content"] for r in starts] == turns
        sizes = [host.tokens.count_all(r) for r in starts]
        assert all(size <= BUDGET for size in sizes), sizes

        # the summariser was asked, failed with 429, and was not asked again while cooling
        asked = [r for r in summariser.requests if "/chat/completions" in r.path]
        assert asked and all(r.behaviour == "429" for r in asked)
        assert len(asked) == 1
        assert session.hermes.compression_count >= 2  # compression went on, offline
        status = session.status()
        assert status["summarizer_cooldown"] is not None

        asyncio.run(pending_big_read(session, "c9"))
        items = asyncio.run(session.get_items())
        assert request_tokens(host, items) <= BUDGET
        warning = session.status()["window_warning"]
        assert warning is not None and warning.startswith("request condensed")
        assert "cooling down" in warning.split("Why: ", 1)[1]
        assert len(summariser.requests) == 1  # still no LLM call during the cooldown
