"""What a :class:`~hermes_host.session.Session` uses of the host that opened it.

:class:`~hermes_host.host.ContextHost` satisfies it; typing a session's ``host`` with this
protocol instead of the class keeps ``hermes_host.session`` from importing ``hermes_host.host``
back (the host imports the session to open one: one direction only, issue 32).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from hermes_host.config import HermesConfig
from hermes_host.fence import Fenced, HookRunner
from hermes_host.models import CompactionReceipt
from hermes_host.plugins import LoadedPlugins
from hermes_host.store import StateStore
from hermes_host.tokens import TokenCounter

if TYPE_CHECKING:
    from hermes_host.session import Session

__all__ = ["HostView"]


class HostView(Protocol):
    """The host as its sessions see it: config, store, counter, fence, engine names."""

    config: HermesConfig
    store: StateStore
    plugins: LoadedPlugins
    runner: HookRunner
    tokens: TokenCounter

    def chain(self, hook: str) -> list[str]: ...

    @property
    def providers(self) -> list[str]: ...

    def engine_health(self) -> list[dict[str, Any]]: ...

    def open_session(
        self,
        title: str | None = None,
        system_prompt: str = "",
        *,
        user_id: str | None = None,
        cwd: str | None = None,
        source: str | None = "hermes-host",
        session_id: str | None = None,
    ) -> Session: ...

    def _broadcast(
        self, hook: str, request: Any, timeout: float | None = None
    ) -> list[Fenced[Any]]: ...

    def _post_compress(self, receipt: CompactionReceipt) -> list[Fenced[Any]]: ...
