"""Thread isolation: pooled daemon worker threads, a bounded wait, leaks counted per plugin.

A call runs on a daemon worker thread and the caller waits at most until its deadline.  A
worker still running after that is *leaked*: counted against **its plugin**, and its late
result discarded.  When ``hooks.max_leaked_workers`` workers of one plugin are stuck, that
plugin's further calls are refused at once; other plugins are not affected (issue 13: one
hung ``select_context`` must not starve the compressor).  Daemon workers never block
interpreter exit — unlike ``ThreadPoolExecutor``, whose workers are joined at exit.

What a thread cannot do: stop a plugin.  A plugin that holds the GIL (a catastrophic regex,
a C extension loop) stalls every thread of the process, the caller included, until it lets
go; ``fence.isolation: process`` (:mod:`hermes_host.fence.isolation`) is the answer to that.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

__all__ = ["IDLE_SECONDS", "Job", "PoolRefused", "WorkerPool", "wait"]

MAX_BUSY_WORKERS = 64  # concurrent calls that are still within their timeout, all plugins
MAX_IDLE_WORKERS = 8  # idle threads kept warm; extra ones exit
IDLE_SECONDS = 30.0  # an idle worker exits after this long, so dropped runners free threads

PENDING, DONE, ABANDONED = 0, 1, 2
_worker_numbers = itertools.count(1)  # unique thread names across runners


class Job:
    """One call's private rendezvous between the waiting caller and a worker."""

    __slots__ = (
        "caller", "check", "check_error", "done", "exc", "plugin", "request", "state",
        "state_lock", "value",
    )

    def __init__(
        self,
        caller: Callable[..., Any],
        request: BaseModel,
        plugin: str = "",
        check: Callable[[Any], Any] | None = None,
    ) -> None:
        self.caller = caller
        self.check = check
        """Run on the worker with the plugin's answer (the host's own work on it, within the
        caller's wait); its return value becomes ``value``."""
        self.check_error: str | None = None
        self.plugin = plugin
        self.request: BaseModel | None = request
        self.state_lock = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker once a result is stored
        self.state = PENDING
        self.value: Any = None
        self.exc: BaseException | None = None


class PoolRefused(Exception):
    """The pool will not start another call (too many leaked or busy workers)."""


class _Worker(threading.Thread):
    def __init__(self, pool: WorkerPool) -> None:
        super().__init__(name=f"hermes-fence-{next(_worker_numbers)}", daemon=True)
        self.pool = pool
        self.inbox: queue.SimpleQueue[Job] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                job = self.inbox.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self.pool.retire(self):
                    return
                continue  # claimed by a caller in the meantime: its job is on the way
            value: Any = None
            exc: BaseException | None = None
            try:
                value = job.caller(request=job.request)
            except BaseException as error:  # a plugin may raise anything, even SystemExit
                exc = error
            if exc is None and job.check is not None:
                try:
                    value = job.check(value)
                except Exception as error:  # a host bug: reported, never adopted
                    job.check_error = f"{type(error).__name__}: {error}"[:300]
                    value = None
            with job.state_lock:
                abandoned = job.state == ABANDONED
                if not abandoned:
                    job.state = DONE
                    job.value = value
                    job.exc = exc
            job.request = None
            keep = self.pool.release(self, job.plugin if abandoned else None)
            # Wake the caller last: it needs the GIL, so bookkeeping done after this line
            # would make it wait for a second thread switch.
            if not abandoned:
                job.done.release()
            del job, value, exc
            if not keep:
                return


class WorkerPool:
    """Daemon worker threads, created on demand, reused, and counted per plugin when leaked."""

    def __init__(self, max_leaked: int) -> None:
        self.max_leaked = max_leaked
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._threads = 0
        self._leaked: dict[str, int] = {}

    def submit(self, job: Job) -> None:
        worker: _Worker | None = None
        fresh = False
        with self._lock:
            stuck = self._leaked.get(job.plugin, 0)
            if stuck >= self.max_leaked:
                raise PoolRefused(
                    f"{stuck} of its fence workers are still stuck in timed-out calls "
                    f"(hooks.max_leaked_workers = {self.max_leaked} per plugin); refusing its "
                    "calls until one returns — the plugin is hanging"
                )
            if self._idle:
                worker = self._idle.pop()
            else:
                if self._threads - sum(self._leaked.values()) >= MAX_BUSY_WORKERS:
                    raise PoolRefused(
                        f"{MAX_BUSY_WORKERS} fenced calls are already running at once"
                    )
                self._threads += 1
                worker = _Worker(self)
                fresh = True
        worker.inbox.put(job)
        if fresh:
            worker.start()

    def leak(self, plugin: str) -> None:
        with self._lock:
            self._leaked[plugin] = self._leaked.get(plugin, 0) + 1

    def stuck(self, plugin: str) -> int:
        """How many of ``plugin``'s timed-out calls are still running."""
        with self._lock:
            return self._leaked.get(plugin, 0)

    def release(self, worker: _Worker, abandoned_by: str | None) -> bool:
        """Return ``worker`` to the pool (its job was abandoned by ``abandoned_by``'s caller,
        or ``None``); False tells it to exit."""
        with self._lock:
            if abandoned_by is not None:
                left = self._leaked.get(abandoned_by, 0) - 1
                if left > 0:
                    self._leaked[abandoned_by] = left
                else:
                    self._leaked.pop(abandoned_by, None)
            if len(self._idle) < MAX_IDLE_WORKERS:
                self._idle.append(worker)
                return True
            self._threads -= 1
            return False

    def retire(self, worker: _Worker) -> bool:
        """An idle ``worker`` timed out waiting: True if it left the pool and may exit."""
        with self._lock:
            if worker not in self._idle:
                return False
            self._idle.remove(worker)
            self._threads -= 1
            return True

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "threads": self._threads,
                "idle": len(self._idle),
                "leaked": sum(self._leaked.values()),
                "leaked_by_plugin": dict(self._leaked),
                "max_leaked": self.max_leaked,
            }


def wait(job: Job, pool: WorkerPool, deadline: float, timer: Callable[[], float]) -> bool:
    """Wait for ``job`` until ``deadline`` (on ``timer``); False = stamped as timed out."""
    remaining = deadline - timer()
    if remaining > 0:
        finished = job.done.acquire(timeout=min(remaining, threading.TIMEOUT_MAX))
    else:
        finished = job.done.acquire(blocking=False)
    if finished:
        return True
    with job.state_lock:
        if job.state == DONE:  # the worker finished between the wait and this stamp
            return True
        job.state = ABANDONED  # final: the worker will see it and drop its result
        pool.leak(job.plugin)
    return False

