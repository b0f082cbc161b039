"""The tools the engine offers Hermes: ``hermes_host_search`` and the ``select_context``
engines' own (an optional ``tool_schemas()``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hermes_agent_hermes_host._state import _EngineState, _short

__all__ = ["SEARCH_TOOL"]

SEARCH_TOOL = "hermes_host_search"
"""The tool this engine offers: search the whole stored history, compacted rows included."""


class _Tools(_EngineState):
    """The tools part of :class:`~.engine.HermesHostEngine`."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """``hermes_host_search`` (the whole stored history, compacted rows included), plus
        what the configured ``select_context`` engines offer through an optional
        ``tool_schemas()`` method."""
        schemas: list[dict[str, Any]] = [{
            "name": SEARCH_TOOL,
            "description": (
                "Search this conversation's full stored history, including messages that "
                "were compressed out of the context window. Returns matching messages "
                "with their neighbours."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words or a literal phrase."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                },
                "required": ["query"],
            },
        }]
        for _, engine in self._tool_engines():
            try:
                offered = engine.tool_schemas()
            except Exception as exc:
                self._warn(f"an engine's tool_schemas() failed: {_short(exc)}")
                continue
            schemas.extend(s for s in offered or [] if isinstance(s, dict) and s.get("name"))
        return schemas

    def _tool_engines(self) -> list[tuple[str, Any]]:
        host = self._host
        if host is None:
            self._open_tools_host()
            host = self._host
        if host is None:
            return []
        found = []
        for name in host.chain("select_context"):
            engine = host.plugins.engines.get(name)
            if callable(getattr(engine, "tool_schemas", None)):
                found.append((name, engine))
        return found

    def _open_tools_host(self) -> None:
        # Hermes asks for tool schemas before the session starts: open the host early.
        try:
            with self._lock:
                self._open_host(None)
        except Exception as exc:
            self._warn(f"could not load hermes-host's configuration: {_short(exc)}")

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        try:
            self.sync(kwargs.get("messages"))
            if name == SEARCH_TOOL:
                return self._search(args)
            for _, engine in self._tool_engines():
                offered = {s.get("name") for s in engine.tool_schemas() or []}
                if name in offered:
                    return str(engine.handle_tool_call(name, dict(args)))
        except Exception as exc:
            return json.dumps({"error": f"{name} failed: {_short(exc)}"})
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def _search(self, args: Mapping[str, Any]) -> str:
        session, host = self._session, self._host
        if session is None or host is None:
            return json.dumps({"error": "no hermes-host session is open"})
        query = str(args.get("query") or "").strip()
        if not query:
            return json.dumps({"error": "query is required"})
        limit = max(1, min(20, int(args.get("limit") or 5)))
        hits = host.store.session_search(query, session_id=session.id, lineage=True,
                                         limit=limit)
        return json.dumps({"results": [_hit(h) for h in hits]}, ensure_ascii=False)


def _hit(hit: Any) -> dict[str, Any]:
    def text(sm: Any) -> Any:
        return {"role": sm.message.get("role"), "content": sm.message.get("content")}

    return {
        "role": hit.role,
        "content": hit.content,
        "compacted": not hit.active,
        "before": [text(m) for m in hit.before],
        "after": [text(m) for m in hit.after],
    }
