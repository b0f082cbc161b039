"""The hook runner: the only way the host calls a plugin (R-0.4, R-10.2, R-14.9).

:class:`HookRunner` calls *one* plugin's implementation at a time: snapshot
(:mod:`~hermes_host.fence.snapshot`), run it isolated — on a daemon thread
(:mod:`~hermes_host.fence.workers`) or in a worker process
(:mod:`~hermes_host.fence.isolation`), per engine — wait at most the hook's timeout, turn
what came back into the host's own validated copy (:mod:`~hermes_host.fence.adopt`), stamp
it (:mod:`~hermes_host.fence.provenance`) and account for it in the plugin's breaker
(:mod:`~hermes_host.fence.breaker`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TextIO

import pluggy
from pydantic import BaseModel

from hermes_host.config import FenceSection, HooksSection
from hermes_host.fence import adopt
from hermes_host.fence.breaker import Breakers
from hermes_host.fence.errors import traceback_text
from hermes_host.fence.isolation import Outcome, ProcessPool, recipe_for
from hermes_host.fence.provenance import Fenced, HealthLog, HookHealth, Provenance
from hermes_host.fence.snapshot import snapshot
from hermes_host.fence.workers import Job, PoolRefused, WorkerPool, wait
from hermes_host.hookspecs import DEFAULT_TIMEOUTS
from hermes_host.models import SelectRequest, SelectResult
from hermes_host.plugins import trace_enabled
from hermes_host.redact import redact

__all__ = ["FALLBACK_TIMEOUT", "HookRunner"]

log = logging.getLogger("hermes_host.fence")
"""Problems of fenced calls, at WARNING (tracebacks included)."""

FALLBACK_TIMEOUT = 5.0
"""Seconds for a hook that has no entry in ``DEFAULT_TIMEOUTS`` (a third-party hookspec)."""

PROCESS_GRACE = 1.0
"""Process mode: how long past the deadline the caller waits for the thread that kills the
worker (the kill itself happens at the deadline; this only bounds a host bug)."""

WARM_UP_SECONDS = 30.0
"""How long building a runner waits for the worker processes it starts to be ready."""

FenceSettings = FenceSection | Callable[[str], FenceSection]


@dataclass
class _Started:
    """A call that is running (or already finished without running: ``outcome`` is set)."""

    plugin: str
    hook: str
    request: BaseModel
    start: float
    deadline: float = 0.0
    timeout: float = 0.0
    firstresult: bool = True
    process: bool = False
    cap: int = 0
    job: Job | None = None
    outcome: Fenced[Any] | None = None


class HookRunner:
    """Calls one plugin's hook implementation inside the fence (see :mod:`hermes_host.fence`).

    ``pm`` is a ``pluggy.PluginManager`` whose plugins are registered by name (the entry-point
    name, e.g. ``compressor``).  ``hooks`` supplies timeouts, breaker settings and the leaked
    worker cap; ``fence`` the isolation settings — one :class:`~hermes_host.config.FenceSection`
    for every plugin, or a function of the plugin's name (``HermesConfig.fence_for``);
    ``factories`` maps a plugin name to the ``(class, options)`` it was built from, so a worker
    process can build its own (without it the instance itself is pickled).  ``clock``
    (seconds, monotonic) drives the breaker, ``timer`` the deadlines; both are injectable for
    tests.  ``trace`` overrides ``$HERMES_HOST_TRACE_PLUGINS`` (read once, here).
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        hooks: HooksSection | None = None,
        *,
        fence: FenceSettings | None = None,
        factories: Mapping[str, tuple[Any, dict[str, Any] | None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[], float] = time.perf_counter,
        trace: bool | None = None,
        trace_stream: TextIO | None = None,
    ) -> None:
        self._pm = pm
        self._hooks = hooks if hooks is not None else HooksSection()
        self._fence: FenceSettings = fence if fence is not None else FenceSection()
        self._factories = dict(factories or {})
        self._timer = timer
        if trace is None:
            trace = trace_enabled()
        self._trace = trace
        self._trace_stream = trace_stream
        self._pool = WorkerPool(self._hooks.max_leaked_workers)
        self._processes: dict[str, ProcessPool | str] = {}
        self._processes_lock = threading.Lock()
        self._breakers = Breakers(self._hooks.breaker, clock)
        self._health = HealthLog()
        self._recorders: list[HealthLog] = []
        self._recorders_lock = threading.Lock()
        self._pid = os.getpid()
        self._timeouts = {
            name: self._hooks.timeout(name) for name in {*DEFAULT_TIMEOUTS, *self._hooks.timeouts}
        }
        started = [
            self._process_pool(name)  # started now, all at once: warm by the first call
            for name, plugin in pm.list_name_plugin()
            if plugin is not None and self.fence_for(name).isolation == "process"
        ]
        for pool in started:
            if isinstance(pool, ProcessPool):
                pool.wait_ready(WARM_UP_SECONDS, timer)

    # -- public API ------------------------------------------------------------------------

    def timeout_for(self, hook: str) -> float:
        """The configured time limit of ``hook`` in seconds."""
        return self._timeouts.get(hook, FALLBACK_TIMEOUT)

    def fence_for(self, plugin: str) -> FenceSection:
        """The fence settings (isolation, result cap) that apply to ``plugin``."""
        return self._fence(plugin) if callable(self._fence) else self._fence

    def call(
        self, plugin: str, hook: str, request: BaseModel, *, timeout: float | None = None
    ) -> Fenced[Any]:
        """Call ``plugin``'s implementation of ``hook`` with a private snapshot of ``request``.

        Never raises for anything the plugin does; the outcome is in the returned stamp.
        Raises ``TypeError``/``ValueError`` only for a host bug (request not a pydantic model,
        non-positive timeout).
        """
        return self._finish(self._start(plugin, hook, request, timeout))

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
            link = current
            if states is not None:
                link = current.model_copy(update={"state": dict(states.get(plugin) or {})})
            fenced = self.call(plugin, hook, link, timeout=timeout)
            stamps.append(fenced)
            if fenced.adopted and isinstance(fenced.value, SelectResult):
                last = fenced.value
                current = current.model_copy(update={"messages": fenced.value.messages})
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

    def breaker_state(self) -> dict[str, dict[str, Any]]:
        """Per plugin: ``state`` (closed / open / half_open), counters, last error and the
        seconds until an open breaker allows a trial call — for ``doctor`` and ``/status``."""
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
        """``rows`` with each plugin's current breaker state filled in."""
        states = {name: b["state"] for name, b in self.breaker_state().items()}
        return [replace(row, breaker=states.get(row.plugin)) for row in rows]

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

    def close(self) -> None:
        """Stop the worker processes (threads are daemons and need nothing)."""
        with self._processes_lock:
            pools, self._processes = self._processes, {}
        for pool in pools.values():
            if isinstance(pool, ProcessPool):
                pool.close()

    # -- internals -------------------------------------------------------------------------

    def _process_pool(self, plugin: str) -> ProcessPool | str:
        """The plugin's worker processes (started on first need), or why there are none."""
        with self._processes_lock:
            pool = self._processes.get(plugin)
            if pool is None:
                target = self._pm.get_plugin(plugin)
                try:
                    recipe = recipe_for(target, self._factories.get(plugin))
                    pool = ProcessPool(plugin, recipe, self.fence_for(plugin))
                except (TypeError, OSError) as exc:
                    pool = f"process isolation unavailable: {exc}"
                    log.warning("plugin %r: %s", plugin, pool)
                self._processes[plugin] = pool
            return pool

    def _refuse(
        self, started: _Started, provenance: Provenance, error: str, error_type: str
    ) -> _Started:
        started.outcome = self._stamp(started, provenance, None, error, error_type, account=False)
        return started

    def _start(self, plugin: str, hook: str, request: BaseModel, timeout: float | None) -> _Started:
        if not isinstance(request, BaseModel):
            raise TypeError(f"request must be a pydantic model, not {type(request).__name__}")
        if os.getpid() != self._pid:
            self._after_fork()
        if timeout is None:
            timeout = self.timeout_for(hook)
        elif not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        started = _Started(plugin, hook, request, self._timer(), timeout=timeout)
        where = f"plugin {plugin!r} hook {hook!r}"

        caller = getattr(self._pm.hook, hook, None)
        if caller is None or not isinstance(caller, pluggy.HookCaller):
            return self._refuse(
                started, Provenance.ERROR, f"{where} not called: no such hook is declared",
                "UnknownHook",
            )
        target = self._pm.get_plugin(plugin)
        if target is None:
            names = ", ".join(sorted(n for n, p in self._pm.list_name_plugin() if p is not None))
            return self._refuse(
                started, Provenance.ERROR,
                f"{where} not called: no plugin of that name is registered "
                f"(registered: {names or 'none'})", "UnknownPlugin",
            )
        if not any(impl.plugin is target for impl in caller.get_hookimpls()):
            started.outcome = self._stamp(started, Provenance.NONE, None, None, None)
            return started
        refusal = self._breakers.admit(plugin, self._pool.stuck(plugin))
        if refusal is not None:
            return self._refuse(started, Provenance.BREAKER_OPEN, refusal, "BreakerOpen")

        settings = self.fence_for(plugin)
        started.cap = settings.max_result_bytes
        started.deadline = started.start + timeout
        started.firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
        if settings.isolation == "process":
            pool = self._process_pool(plugin)
            if isinstance(pool, str):
                self._breakers.release_trial(plugin)
                return self._refuse(
                    started, Provenance.ERROR, f"{where} not called: {pool}", "IsolationUnavailable"
                )
            started.process = True
            history = getattr(request, "history", None)
            deadline, timer = started.deadline, self._timer

            def run(request: BaseModel) -> Outcome:
                return pool.call(hook, request, history, deadline, timer)

            job = Job(run, request, plugin, self._checker(started))  # JSON: no snapshot needed
        else:
            others = [p for p in self._pm.get_plugins() if p is not target]
            one = self._pm.subset_hook_caller(hook, remove_plugins=others)
            shared = getattr(target, "read_only_messages", False) is True
            job = Job(one, snapshot(request, share_messages=shared), plugin,
                      self._checker(started))
        try:
            self._pool.submit(job)
        except PoolRefused as exc:
            self._breakers.release_trial(plugin)
            return self._refuse(
                started, Provenance.ERROR, f"{where} not called: {exc}", "PoolExhausted"
            )
        started.job = job
        return started

    def _checker(self, started: _Started) -> Callable[[Any], adopt.Verdict]:
        return adopt.checker(
            started.hook, started.request, process=started.process,
            firstresult=started.firstresult, cap=started.cap, deadline=started.deadline,
            timeout=started.timeout, timer=self._timer,
        )

    def _finish(self, started: _Started) -> Fenced[Any]:
        if started.outcome is not None:
            return started.outcome
        job = started.job
        assert job is not None
        request = started.request
        grace = PROCESS_GRACE if started.process else 0.0
        if not wait(job, self._pool, started.deadline + grace, self._timer):
            verdict = adopt.Verdict(
                Provenance.TIMEOUT, None,
                f"timed out after {started.timeout:g}s; its result, if any, will be discarded",
                "TimeoutError",
            )
        elif job.exc is not None:
            exc = job.exc
            try:
                text = str(exc)
            except Exception:  # an exception whose __str__ raises
                text = "<unprintable message>"
            verdict = adopt.raised(
                type(exc).__name__, text, request, traceback_text(exc, request)
            )
        elif isinstance(job.value, adopt.Verdict):
            verdict = job.value
        else:  # the check itself failed: a host bug, never the plugin's answer adopted
            verdict = adopt.Verdict(
                Provenance.INVALID, None, f"could not be checked ({job.check_error})",
                "InvalidResult",
            )
        error = verdict.error
        if error is not None:
            error = f"plugin {started.plugin!r} hook {started.hook!r} {error}"
        return self._stamp(
            started, verdict.provenance, verdict.value, error, verdict.error_type,
            logged=verdict.logged,
        )

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

    def _after_fork(self) -> None:
        """In a forked child the parent's worker threads do not exist, its worker processes
        are the parent's, and a lock may have been copied while held: start afresh (breaker
        counts are kept)."""
        self._pid = os.getpid()
        self._pool = WorkerPool(self._hooks.max_leaked_workers)
        self._processes = {}
        self._processes_lock = threading.Lock()
        self._recorders_lock = threading.Lock()
        self._breakers.after_fork()
