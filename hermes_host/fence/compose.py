"""Composition of fenced calls: firstresult, the ``select_context`` chain, broadcast.

The two fail policies fixed by the hook contracts live here: "a failed link is no answer"
(:meth:`Composition.first_result`) and "a failed link leaves the messages as they were"
(:meth:`Composition.chain`).  Mixed into :class:`~hermes_host.fence.runner.HookRunner`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from hermes_host.fence.provenance import Fenced
from hermes_host.fence.started import _Started
from hermes_host.models import SelectRequest, SelectResult


class Composition:
    """``first_result``, ``chain`` and ``broadcast`` over one runner's single calls."""

    if TYPE_CHECKING:

        def call(
            self, plugin: str, hook: str, request: BaseModel, *, timeout: float | None = None
        ) -> Fenced[Any]: ...

        def _start(
            self, plugin: str, hook: str, request: BaseModel, timeout: float | None
        ) -> _Started: ...

        def _finish(self, started: _Started) -> Fenced[Any]: ...

    def first_result(
        self,
        hook: str,
        plugins: Sequence[str],
        request: BaseModel,
        *,
        timeout: float | None = None,
    ) -> tuple[Any | None, list[Fenced[Any]]]:
        """Ask ``plugins`` in order; the first adopted answer wins (firstresult semantics).

        ``None``, a timeout, an error, an invalid answer or an open breaker all count as "no
        answer" and the next plugin is asked.  Returns (value or None, every stamp).
        """
        stamps: list[Fenced[Any]] = []
        for plugin in plugins:
            fenced = self.call(plugin, hook, request, timeout=timeout)
            stamps.append(fenced)
            if fenced.adopted:
                return fenced.value, stamps
        return None, stamps

    def chain(
        self,
        hook: str,
        plugins: Sequence[str],
        request: SelectRequest,
        *,
        timeout: float | None = None,
        states: Mapping[str, dict[str, Any]] | None = None,
    ) -> tuple[SelectResult | None, list[Fenced[Any]]]:
        """Compose ``select_context`` engines: each adopted result's messages become the next
        request's messages.  A failed or ``None`` link leaves the messages as they were (fail
        open).  Returns the last adopted result (its messages are the chain's output) or None
        when no link was adopted, and every stamp.

        ``states`` gives each engine its own persisted ``state`` (by plugin name); without it
        every link sees ``request.state``.
        """
        current = request
        last: SelectResult | None = None
        stamps: list[Fenced[Any]] = []
        for plugin in plugins:
            if last is not None and current.messages is not last.messages:
                current = current.model_copy(update={"messages": last.messages})
            link = current
            if states is not None:
                link = current.model_copy(update={"state": dict(states.get(plugin) or {})})
            fenced = self.call(plugin, hook, link, timeout=timeout)
            stamps.append(fenced)
            if fenced.adopted and isinstance(fenced.value, SelectResult):
                last = fenced.value
        return last, stamps

    def broadcast(
        self,
        hook: str,
        plugins: Sequence[str],
        request: BaseModel,
        *,
        timeout: float | None = None,
    ) -> list[Fenced[Any]]:
        """Call every plugin (memory providers), each fenced on its own and all at once: a
        slow or failing provider delays the others by nothing and hides none of them.
        Stamps come back in ``plugins`` order."""
        started = [self._start(plugin, hook, request, timeout) for plugin in plugins]
        return [self._finish(item) for item in started]
