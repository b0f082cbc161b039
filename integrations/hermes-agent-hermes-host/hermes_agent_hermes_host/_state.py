"""What every part of :class:`~.engine.HermesHostEngine` shares: its name, its logger, the
one-line wording of an exception, and the state the parts read and write."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_host.host import ContextHost, Session

__all__ = ["ENGINE_NAME"]

ENGINE_NAME = "hermes_host"
"""The ``context.engine`` value that selects this engine in Hermes' config.yaml."""

logger = logging.getLogger("hermes_agent_hermes_host")


class _EngineState:
    """The attributes :class:`~.engine.HermesHostEngine` sets in ``__init__``, declared once
    for the parts (sessions, history, tools, status) that use them."""

    _config_arg: Any
    _store_arg: Any
    _extra: dict[str, object]
    _warn_fn: Callable[[str], None] | None
    _host: ContextHost | None
    _session: Session | None
    _hermes_session_id: str | None
    _session_db: Any
    _lock: threading.RLock
    _problems_seen: dict[tuple[str, str], int]
    _warned: set[str]
    _last_decision_reason: str | None
    _disabled_reason: str | None
    last_report: dict[str, Any] | None
    compression_count: int

    if TYPE_CHECKING:

        def _open_host(self, hermes_home: str | None) -> ContextHost: ...

        def _warn(self, text: str) -> None: ...

        def sync(self, messages: Sequence[Mapping[str, Any]] | None) -> int: ...

        def get_status(self) -> dict[str, Any]: ...  # ContextEngine's, then _Status's

        def on_session_reset(self) -> None: ...  # ContextEngine's, then _Sessions'


def _short(exc: BaseException, limit: int = 400) -> str:
    """The exception on one line (a ConfigError's details are on the lines after its
    first), cut at ``limit`` characters."""
    text = "; ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}".rstrip(": ")
