"""The circuit breakers of the fence (R-0.4): one per plugin and hook.

After ``hooks.breaker.failures`` consecutive failures (timeout, error, invalid) of one hook, a
plugin's calls of that hook are skipped with a clear message until
``hooks.breaker.cooldown_seconds`` pass; then **one** trial call decides: success closes the
breaker, failure reopens it at once.  Each hook has its own breaker (issue 30): an engine
whose ``should_compress`` keeps failing still has its ``select_context`` called, and a
breaker's "last error" is always one of its own hook's.  A trial is not
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
    failed_at: int = 0
    """Order of the last failure among all breakers (the plugin summary's "last error")."""


class Breakers:
    """One breaker per plugin and hook; thread-safe.  ``clock`` is monotonic seconds
    (injectable)."""

    def __init__(self, settings: BreakerSection, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._clock = clock
        self._breakers: dict[tuple[str, str], _Breaker] = {}
        self._failures_seen = 0
        self.lock = threading.Lock()

    def after_fork(self) -> None:
        """A lock copied by ``fork`` may be held by a thread that does not exist any more."""
        self.lock = threading.Lock()

    def _get(self, plugin: str, hook: str) -> _Breaker:
        b = self._breakers.get((plugin, hook))
        if b is None:
            b = self._breakers[(plugin, hook)] = _Breaker()
        return b

    def admit(self, plugin: str, stuck: int = 0, hook: str = "") -> str | None:
        """None when ``plugin``'s ``hook`` may be called now, else the refusal message.
        ``stuck`` is the number of the plugin's timed-out calls still running."""
        known = self._breakers.get((plugin, hook))
        if known is None or known.opened_at is None:  # closed: the common case, no lock
            return None
        with self.lock:
            b = self._get(plugin, hook)
            if b.opened_at is None:
                return None
            head = (
                f"plugin {plugin!r} hook {hook!r} skipped: circuit breaker open after "
                f"{b.consecutive} consecutive failures (last: {b.last_error})"
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

    def release_trial(self, plugin: str, hook: str = "") -> None:
        """The admitted call never ran (the host refused it): the next one may be the trial."""
        with self.lock:
            self._get(plugin, hook).trial = False

    def record(self, plugin: str, fenced: Fenced[Any]) -> None:
        """Count a call of ``fenced.hook`` that ran (its breaker's success or failure)."""
        opened: tuple[int, str | None] | None = None
        with self.lock:
            b = self._get(plugin, fenced.hook)
            b.calls += 1
            if fenced.provenance in FAILURES:
                b.failures += 1
                b.consecutive += 1
                self._failures_seen += 1
                b.failed_at = self._failures_seen
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
                "plugin %r hook %r circuit breaker opened after %d consecutive failures "
                "(last: %s); its calls of that hook are skipped for %gs",
                plugin, fenced.hook, opened[0], opened[1], self._settings.cooldown_seconds,
            )

    def state(self) -> dict[str, dict[str, Any]]:
        """Per plugin: ``hooks``, each hook's breaker — ``state`` (closed / open /
        half_open), counters, last error and the seconds until an open breaker allows a
        trial call — and the same keys summed up over its hooks: the worst state, the most
        consecutive failures, calls and failures added, the newest last error, the soonest
        trial."""
        now = self._clock()
        cooldown = self._settings.cooldown_seconds
        hooks: dict[str, dict[str, dict[str, Any]]] = {}
        with self.lock:
            for (plugin, hook), b in sorted(self._breakers.items()):
                if b.opened_at is None:
                    state, retry_in = "closed", None
                elif b.trial:
                    state, retry_in = "half_open", None
                else:
                    retry_in = max(0.0, b.opened_at + cooldown - now)
                    state = "open" if retry_in > 0 else "half_open"
                hooks.setdefault(plugin, {})[hook] = {
                    "state": state,
                    "consecutive_failures": b.consecutive,
                    "calls": b.calls,
                    "failures": b.failures,
                    "last_error": b.last_error,
                    "retry_in_seconds": retry_in,
                }
        order = {"closed": 0, "half_open": 1, "open": 2}
        out: dict[str, dict[str, Any]] = {}
        for plugin, rows in hooks.items():
            values = list(rows.values())
            last = max(rows.items(), key=lambda kv: self._failed_at(plugin, kv[0]))[1]
            retries = [v["retry_in_seconds"] for v in values if v["retry_in_seconds"] is not None]
            out[plugin] = {
                "state": max((v["state"] for v in values), key=order.__getitem__),
                "consecutive_failures": max(v["consecutive_failures"] for v in values),
                "calls": sum(v["calls"] for v in values),
                "failures": sum(v["failures"] for v in values),
                "last_error": last["last_error"],
                "retry_in_seconds": min(retries) if retries else None,
                "hooks": rows,
            }
        return out

    def _failed_at(self, plugin: str, hook: str) -> int:
        b = self._breakers.get((plugin, hook))
        return b.failed_at if b is not None else 0
