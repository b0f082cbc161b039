"""The ``status()`` of the framework integrations: always the documented keys (issue 30).

While hermes-host manages the conversation the status is :meth:`Session.status` plus
``error`` = ``None``.  When it does not — the last model call failed open (the model got the
framework's whole state) or the session cannot be read at all (its store is closed or
unreachable) — ``error`` says why, and the keys that cannot be known are ``None`` (dicts
``{}``, lists ``[]``), so code that reads ``status["window_tokens"]`` never raises
``KeyError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_host.redact import redact
from hermes_host.session import Session

__all__ = ["STATUS_KEYS", "failed_open", "integration_status"]

_EMPTY: dict[str, Any] = {
    "threshold": {}, "guards": {}, "normalised": {}, "engines": {}, "tokenizer": {},
    "lineage": [], "engine_problems": [], "memory_providers": [],
}

STATUS_KEYS = (
    "session_id", "conversation_id", "title", "model", "window_tokens", "context_length",
    "prompt_tokens", "context_used", "request_budget", "last_request_tokens", "request_bound",
    "summarizer_cooldown", "threshold_tokens", "threshold", "window_warning", "blocked",
    "messages", "compression_count", "lineage", "guards", "normalised", "cache_violations",
    "engines", "memory_providers", "engine_problems", "tokenizer", "error",
)
"""The keys of an integration's ``status()``, every one always present."""


def failed_open(exc: BaseException, what: str = "the model got the whole state") -> str:
    """The ``error`` of a call that failed open: what happened instead, and the cause
    (redacted)."""
    return redact(f"hermes-host failed at the last model call, so {what}: "
                  f"{type(exc).__name__}: {exc}")


def integration_status(
    read: Callable[[], Session], error: str | None, conversation_id: str | None = None
) -> dict[str, Any]:
    """The status of the session ``read`` returns, with ``error`` (``None`` while
    hermes-host works); every key of :data:`STATUS_KEYS` even when ``read`` or the session's
    status fails."""
    try:
        full = dict(read().status())
    except Exception as exc:
        status: dict[str, Any] = {key: _EMPTY.get(key) for key in STATUS_KEYS}
        status["conversation_id"] = conversation_id
        status["error"] = redact(f"hermes-host cannot read this conversation: "
                                 f"{type(exc).__name__}: {exc}")
        return status
    status = {key: full.get(key, _EMPTY.get(key)) for key in STATUS_KEYS}
    status.update({k: v for k, v in full.items() if k not in status})
    status["error"] = redact(error) if error else None
    return status
