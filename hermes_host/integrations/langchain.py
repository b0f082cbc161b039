"""hermes-host as LangChain v1 agent middleware (``langchain.agents.create_agent``, issue 18).

::

    from langchain.agents import create_agent
    from hermes_host.integrations.langchain import HermesContextMiddleware

    agent = create_agent(model, tools, middleware=[HermesContextMiddleware()])

Before every model call the middleware stores the messages of the agent state that are new
(in the hermes-host store, each once), ends the turn when no tool call is open — compressing
through the engines of ``config.yaml`` when due — and calls the model with the hermes-host
window (summary + kept tail, tool pairs intact, ``select_context`` engines applied) through
``request.override(messages=...)``; after the call it stores the reply (``after_model``), so
the store has the final answer of a turn too.  It returns no state update: the graph state
keeps every message, only the model input is bounded.

Each LangGraph thread (the ``thread_id`` of a checkpointer run) is one hermes-host
conversation whose id is the thread id, stable across compressions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session
from hermes_host.integrations._lc_window import LangChainWindow, thread_id
from hermes_host.store import StateStore

__all__ = ["HermesContextMiddleware"]


class HermesContextMiddleware(AgentMiddleware):  # type: ignore[misc,unused-ignore]
    """Bound the model input of a ``create_agent`` agent with hermes-host.

    ``host`` is a :class:`~hermes_host.host.ContextHost` to share; without it one is built
    from ``config`` and ``store`` (as :meth:`ContextHost.from_config` takes them: ``None`` for
    ``config.yaml`` and the configured store).  ``session_id`` names the conversation used
    outside a LangGraph thread (no checkpointer); ``title`` titles new conversations.
    """

    def __init__(
        self,
        host: ContextHost | None = None,
        *,
        config: HermesConfig | str | Path | None = None,
        store: StateStore | str | Path | None = None,
        session_id: str | None = None,
        title: str | None = None,
    ) -> None:
        super().__init__()
        self.hermes = LangChainWindow(host, config=config, store=store, session_id=session_id,
                                      title=title, source="langchain")

    def _request(self, request: ModelRequest) -> ModelRequest:
        # list[Any]: the state's messages go back as they are (AnyMessage members)
        window: list[Any] = self.hermes.model_input(
            request.messages, system_prompt=request.system_prompt or "", key=thread_id()
        )
        return request.override(messages=window)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Call the model with the hermes-host window instead of the whole state."""
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """The async form: the store and the engines run in a worker thread."""
        key = thread_id()  # read here: the worker thread has no graph context
        window: list[Any] = await asyncio.to_thread(
            self.hermes.model_input, request.messages,
            system_prompt=request.system_prompt or "", key=key,
        )
        return await handler(request.override(messages=window))

    def after_model(self, state: Any, runtime: Any) -> None:
        """Store the model's reply (and end the turn when it called no tool)."""
        self.hermes.record_safely(state["messages"], key=thread_id())

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        """The async form of :meth:`after_model`."""
        key = thread_id()
        await asyncio.to_thread(self.hermes.record_safely, state["messages"], key=key)

    def session(self, thread: str | None = None) -> Session:
        """The hermes-host session of a thread (``None``: the default conversation) — for
        ``status()``, ``compress()``, search."""
        return self.hermes.session(thread)

    def status(self, thread: str | None = None) -> dict[str, Any]:
        """hermes-host's ``/status`` of a thread's conversation (``None``: the default one),
        always with the documented keys; ``error`` says why hermes-host is not bounding the
        model input (``None`` while it is)."""
        return self.hermes.status(thread)

    def close(self) -> None:
        """Close the host if the middleware built it."""
        self.hermes.close()

