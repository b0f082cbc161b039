"""``HermesSession`` under the SDK's other two ways to run an agent (issue 18, deliverable 2):
the Responses API model (``OpenAIResponsesModel``, the SDK's default) and
``Runner.run_streamed``, each against the loopback fake server (its ``/v1/responses`` route
and its server-sent events), through the real ``openai-agents`` and ``openai`` packages.
``test_openai_agents.py`` covers ``Runner.run`` on the Chat Completions model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
)
from openai import AsyncOpenAI  # noqa: E402
from test_openai_agents import (  # noqa: E402
    INSTRUCTIONS,
    agent_responder,
    lookup,
    make_config,
    pairs_intact,
)

from hermes_host.host import ContextHost  # noqa: E402
from hermes_host.integrations.openai_agents import ITEMS_KEY, HermesSession  # noqa: E402
from hermes_host.messages import SUMMARY_PREFIX  # noqa: E402
from hermes_host.testing.fake_openai import FakeOpenAI  # noqa: E402

TURNS = 8


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    agents.set_tracing_disabled(True)  # the trace exporter would call the real OpenAI


def _model(api: str, client: AsyncOpenAI) -> Any:
    if api == "responses":
        return OpenAIResponsesModel(model="gpt-fake-1", openai_client=client)
    return OpenAIChatCompletionsModel(model="gpt-fake-1", openai_client=client)


async def _turn(agent: Agent[Any], text: str, session: HermesSession, streamed: bool) -> str:
    if not streamed:
        return str((await Runner.run(agent, text, session=session)).final_output)
    result = Runner.run_streamed(agent, text, session=session)
    kinds = set()
    async for event in result.stream_events():
        kinds.add(event.type)
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds, kinds
    return str(result.final_output)


def _agent_inputs(fake: FakeOpenAI, route: str) -> list[str]:
    """The raw bodies of the agent's own model calls (not the summariser's) on ``route``."""
    return [r.raw_body for r in fake.requests if route in r.path and INSTRUCTIONS in r.raw_body]


@pytest.mark.parametrize(("api", "streamed"), [
    ("responses", False), ("responses", True), ("chat", True)])
def test_session_compresses_under_responses_model_and_run_streamed(
    tmp_path: Path, api: str, streamed: bool,
) -> None:
    """Issue 18: over several turns with a tool call each, the window compresses through
    hermes-host, the next model call gets the summary and the kept tail (tool pairs intact,
    the first turn gone), the store keeps every item verbatim, and the session id is stable."""
    route = "/v1/responses" if api == "responses" else "/v1/chat/completions"
    with FakeOpenAI(responder=agent_responder) as fake, ContextHost.from_config(
        make_config(fake), store=tmp_path / "state.db"
    ) as host:
        session = HermesSession(f"{api}-{streamed}", host=host, system_prompt=INSTRUCTIONS)

        async def conversation() -> list[str]:
            client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
            agent = Agent(name="tester", instructions=INSTRUCTIONS,
                          model=_model(api, client), tools=[lookup])
            try:
                return [await _turn(agent, f"turn {n}: tell me about topic {n}", session,
                                    streamed) for n in range(TURNS)]
            finally:
                await client.close()

        outputs = asyncio.run(conversation())
        assert all(o.startswith("answer from") for o in outputs), outputs
        assert session.hermes.compression_count >= 1
        assert session.session_id == f"{api}-{streamed}" == session.hermes.conversation_id

        window = asyncio.run(session.get_items())
        assert SUMMARY_PREFIX in window[0]["content"]
        assert pairs_intact(window)
        assert all("turn 0:" not in json.dumps(i) for i in window)

        calls = _agent_inputs(fake, route)
        assert len(calls) == 2 * TURNS  # one call for the tool, one for the answer, per turn
        last = calls[-1]
        assert SUMMARY_PREFIX in last and "turn 0:" not in last
        assert f"turn {TURNS - 1}:" in last

        rows = sorted((row for sid in host.store.lineage(session.hermes.id)
                       for row in host.store.all_messages(sid)), key=lambda r: r.id)
        stored = [row.message for row in rows if ITEMS_KEY in row.message]
        users = [m["content"] for m in stored if m.get("role") == "user"]
        assert users == [f"turn {n}: tell me about topic {n}" for n in range(TURNS)]
        assert len([m for m in stored if m.get("role") == "tool"]) == TURNS
        finals = [m for m in stored if m.get("role") == "assistant" and not m.get("tool_calls")]
        assert [str(m["content"]) for m in finals] == outputs
