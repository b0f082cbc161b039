"""hermes-host as a LangGraph ``pre_model_hook`` (``create_react_agent``, issue 18).

::

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent
    from hermes_host.integrations.langgraph import hermes_pre_model_hook

    hook = hermes_pre_model_hook()
    agent = create_react_agent(model, tools, pre_model_hook=hook,
                               post_model_hook=hook.post_model_hook,
                               checkpointer=InMemorySaver())

The hook returns ``{"llm_input_messages": window}``: the model gets the hermes-host window
(summary + kept tail, tool pairs intact) while the graph state keeps every message.  New state
messages are stored in the hermes-host store as they appear, and the turn is ended (compressing
when due) whenever no tool call is open.  ``hook.post_model_hook`` (optional) stores each
reply right after the model call, so the store has a turn's final answer before the next turn.
Each ``thread_id`` is one hermes-host conversation, its id the thread id.

``create_react_agent`` is deprecated in LangGraph 1.x in favour of
``langchain.agents.create_agent``: use
:class:`hermes_host.integrations.langchain.HermesContextMiddleware` there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.integrations._lc_window import LangChainWindow, thread_id
from hermes_host.store import StateStore

__all__ = ["HermesPreModelHook", "hermes_pre_model_hook"]


class HermesPreModelHook:
    """The hook: call it with the graph state; ``window`` is its :class:`LangChainWindow`
    (``hook.window.session(thread_id)`` is the hermes-host session, for ``status()``)."""

    def __init__(self, window: LangChainWindow, system_prompt: str = "") -> None:
        self.window = window
        self.system_prompt = system_prompt

    def __call__(self, state: Mapping[str, Any] | Any) -> dict[str, Any]:
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        window = self.window.model_input(messages, system_prompt=self.system_prompt,
                                         key=thread_id())
        return {"llm_input_messages": window}

    def status(self, thread: str | None = None) -> dict[str, Any]:
        """hermes-host's ``/status`` of a thread's conversation (``None``: the default one),
        always with the documented keys; ``error`` says why hermes-host is not bounding the
        model input (``None`` while it is)."""
        return self.window.status(thread)

    def post_model_hook(self, state: Mapping[str, Any] | Any) -> dict[str, Any]:
        """A ``post_model_hook``: store the reply; no state update."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        self.window.record_safely(messages, system_prompt=self.system_prompt,
                                  key=thread_id())
        return {}


def hermes_pre_model_hook(
    host: ContextHost | None = None,
    *,
    config: HermesConfig | str | Path | None = None,
    store: StateStore | str | Path | None = None,
    session_id: str | None = None,
    title: str | None = None,
    system_prompt: str = "",
) -> HermesPreModelHook:
    """A ``pre_model_hook`` bounding the model input with hermes-host.

    ``host`` is a :class:`~hermes_host.host.ContextHost` to share; without it one is built
    from ``config`` and ``store`` (``None``: ``config.yaml`` and the configured store).
    ``session_id`` names the conversation used outside a thread (no checkpointer);
    ``system_prompt`` is the agent's prompt, counted in the window's tokens (the graph still
    sends it itself)."""
    window = LangChainWindow(host, config=config, store=store, session_id=session_id,
                             title=title, source="langgraph")
    return HermesPreModelHook(window, system_prompt)
