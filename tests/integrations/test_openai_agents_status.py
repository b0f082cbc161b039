"""``HermesSession.status()`` always holds the documented keys, with ``error`` saying why
hermes-host is not shaping the model input (issue 30, deliverable 3).  A real
``Runner.run`` on the SDK's Chat Completions model against the loopback fake; the failure
inside ``select_filter`` is one patched call (a failing store cannot be made here)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import RunConfig, Runner  # noqa: E402

from hermes_host.host import ContextHost  # noqa: E402
from hermes_host.integrations._status import STATUS_KEYS  # noqa: E402
from hermes_host.integrations.openai_agents import HermesSession  # noqa: E402
from hermes_host.store import StoreError  # noqa: E402
from hermes_host.testing.fake_openai import FakeOpenAI  # noqa: E402
from tests.integrations.test_openai_agents import (  # noqa: E402
    agent_responder,
    make_agent,
    make_config,
)

SECRET = "sk-proj-" + "Z9y8X7w6V5u4T3s2" * 4


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    agents.set_tracing_disabled(True)  # the trace exporter would call the real OpenAI


def test_status_has_every_key_and_says_why_hermes_host_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI(responder=agent_responder) as fake:
        host = ContextHost.from_config(make_config(fake, 100_000), store=tmp_path / "s.db")
        session = HermesSession("oa-status", host=host)
        run_config = RunConfig(call_model_input_filter=session.select_filter)

        async def run(text: str) -> str:
            async with make_agent(fake) as agent:
                result = await Runner.run(agent, text, session=session, run_config=run_config)
                return str(result.final_output)

        assert asyncio.run(run("turn 0: go")).startswith("answer from")
        status = session.status()
        assert tuple(status)[:len(STATUS_KEYS)] == STATUS_KEYS
        assert status["error"] is None and status["conversation_id"] == "oa-status"

        def failing(*args: Any, **kwargs: Any) -> Any:
            raise StoreError(f"store unreachable ({SECRET})")

        monkeypatch.setattr(session.hermes, "select_context", failing)
        assert asyncio.run(run("turn 1: go")).startswith("answer from")  # failed open
        error = session.status()["error"]
        assert error.startswith("hermes-host failed at the last model call, so the input "
                                "went as it was: StoreError: store unreachable")
        assert SECRET not in error

        monkeypatch.undo()
        asyncio.run(run("turn 2: go"))
        assert session.status()["error"] is None

        host.close()
        status = session.status()
        assert set(status) == set(STATUS_KEYS)
        assert status["conversation_id"] == "oa-status" and status["window_tokens"] is None
        assert status["error"].startswith("hermes-host cannot read this conversation: ")
