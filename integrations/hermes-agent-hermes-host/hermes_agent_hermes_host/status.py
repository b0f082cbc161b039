"""``get_status()`` and the warnings: one line per new engine problem, said once, redacted."""

from __future__ import annotations

import sys
from typing import Any

from hermes_agent_hermes_host._state import _EngineState, _short, logger

__all__: list[str] = []


STATUS_KEYS = (
    "session_id", "conversation_id", "hermes_session_id", "store", "window_tokens",
    "threshold_tokens", "blocked", "last_decision", "engines", "engine_problems", "lineage",
    "last_compression", "error",
)
"""The keys of ``get_status()["hermes_host"]``, every one always present (docs/integrations/
hermes-agent.md): ``None`` (or empty) for what is not known while hermes-host is not
managing the context, and ``error`` saying why (``None`` when it is)."""


class _Status(_EngineState):
    """The status and warnings part of :class:`~.engine.HermesHostEngine`."""

    _disabled_reason: str | None = None
    """Why the last ``on_session_start`` could not open the hermes-host session (set by
    :mod:`.sessions`; ``None`` once one opens)."""

    def get_status(self) -> dict[str, Any]:
        status: dict[str, Any] = dict(super().get_status())
        with self._lock:
            session = self._session
            if session is None:
                why = self._disabled_reason or (
                    "no hermes-host session: Hermes has not started one (or it was reset)")
                status["hermes_host"] = self._partial_status(f"{why}; hermes-host is not "
                                                             "managing Hermes' context")
                return status
            try:
                full = session.status()
            except Exception as exc:
                status["hermes_host"] = self._partial_status(
                    f"hermes-host status failed: {_short(exc)}", session)
                return status
        assert self._host is not None
        status["compression_count"] = full["compression_count"]
        status["hermes_host"] = {
            "session_id": full["session_id"],
            "conversation_id": full["conversation_id"],
            "hermes_session_id": self._hermes_session_id,
            "store": self._host.store.location,
            "window_tokens": full["window_tokens"],
            "threshold_tokens": full["threshold_tokens"],
            "blocked": full["blocked"],
            "last_decision": self._last_decision_reason,
            "engines": full["engines"],
            "engine_problems": full["engine_problems"],
            "lineage": full["lineage"],
            "last_compression": self.last_report,
            "error": None,
        }
        return status

    def _partial_status(self, error: str, session: Any = None) -> dict[str, Any]:
        """Every documented key, with what is known without a working session status."""
        from hermes_host.redact import redact

        def known(read: Any) -> Any:
            try:
                return read()
            except Exception:
                return None

        host = self._host
        return {
            "session_id": known(lambda: session.id) if session is not None else None,
            "conversation_id": (known(lambda: session.conversation_id)
                                if session is not None else None),
            "hermes_session_id": self._hermes_session_id,
            "store": known(lambda: host.store.location) if host is not None else None,
            "window_tokens": None,
            "threshold_tokens": None,
            "blocked": None,
            "last_decision": self._last_decision_reason,
            "engines": {},
            "engine_problems": (known(lambda: [row for row in host.engine_health()
                                               if row["problems"]]) or []
                                if host is not None else []),
            "lineage": (known(lambda: list(session.lineage)) or []
                        if session is not None else []),
            "last_compression": self.last_report,
            "error": redact(error),
        }

    def _report_problems(self, quiet_hooks: tuple[str, ...] = ()) -> None:
        """One warning line per new engine problem the fence recorded since the last look
        (hooks in ``quiet_hooks`` are shown by Hermes itself)."""
        host = self._host
        if host is None:
            return
        for row in host.engine_health():
            key = (str(row["plugin"]), str(row["hook"]))
            problems = int(row["problems"])
            if problems <= self._problems_seen.get(key, 0):
                continue
            self._problems_seen[key] = problems
            if key[1] in quiet_hooks:
                continue
            fallback = {
                "should_compress": "hermes-host's own threshold decided",
                "select_context": "the request was sent unchanged",
            }.get(key[1], "Hermes' turn goes on")
            self._warn(f"engine {key[0]!r} {key[1]}: {row['last_error'] or 'failed'} "
                       f"({row['errors']} errors, {row['timeouts']} timeouts, breaker "
                       f"{row['breaker'] or 'closed'}); {fallback}")

    def _warn(self, text: str) -> None:
        from hermes_host.redact import redact

        line = f"⚠ hermes-host: {redact(text)}"
        logger.warning("%s", line)
        if line in self._warned:  # said once is enough (the log has every occurrence)
            return
        self._warned.add(line)
        if self._warn_fn is not None:
            self._warn_fn(line)
        else:
            print(line, file=sys.stderr, flush=True)
