"""Provenance stamps and health counts: how each fenced call ended, per plugin and hook.

A :class:`Fenced` stamp is final (frozen); :class:`HealthLog` counts stamps per (plugin,
hook) with the last problem, for ``doctor``, ``/status``, ``replay`` and ``chat``.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

__all__ = ["FAILURES", "Fenced", "HealthLog", "HookHealth", "Provenance"]

T = TypeVar("T")


class Provenance(enum.StrEnum):
    """How a fenced call ended.  Only ``OK`` results may be adopted."""

    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"  # the plugin raised, or the host refused to call it (see error_type)
    INVALID = "invalid"
    BREAKER_OPEN = "breaker_open"
    NONE = "none"  # the plugin returned None ("not mine / unchanged") or lacks the hook


FAILURES = frozenset({Provenance.TIMEOUT, Provenance.ERROR, Provenance.INVALID})


@dataclass(frozen=True)
class Fenced(Generic[T]):
    """The stamped outcome of one fenced call.  Immutable: a stamp is final."""

    plugin: str
    hook: str
    provenance: Provenance
    value: T | None
    error: str | None
    duration: float
    error_type: str | None = None
    """Why it was not adopted, for traces and counters: the plugin's exception class
    (``ValueError``), ``TimeoutError``, ``InvalidResult``, ``BreakerOpen``, or a host-side
    refusal (``PoolExhausted``, ``UnknownPlugin``, ``UnknownHook``); ``None`` otherwise."""

    @property
    def adopted(self) -> bool:
        """True when the host may use ``value``."""
        return self.provenance is Provenance.OK

    def trace_line(self) -> str:
        """The ``$HERMES_HOST_TRACE_PLUGINS`` line of this call."""
        line = (
            f"[hermes-host trace] plugin={self.plugin} hook={self.hook} "
            f"{self.duration * 1000:.2f}ms provenance={self.provenance.value}"
        )
        if self.error_type:
            line += f" error={self.error_type}"
        if self.error:
            line += f" message={self.error}"
        return line

    @property
    def failed(self) -> bool:
        """True for timeout, error, invalid and breaker_open (not for a ``None`` answer)."""
        return self.provenance in FAILURES or self.provenance is Provenance.BREAKER_OPEN


# --- health: what went wrong, per plugin and hook -----------------------------------------


@dataclass
class HookHealth:
    """Counts of one plugin's calls of one hook, and its last problem."""

    plugin: str
    hook: str
    calls: int = 0
    ok: int = 0
    none: int = 0
    errors: int = 0
    timeouts: int = 0
    invalid: int = 0
    skipped: int = 0
    """Calls refused by an open circuit breaker."""
    last_error: str | None = None
    """The message of the last problem (redacted, bounded), e.g. ``plugin 'x' hook 'compress'
    raised ValueError: …``; a breaker skip does not replace the failure before it."""
    last_error_type: str | None = None
    breaker: str | None = None
    """The plugin's breaker (``closed`` / ``open`` / ``half_open``) when the report was made;
    ``None`` when it has never been called through the pool."""

    @property
    def problems(self) -> int:
        """Errors, timeouts, invalid answers and breaker skips."""
        return self.errors + self.timeouts + self.invalid + self.skipped

    def describe(self) -> str:
        """One line: ``engine.hook: 2 errors, 1 timeout of 5 calls (breaker open) — last: …``."""
        parts = [
            f"{n} {word}{'' if n == 1 else 's'}"
            for n, word in (
                (self.errors, "error"),
                (self.timeouts, "timeout"),
                (self.invalid, "invalid answer"),
                (self.skipped, "breaker skip"),
            )
            if n
        ]
        line = f"{self.plugin}.{self.hook}: {', '.join(parts) or 'no problems'} of "
        line += f"{self.calls} call{'' if self.calls == 1 else 's'}"
        if self.breaker and self.breaker != "closed":
            line += f" (breaker {self.breaker})"
        if self.last_error:
            line += f" — last: {self.last_error}"
        return line

    def as_dict(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "hook": self.hook,
            "calls": self.calls,
            "ok": self.ok,
            "none": self.none,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "invalid": self.invalid,
            "skipped": self.skipped,
            "problems": self.problems,
            "last_error": self.last_error,
            "last_error_type": self.last_error_type,
            "breaker": self.breaker,
        }


_COUNTERS = {
    Provenance.OK: "ok",
    Provenance.NONE: "none",
    Provenance.ERROR: "errors",
    Provenance.TIMEOUT: "timeouts",
    Provenance.INVALID: "invalid",
    Provenance.BREAKER_OPEN: "skipped",
}


class HealthLog:
    """Stamps counted per (plugin, hook); thread-safe.  See :meth:`HookRunner.recording`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], HookHealth] = {}

    def add(self, fenced: Fenced[Any]) -> None:
        key = (fenced.plugin, fenced.hook)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = HookHealth(fenced.plugin, fenced.hook)
            row.calls += 1
            name = _COUNTERS[fenced.provenance]
            setattr(row, name, getattr(row, name) + 1)
            # A breaker skip says only "skipped"; the failure that opened it says why.
            skip = fenced.provenance is Provenance.BREAKER_OPEN
            if fenced.failed and not (skip and row.last_error):
                row.last_error = fenced.error
                row.last_error_type = fenced.error_type

    def rows(self) -> list[HookHealth]:
        """A copy of every row, by plugin then hook."""
        with self._lock:
            return [replace(row) for _, row in sorted(self._rows.items())]

    def problems(self) -> list[HookHealth]:
        """The rows with at least one problem."""
        return [row for row in self.rows() if row.problems]
