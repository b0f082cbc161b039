"""The LangChain middleware's and the LangGraph hook's ``status()`` always hold the
documented keys, with ``error`` saying why hermes-host is not bounding the model input
(issue 30, deliverable 3).  Real ``create_agent`` / ``create_react_agent`` runs on
langchain-core's fake chat model, a real SQLite store; the store failure is one patched
write (a full disk cannot be made here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from hermes_host.integrations._status import STATUS_KEYS
from hermes_host.integrations.langchain import HermesContextMiddleware
from hermes_host.integrations.langgraph import hermes_pre_model_hook
from hermes_host.store import StoreError
from tests.integrations.test_langchain import (
    SYSTEM,
    RecordingFakeModel,
    lookup,
    make_host,
    script,
)

SECRET = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8" * 5


def test_middleware_status_has_every_key_and_says_why_it_failed_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = RecordingFakeModel(messages=script(3), inputs=[])
    host = make_host(tmp_path, context_length=100_000)
    middleware = HermesContextMiddleware(host)
    agent = create_agent(model, [lookup], system_prompt=SYSTEM, middleware=[middleware],
                         checkpointer=InMemorySaver())
    thread: Any = {"configurable": {"thread_id": "lc-status"}}
    agent.invoke({"messages": [{"role": "user", "content": "turn 0"}]}, thread)
    status = middleware.status("lc-status")
    assert tuple(status)[:len(STATUS_KEYS)] == STATUS_KEYS
    assert status["error"] is None and status["conversation_id"] == "lc-status"
    assert status["window_tokens"] > 0

    real = host.store.append_messages

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreError(f"disk full while writing {SECRET}")

    monkeypatch.setattr(host.store, "append_messages", failing)
    agent.invoke({"messages": [{"role": "user", "content": "turn 1"}]}, thread)
    status = middleware.status("lc-status")
    assert set(STATUS_KEYS) <= set(status)
    assert status["error"].startswith(
        "hermes-host failed at the last model call, so the model got the whole state: "
        "StoreError: disk full while writing")
    assert SECRET not in status["error"]

    monkeypatch.setattr(host.store, "append_messages", real)
    agent.invoke({"messages": [{"role": "user", "content": "turn 2"}]}, thread)
    assert middleware.status("lc-status")["error"] is None  # working again

    host.close()  # the store is gone: still every key, error says so
    status = middleware.status("lc-status")
    assert set(status) == set(STATUS_KEYS)
    assert status["conversation_id"] == "lc-status" and status["window_tokens"] is None
    assert status["lineage"] == [] and status["engines"] == {}
    assert status["error"].startswith("hermes-host cannot read this conversation: ")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent (LangGraph 1.x)
def test_langgraph_hook_status_has_every_key(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    model = RecordingFakeModel(messages=script(1), inputs=[])
    with make_host(tmp_path, context_length=100_000) as host:
        hook = hermes_pre_model_hook(host, system_prompt=SYSTEM)
        agent = create_react_agent(model, [lookup], prompt=SYSTEM, pre_model_hook=hook,
                                   post_model_hook=hook.post_model_hook,
                                   checkpointer=InMemorySaver())
        agent.invoke({"messages": [{"role": "user", "content": "turn 0"}]},
                     {"configurable": {"thread_id": "lg-status"}})
        status = hook.status("lg-status")
        assert set(STATUS_KEYS) <= set(status) and status["error"] is None
        assert status["conversation_id"] == "lg-status" and status["messages"] == 4
