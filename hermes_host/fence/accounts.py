"""What a runner keeps about its calls: the stamp of each outcome, the breakers' and pools'
state, health counts, recordings and the per-call trace.  Mixed into
:class:`~hermes_host.fence.runner.HookRunner`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TextIO

from hermes_host.fence.breaker import Breakers
from hermes_host.fence.isolation import ProcessPool
from hermes_host.fence.provenance import Fenced, HealthLog, HookHealth, Provenance
from hermes_host.fence.started import _Started, log
from hermes_host.fence.workers import WorkerPool
from hermes_host.redact import redact


class Accounts:
    """Stamping, health, breaker and pool state of a :class:`HookRunner`."""

    _breakers: Breakers
    _health: HealthLog
    _recorders: list[HealthLog]
    _recorders_lock: threading.Lock
    _pool: WorkerPool
    _processes: dict[str, ProcessPool | str]
    _processes_lock: threading.Lock
    _timer: Any
    _trace: bool
    _trace_stream: TextIO | None

    def breaker_state(self) -> dict[str, dict[str, Any]]:
        """Per plugin: ``state`` (closed / open / half_open), counters, last error and the
        seconds until an open breaker allows a trial call, summed up over its hooks, and
        ``hooks``: the same per hook (each hook has its own breaker) — for ``doctor`` and
        ``/status``."""
        return self._breakers.state()

    def health(self) -> list[HookHealth]:
        """Every plugin and hook called so far: counts, the last problem and the plugin's
        breaker state.  ``[row for row in runner.health() if row.problems]`` is what went
        wrong."""
        return self.with_breakers(self._health.rows())

    @contextmanager
    def recording(self) -> Iterator[HealthLog]:
        """Count the stamps made while the block runs (from any thread of this runner)::

            with runner.recording() as seen:
                session.end_turn()
            for row in runner.with_breakers(seen.problems()): ...
        """
        log_ = HealthLog()
        with self._recorders_lock:
            self._recorders = [*self._recorders, log_]
        try:
            yield log_
        finally:
            with self._recorders_lock:
                self._recorders = [r for r in self._recorders if r is not log_]

    def with_breakers(self, rows: Sequence[HookHealth]) -> list[HookHealth]:
        """``rows`` with the current state of each row's breaker (its plugin and hook)."""
        states = {(name, hook): h["state"] for name, b in self.breaker_state().items()
                  for hook, h in b["hooks"].items()}
        return [replace(row, breaker=states.get((row.plugin, row.hook))) for row in rows]

    def pool_state(self) -> dict[str, Any]:
        """Worker threads, idle ones, leaked ones (in all and per plugin), the per-plugin leak
        cap, and each process-isolated plugin's idle and busy worker processes."""
        state = self._pool.state()
        with self._processes_lock:
            pools = dict(self._processes)
        state["processes"] = {
            name: pool.state() for name, pool in pools.items() if isinstance(pool, ProcessPool)
        }
        return state

    def _stamp(
        self,
        started: _Started,
        provenance: Provenance,
        value: Any,
        error: str | None,
        error_type: str | None,
        *,
        account: bool = True,
        logged: str | None = None,
    ) -> Fenced[Any]:
        if error is not None:
            error = redact(error)  # what the plugin said was also cleared of request text
        fenced: Fenced[Any] = Fenced(
            plugin=started.plugin,
            hook=started.hook,
            provenance=provenance,
            value=value,
            error=error,
            duration=self._timer() - started.start,
            error_type=error_type,
        )
        if account and started.job is not None:
            self._breakers.record(started.plugin, fenced)
        self._health.add(fenced)
        for recorder in self._recorders:  # a copy-on-write list: no lock needed to read it
            recorder.add(fenced)
        if fenced.failed:
            if provenance is Provenance.BREAKER_OPEN:
                log.debug("%s", error)
            elif logged is not None:
                log.warning("%s\n%s", error, logged)
            else:
                log.warning("%s", error)
        if self._trace:
            self._write_trace(fenced)
        return fenced

    def _write_trace(self, fenced: Fenced[Any]) -> None:
        stream = self._trace_stream or sys.stderr
        try:
            stream.write(fenced.trace_line() + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed stderr must not break a call
            pass
