"""The hook runner: the only way the host calls a plugin (R-0.4, R-10.2, R-14.9).

:class:`HookRunner` calls *one* plugin's implementation at a time: snapshot
(:mod:`~hermes_host.fence.snapshot`), run it isolated — on a daemon thread
(:mod:`~hermes_host.fence.workers`) or in a worker process
(:mod:`~hermes_host.fence.isolation`), per engine — wait at most the hook's timeout, turn
what came back into the host's own validated copy (:mod:`~hermes_host.fence.adopt`), stamp
it (:mod:`~hermes_host.fence.provenance`) and account for it in the plugin's breaker
(:mod:`~hermes_host.fence.breaker`).  Composition of several calls is in
:mod:`~hermes_host.fence.compose`, stamping and the health/breaker/pool state in
:mod:`~hermes_host.fence.accounts`, the in-flight call record in
:mod:`~hermes_host.fence.started`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import pluggy
from pydantic import BaseModel

from hermes_host.config import FenceSection, HooksSection
from hermes_host.fence import adopt
from hermes_host.fence.accounts import Accounts
from hermes_host.fence.breaker import Breakers
from hermes_host.fence.compose import Composition
from hermes_host.fence.errors import traceback_text
from hermes_host.fence.isolation import Outcome, ProcessPool, recipe_for
from hermes_host.fence.provenance import Fenced, HealthLog, Provenance
from hermes_host.fence.snapshot import snapshot
from hermes_host.fence.started import _Started, log
from hermes_host.fence.workers import Job, PoolRefused, WorkerPool, wait
from hermes_host.hookspecs import DEFAULT_TIMEOUTS
from hermes_host.plugins import trace_enabled

__all__ = ["FALLBACK_TIMEOUT", "HookRunner"]

_MOVED = (_Started, log)  # still importable from here: moved to fence/started.py

FALLBACK_TIMEOUT = 5.0
"""Seconds for a hook that has no entry in ``DEFAULT_TIMEOUTS`` (a third-party hookspec)."""

PROCESS_GRACE = 1.0
"""Process mode: how long past the deadline the caller waits for the thread that kills the
worker (the kill itself happens at the deadline; this only bounds a host bug)."""

WARM_UP_SECONDS = 30.0
"""How long building a runner waits for the worker processes it starts to be ready."""

FenceSettings = FenceSection | Callable[[str], FenceSection]


class HookRunner(Composition, Accounts):
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

    def implements(self, plugin: str, hook: str) -> bool:
        """Whether ``plugin`` is registered and has an implementation of ``hook`` (a caller
        can skip building a request nobody will answer)."""
        caller = getattr(self._pm.hook, hook, None)
        target = self._pm.get_plugin(plugin)
        if target is None or not isinstance(caller, pluggy.HookCaller):
            return False
        return any(impl.plugin is target for impl in caller.get_hookimpls())

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
        refusal = self._breakers.admit(plugin, self._pool.stuck(plugin), hook)
        if refusal is not None:
            return self._refuse(started, Provenance.BREAKER_OPEN, refusal, "BreakerOpen")

        settings = self.fence_for(plugin)
        started.cap = settings.max_result_bytes
        started.deadline = started.start + timeout
        started.firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
        if settings.isolation == "process":
            pool = self._process_pool(plugin)
            if isinstance(pool, str):
                self._breakers.release_trial(plugin, hook)
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
            self._breakers.release_trial(plugin, hook)
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
