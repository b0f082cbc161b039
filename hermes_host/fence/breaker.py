"""The per-plugin circuit breaker of the fence (R-0.4).

After ``hooks.breaker.failures`` consecutive failures (timeout, error, invalid) a plugin is
skipped with a clear message until ``hooks.breaker.cooldown_seconds`` pass; then **one**
trial call decides: success closes the breaker, failure reopens it at once.  A trial is not
admitted while one of the plugin's earlier calls is still stuck in its worker (issue 13): the
trial would only queue behind the hang, or leak one more thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_host.config import BreakerSection
from hermes_host.fence.provenance import FAILURES, Fenced

__all__ = ["Breakers"]

log = logging.getLogger("hermes_host.fence")


@dataclass
class _Breaker:
    consecutive: int = 0
    opened_at: float | None = None
    trial: bool = False
    calls: int = 0
    failures: int = 0
    last_error: str | None = None


class Breakers:
    """One breaker per plugin; thread-safe.  ``clock`` is monotonic seconds (injectable)."""

    def __init__(self, settings: BreakerSection, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._clock = clock
        self._breakers: dict[str, _Breaker] = {}
        self.lock = threading.Lock()

    def after_fork(self) -> None:
        """A lock copied by ``fork`` may be held by a thread that does not exist any more."""
        self.lock = threading.Lock()

    def _get(self, plugin: str) -> _Breaker:
        b = self._breakers.get(plugin)
        if b is None:
            b = self._breakers[plugin] = _Breaker()
        return b

    def admit(self, plugin: str, stuck: int = 0) -> str | None:
        """None when ``plugin`` may be called now, else the refusal message.  ``stuck`` is the
        number of the plugin's timed-out calls still running."""
        known = self._breakers.get(plugin)
        if known is None or known.opened_at is None:  # closed: the common case, no lock
            return None
        with self.lock:
            b = self._get(plugin)
            if b.opened_at is None:
                return None
            head = (
                f"plugin {plugin!r} skipped: circuit breaker open after {b.consecutive} "
                f"consecutive failures (last: {b.last_error})"
            )
            remaining = b.opened_at + self._settings.cooldown_seconds - self._clock()
            if remaining > 0:
                return f"{head}; next trial call in {remaining:.1f}s"
            if b.trial:
                return f"{head}; a trial call is in progress"
            if stuck:
                return (
                    f"{head}; no trial call while {stuck} of its earlier calls "
                    f"{'is' if stuck == 1 else 'are'} still running"
                )
            b.trial = True
            return None

    def release_trial(self, plugin: str) -> None:
        """The admitted call never ran (the host refused it): the next one may be the trial."""
        with self.lock:
            self._get(plugin).trial = False

    def record(self, plugin: str, fenced: Fenced[Any]) -> None:
        opened: tuple[int, str | None] | None = None
        with self.lock:
            b = self._get(plugin)
            b.calls += 1
            if fenced.provenance in FAILURES:
                b.failures += 1
                b.consecutive += 1
                b.last_error = fenced.error or f"{fenced.hook}: {fenced.provenance.value}"
                if b.trial or b.consecutive >= self._settings.failures:
                    if b.opened_at is None or b.trial:
                        opened = (b.consecutive, b.last_error)
                    b.opened_at = self._clock()
            else:
                b.consecutive = 0
                b.opened_at = None
            b.trial = False
        if opened is not None:
            log.warning(
                "plugin %r circuit breaker opened after %d consecutive failures (last: %s); "
                "its calls are skipped for %gs",
                plugin, opened[0], opened[1], self._settings.cooldown_seconds,
            )

    def state(self) -> dict[str, dict[str, Any]]:
        """Per plugin: ``state`` (closed / open / half_open), counters, last error and the
        seconds until an open breaker allows a trial call."""
        now = self._clock()
        cooldown = self._settings.cooldown_seconds
        out: dict[str, dict[str, Any]] = {}
        with self.lock:
            for name, b in sorted(self._breakers.items()):
                if b.opened_at is None:
                    state, retry_in = "closed", None
                elif b.trial:
                    state, retry_in = "half_open", None
                else:
                    retry_in = max(0.0, b.opened_at + cooldown - now)
                    state = "open" if retry_in > 0 else "half_open"
                out[name] = {
                    "state": state,
                    "consecutive_failures": b.consecutive,
                    "calls": b.calls,
                    "failures": b.failures,
                    "last_error": b.last_error,
                    "retry_in_seconds": retry_in,
                }
        return out
