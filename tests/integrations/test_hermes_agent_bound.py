"""The request bound under a real Hermes Agent (issue 28): with ``context.engine: hermes_host``
every request Hermes sends passes hermes-host's ``llm_request`` middleware, which condenses a
request larger than ``context_length - max_output_tokens`` and says so on a
``⚠ hermes-host:`` line.

Hermes refuses models under 64K tokens of context, so the window is 64,000 tokens with 8,000
reserved for the reply: a budget of 56,000.  The request that breaks it is a user message of
~75,000 tokens (a pasted log), which no compression can shrink — it is the newest turn.  The
requests are read back from the loopback server that received them and counted with the
host's own counter.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("run_agent", reason="needs the hermes-agent package (suite hermes-agent)")

from hermes_agent_hermes_host.engine import HermesHostEngine

from tests.integrations.hermes_agent_helpers import (
    HermesRig,
    rig_fixture,  # noqa: F401  (the `rig` fixture)
)

CONTEXT, MAX_OUTPUT = 64_000, 8_000
BUDGET = CONTEXT - MAX_OUTPUT
LOG = "\n".join(f"{i:06d} worker-{i % 7} job finished status=ok elapsed={i % 97}ms"
                for i in range(9000))
"""A pasted log far larger than the budget; first line ``000000 …``, last ``008999 …``."""

HOST_CONFIG = f"""
context: {{engine: compressor}}
summarizer: {{provider: offline}}
model: {{max_output_tokens: {MAX_OUTPUT}}}
memory: {{providers: []}}
"""


def small_window(rig: HermesRig, host_config: str = HOST_CONFIG) -> None:
    rig.write_configs(host_config)
    config = rig.home / "config.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("context_length: 128000", f"context_length: {CONTEXT}"),
                      encoding="utf-8")
    rig.discover()


def chat_requests(rig: HermesRig) -> list[list[dict[str, Any]]]:
    return [r.body["messages"] for r in rig.fake.requests
            if isinstance(r.body, dict) and "messages" in r.body]


def test_an_oversize_request_leaves_the_middleware_within_the_budget_issue_28(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """A turn whose user message alone is over the budget: the request the model server
    received is within it (the message as a head-and-tail excerpt), a ``⚠ hermes-host:`` line
    says what was condensed, the session's window_warning and status report it, and Hermes'
    history and the hermes-host store keep the message whole."""
    small_window(rig)
    agent = rig.agent()
    engine: HermesHostEngine = agent.context_compressor
    assert engine.context_length == CONTEXT
    first = agent.run_conversation("hello, I will paste a log next")
    question = "what failed in this log?\n" + LOG
    result = agent.run_conversation(question, conversation_history=first["messages"])
    assert result["final_response"].startswith("(fake model)")

    host, session = engine.host, engine.session
    assert host is not None and session is not None
    assert host.tokens.count({"role": "user", "content": question}) > BUDGET
    sent = chat_requests(rig)[-1]
    assert host.tokens.count_all(sent) <= BUDGET
    newest = sent[-1]
    assert newest["role"] == "user"
    assert newest["content"].startswith("what failed in this log?\n000000 ")
    assert newest["content"].rstrip().endswith(LOG.splitlines()[-1])
    assert "the store keeps this message whole" in newest["content"]
    assert sent[0]["role"] == "system"  # Hermes' system prompt is never condensed away

    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("⚠ hermes-host: ")]
    assert any("request condensed to fit the budget" in line for line in lines), err[-2000:]
    status = session.status()
    assert status["request_budget"] == BUDGET
    assert status["window_warning"] is not None
    assert status["window_warning"].startswith("request condensed")
    assert status["request_bound"]["fits"] is True
    assert status["request_bound"]["clipped"] >= 1
    assert status["last_request_tokens"] <= BUDGET

    # Hermes' own history and the store keep the question whole
    assert any(m.get("content") == question for m in result["messages"])
    rows = [r.message for sid in session.lineage for r in host.store.all_messages(sid)]
    assert any(m.get("content") == question for m in rows)


def rate_limited_conversation(rig: HermesRig, summariser: Any) -> HermesHostEngine:
    """Eight turns of ~18,000 tokens each, then the whole log (over the budget by itself),
    with hermes-host's summariser (its ``openai`` provider on ``summariser``) answering 429
    to every call."""
    summariser.script(["429"] * 500)
    small_window(rig, f"""
        context: {{engine: compressor}}
        summarizer: {{provider: openai, model: gpt-fake-1, base_url: {summariser.base_url},
                      api_key_env: HERMES_TEST_NO_SUCH_KEY}}
        model: {{max_output_tokens: {MAX_OUTPUT}}}
        memory: {{providers: []}}
        """)
    agent = rig.agent()
    history: list[dict[str, Any]] = []
    chunk = "\n".join(LOG.splitlines()[:2200])
    for n in range(8):
        result = agent.run_conversation(f"turn {n}: look at this part of the log\n{chunk}",
                                        conversation_history=history)
        history = result["messages"]
        assert result["final_response"].startswith("(fake model)")
    result = agent.run_conversation("and the whole log?\n" + LOG, conversation_history=history)
    assert result["final_response"].startswith("(fake model)")
    engine: HermesHostEngine = agent.context_compressor
    return engine


def test_a_summariser_failing_every_call_keeps_every_request_within_the_budget_issue_28(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """The summariser answers 429 to every call: over a long conversation of large turns
    every request Hermes sent is within the budget, compression goes on offline during the
    cooldown without another LLM call, and the oversize last turn is condensed with a
    ``⚠ hermes-host:`` line."""
    from hermes_host.testing.fake_openai import FakeOpenAI

    with FakeOpenAI() as summariser:
        engine = rate_limited_conversation(rig, summariser)
        host, session = engine.host, engine.session
        assert host is not None and session is not None
        sizes = [host.tokens.count_all(m) for m in chat_requests(rig)]
        assert len(sizes) >= 9
        assert all(size <= BUDGET for size in sizes), sizes
        asked = [r for r in summariser.requests if "/chat/completions" in r.path]
        assert asked and all(r.behaviour == "429" for r in asked)
        assert len(asked) == 1  # no LLM call during the cooldown
        assert session.compression_count >= 2  # compression went on, offline
        assert session.status()["summarizer_cooldown"] is not None
        warning = session.window_warning
        assert warning is not None and warning.startswith("request condensed")
        err = capfd.readouterr().err
        assert any(line.startswith("⚠ hermes-host: request condensed to fit the budget")
                   for line in err.splitlines()), err[-2000:]


def test_the_warning_during_a_summariser_cooldown_names_the_cooldown_issue_28(
    rig: HermesRig, capfd: pytest.CaptureFixture[str]
) -> None:
    """When the window is over the budget while the summariser cools down (429 on every
    call), the window_warning and the ``⚠ hermes-host:`` line give the cooldown as the
    cause."""
    from hermes_host.testing.fake_openai import FakeOpenAI

    with FakeOpenAI() as summariser:
        engine = rate_limited_conversation(rig, summariser)
        assert engine.session is not None
        assert engine.session.status()["summarizer_cooldown"] is not None
        warning = engine.session.window_warning
        assert warning is not None
        assert "cooling down" in warning.split("Why: ", 1)[1]
        err = capfd.readouterr().err
        assert any(line.startswith("⚠ hermes-host: request condensed") and "cooling down"
                   in line for line in err.splitlines())
