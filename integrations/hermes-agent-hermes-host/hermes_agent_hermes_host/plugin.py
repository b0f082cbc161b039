"""Hermes Agent plugin entry point (``hermes_agent.plugins`` group, name ``hermes_host``).

``register(ctx)`` registers the ``hermes_host`` context engine (Hermes uses it when its
config.yaml says ``context.engine: hermes_host``), plus two per-request callbacks that act
only for sessions that engine serves:

* the ``pre_api_request`` hook (before each model call) and the ``post_llm_call`` hook (when
  a turn has its answer) store every message Hermes added since the last look;
* the ``llm_request`` middleware lets hermes-host's ``select_context`` engines choose the
  messages of each request (only when the config names some).
"""

from __future__ import annotations

from typing import Any

from hermes_agent_hermes_host.engine import HermesHostEngine, engine_for

__all__ = ["register"]


def register(ctx: Any) -> None:
    """Called by Hermes' plugin manager with its ``PluginContext``."""
    ctx.register_context_engine(HermesHostEngine())
    ctx.register_hook("pre_api_request", store_new_messages)
    ctx.register_hook("post_llm_call", store_new_messages)
    ctx.register_middleware("llm_request", select_context)


def store_new_messages(**kwargs: Any) -> None:
    """``pre_api_request`` / ``post_llm_call``: ``conversation_history`` is (a shallow copy
    of) Hermes' live message list."""
    engine = engine_for(kwargs.get("session_id"))
    if engine is not None:
        engine.sync(kwargs.get("conversation_history"))


def select_context(**kwargs: Any) -> dict[str, Any] | None:
    """``llm_request`` middleware: ``{"request": …}`` with the selected messages, or
    ``None`` to leave the request as Hermes built it."""
    engine = engine_for(kwargs.get("session_id"))
    request = kwargs.get("request")
    if engine is None or not isinstance(request, dict):
        return None
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None  # a Responses-API request: hermes-host selects chat messages only
    selected = engine.select(messages)
    if selected is None:
        return None
    return {"request": {**request, "messages": selected}, "reason": "hermes-host select_context"}
