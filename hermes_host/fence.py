"""The fence: the only way the host calls a plugin (R-0.4, R-10.2, R-14.9).

pluggy gives no per-plugin isolation, no time limit and no protection of its arguments.
:class:`HookRunner` adds them around *one* plugin's implementation at a time:

1. **snapshot** — the plugin receives a private deep copy of the request; plain data is
   copied, handles (a read-only ``HistoryReader``) are passed by reference.  Whatever the
   plugin does to its copy, the caller's request is untouched.
2. **bounded wait** — the call runs on a pooled *daemon* worker thread and the caller waits at
   most the hook's timeout (``hooks.timeouts.<hook>``, overridable per call).  A worker still
   running after that is *leaked*: counted, and its late result discarded.  When
   ``hooks.max_leaked_workers`` workers are stuck, further calls are refused at once instead
   of spawning threads without bound.  Daemon workers never block interpreter exit — unlike
   ``ThreadPoolExecutor``, whose workers are joined at exit.
3. **validate** — the result must be an instance of the hook's result type (a plain ``dict``
   is refused as ``invalid``, even one that would validate: an engine builds the model) and,
   when it carries ``messages``, satisfy the window invariants (alternation, tool pairs, at
   most one summary) and leave the system prompt exactly as it was.
4. **stamp** — every call ends with one :class:`Provenance`; a stamp is final.  A timed-out
   call can never be overwritten by its late worker, and a late result can never leak into a
   later call (each call has its own rendezvous).
5. **account** — a per-plugin circuit breaker: after ``hooks.breaker.failures`` consecutive
   failures the plugin is skipped with a clear message until ``breaker.cooldown_seconds``
   pass, then one trial call decides.

Fail *policies* (what the host does when a call is not adopted) belong to the host; the
composition helpers here implement the two that are fixed by the hook contracts:
:meth:`HookRunner.first_result` ("a failed link is no answer") and :meth:`HookRunner.chain`
("a failed link leaves the messages as they were").

Error strings name the plugin, the hook and the exception class and message — never the
request's contents: text found in the request is redacted from exception messages, then
:func:`hermes_host.redact.redact` removes anything that looks like a credential, and the
text is bounded (300 characters).

**Visible failures.**  Every call that is not adopted for a reason other than a ``None``
answer is a *problem*: ``error``, ``timeout``, ``invalid`` or ``breaker_open`` (skipped).
:meth:`HookRunner.health` counts the calls and problems per plugin and hook, with the last
error message and the plugin's breaker state (``ContextHost.engine_health()``,
``Session.status()``, ``replay`` and ``chat`` show it); :meth:`HookRunner.recording` counts
only what happens inside a ``with`` block (a replay, a chat turn).  Each problem is logged on
the ``hermes_host.fence`` logger at WARNING — with the plugin's redacted traceback when it
raised — and an opening breaker once; a skip by an open breaker is logged at DEBUG.

Set ``HERMES_HOST_TRACE_PLUGINS=1`` to print one line per call to stderr (with the error
message of a failed call).
"""

from __future__ import annotations

import copy
import datetime as _dt
import decimal
import enum
import itertools
import logging
import os
import queue
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Generic, TextIO, TypeVar

import pluggy
from pydantic import BaseModel

from hermes_host.config import HooksSection
from hermes_host.hookspecs import DEFAULT_TIMEOUTS, MEMORY_HOOKS
from hermes_host.messages import IMMUTABLE_TYPES, check_invariants, copy_data
from hermes_host.models import (
    CompressDecision,
    CompressResult,
    PruneResult,
    SelectRequest,
    SelectResult,
)
from hermes_host.plugins import TRACE_ENV, trace_enabled  # one switch for both traces
from hermes_host.redact import redact

__all__ = [
    "FALLBACK_TIMEOUT",
    "RESULT_TYPES",
    "TRACE_ENV",
    "Fenced",
    "HealthLog",
    "HookHealth",
    "HookRunner",
    "Provenance",
]

log = logging.getLogger(__name__)
"""Problems of fenced calls, at WARNING (tracebacks included); see the module docstring."""

T = TypeVar("T")

FALLBACK_TIMEOUT = 5.0
"""Seconds for a hook that has no entry in ``DEFAULT_TIMEOUTS`` (a third-party hookspec)."""

RESULT_TYPES: dict[str, type[BaseModel]] = {
    "should_compress": CompressDecision,
    "compress": CompressResult,
    "select_context": SelectResult,
    "prune_tool_results_only": PruneResult,
}
"""What each lifecycle hook must return (or ``None``)."""

_TEXT_HOOKS = frozenset({"on_pre_compress", "on_system_prompt"})
_IGNORED_HOOKS = frozenset(MEMORY_HOOKS) - _TEXT_HOOKS

_MAX_BUSY_WORKERS = 64  # concurrent calls that are still within their timeout
_MAX_IDLE_WORKERS = 8  # idle threads kept warm; extra ones exit
_IDLE_SECONDS = 30.0  # an idle worker exits after this long, so dropped runners free threads
_MAX_ERROR_CHARS = 300
_MAX_TRACEBACK_CHARS = 4_000  # the tail of a logged traceback (the frames nearest the raise)


class Provenance(enum.StrEnum):
    """How a fenced call ended.  Only ``OK`` results may be adopted."""

    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"  # the plugin raised, or the host refused to call it (see error_type)
    INVALID = "invalid"
    BREAKER_OPEN = "breaker_open"
    NONE = "none"  # the plugin returned None ("not mine / unchanged") or lacks the hook


_FAILURES = frozenset({Provenance.TIMEOUT, Provenance.ERROR, Provenance.INVALID})


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

    @property
    def failed(self) -> bool:
        """True for timeout, error, invalid and breaker_open (not for a ``None`` answer)."""
        return self.provenance in _FAILURES or self.provenance is Provenance.BREAKER_OPEN


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


# --- worker pool --------------------------------------------------------------------------

_PENDING, _DONE, _ABANDONED = 0, 1, 2
_worker_numbers = itertools.count(1)  # unique thread names across runners


class _Job:
    """One call's private rendezvous between the waiting caller and a worker."""

    __slots__ = ("caller", "done", "exc", "request", "state", "state_lock", "value")

    def __init__(self, caller: Callable[..., Any], request: BaseModel) -> None:
        self.caller = caller
        self.request: BaseModel | None = request
        self.state_lock = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker once a result is stored
        self.state = _PENDING
        self.value: Any = None
        self.exc: BaseException | None = None


class _PoolRefused(Exception):
    """The pool will not start another call (too many leaked or busy workers)."""


class _Worker(threading.Thread):
    def __init__(self, pool: _WorkerPool) -> None:
        super().__init__(name=f"hermes-fence-{next(_worker_numbers)}", daemon=True)
        self.pool = pool
        self.inbox: queue.SimpleQueue[_Job] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                job = self.inbox.get(timeout=_IDLE_SECONDS)
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
            with job.state_lock:
                abandoned = job.state == _ABANDONED
                if not abandoned:
                    job.state = _DONE
                    job.value = value
                    job.exc = exc
            job.request = None
            keep = self.pool.release(self, abandoned)
            # Wake the caller last: it needs the GIL, so bookkeeping done after this line
            # would make it wait for a second thread switch.
            if not abandoned:
                job.done.release()
            del job, value, exc
            if not keep:
                return


class _WorkerPool:
    """Daemon worker threads, created on demand, reused, and counted when leaked."""

    def __init__(self, max_leaked: int) -> None:
        self.max_leaked = max_leaked
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._threads = 0
        self._leaked = 0

    def submit(self, job: _Job) -> None:
        worker: _Worker | None = None
        fresh = False
        with self._lock:
            if self._leaked >= self.max_leaked:
                raise _PoolRefused(
                    f"{self._leaked} fence workers are still stuck in timed-out calls "
                    f"(hooks.max_leaked_workers = {self.max_leaked}); refusing new calls "
                    "until one returns — a plugin is hanging"
                )
            if self._idle:
                worker = self._idle.pop()
            else:
                if self._threads - self._leaked >= _MAX_BUSY_WORKERS:
                    raise _PoolRefused(
                        f"{_MAX_BUSY_WORKERS} fenced calls are already running at once"
                    )
                self._threads += 1
                worker = _Worker(self)
                fresh = True
        worker.inbox.put(job)
        if fresh:
            worker.start()

    def leak(self) -> None:
        with self._lock:
            self._leaked += 1

    def release(self, worker: _Worker, was_abandoned: bool) -> bool:
        """Return ``worker`` to the pool; False tells it to exit."""
        with self._lock:
            if was_abandoned:
                self._leaked -= 1
            if len(self._idle) < _MAX_IDLE_WORKERS:
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

    def state(self) -> dict[str, int]:
        with self._lock:
            return {
                "threads": self._threads,
                "idle": len(self._idle),
                "leaked": self._leaked,
                "max_leaked": self.max_leaked,
            }


def _wait(job: _Job, pool: _WorkerPool, deadline: float) -> bool:
    """Wait for ``job`` until ``deadline`` (perf_counter); False = stamped as timed out."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        finished = job.done.acquire(timeout=min(remaining, threading.TIMEOUT_MAX))
    else:
        finished = job.done.acquire(blocking=False)
    if finished:
        return True
    with job.state_lock:
        if job.state == _DONE:  # the worker finished between the wait and this stamp
            return True
        job.state = _ABANDONED  # final: the worker will see it and drop its result
        pool.leak()
    return False


# --- circuit breaker ------------------------------------------------------------------------


@dataclass
class _Breaker:
    consecutive: int = 0
    opened_at: float | None = None
    trial: bool = False
    calls: int = 0
    failures: int = 0
    last_error: str | None = None


# --- snapshot, validation, redaction ------------------------------------------------------

_PLAIN_TYPES: tuple[type, ...] = (
    BaseModel,
    dict,
    list,
    tuple,
    set,
    frozenset,
    str,
    bytes,
    int,
    float,
    bool,
    type(None),
    _dt.date,
    _dt.time,
    _dt.timedelta,
    decimal.Decimal,
    enum.Enum,
)


def _copy_data(value: Any) -> Any:
    """:func:`hermes_host.messages.copy_data`, and pydantic models field by field."""
    if isinstance(value, BaseModel):
        return _copy_model(value, share_handles=False)
    return copy_data(value)


def _copy_model(model: BaseModel, *, share_handles: bool) -> BaseModel:
    copied = model.__copy__()  # pydantic's own shallow copy (fields set, extras, private)
    fields = copied.__dict__
    for name, value in fields.items():
        if type(value) in IMMUTABLE_TYPES:
            continue
        if share_handles and not isinstance(value, _PLAIN_TYPES):
            continue  # a handle (e.g. SelectRequest.history): shared by reference
        fields[name] = _copy_data(value)
    extra = copied.__pydantic_extra__
    if extra:
        object.__setattr__(copied, "__pydantic_extra__", _copy_data(extra))
    return copied


def _snapshot(request: BaseModel) -> BaseModel:
    """A private deep copy of ``request``; top-level fields that hold handles (anything that
    is not plain data, e.g. ``SelectRequest.history``) are shared by reference."""
    try:
        return _copy_model(request, share_handles=True)
    except RecursionError:  # a self-referencing structure: the slow, memoised copy
        memo: dict[int, Any] = {}
        for value in request.__dict__.values():
            if not isinstance(value, _PLAIN_TYPES):
                memo[id(value)] = value
        return copy.deepcopy(request, memo)


def _request_strings(request: BaseModel) -> list[str]:
    """Every string leaf of the request's plain data (for redacting error messages)."""
    found: list[str] = []

    def walk(value: Any, depth: int) -> None:
        if depth > 50:
            return
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, BaseModel):
            for item in value.__dict__.values():
                walk(item, depth + 1)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(key, depth + 1)
                walk(item, depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item, depth + 1)

    for value in request.__dict__.values():
        if isinstance(value, _PLAIN_TYPES):
            walk(value, 0)
    return found


_WORD = re.compile(r"[^\s'\"`,;()\[\]{}<>]+")
_REDACTED = "[redacted]"


def _redact(text: str, request: BaseModel, limit: int = _MAX_ERROR_CHARS) -> str:
    """Remove request text from an exception message: whole string leaves of 6+ characters,
    and any long word (12+ chars, or 8+ with a digit — keys and tokens look like that) that
    occurs anywhere in the request; then credentials (:func:`hermes_host.redact.redact`).
    The result has at most ``limit`` characters."""
    text = text[: limit * 4]  # bound the work: an exception may quote megabytes
    leaves = sorted({s for s in _request_strings(request) if len(s) >= 6}, key=len, reverse=True)
    for leaf in leaves:
        if leaf in text:
            text = text.replace(leaf, _REDACTED)
    haystack = "\n".join(leaves)

    def word(match: re.Match[str]) -> str:
        token = match.group(0)
        secretish = len(token) >= 12 or (len(token) >= 8 and any(c.isdigit() for c in token))
        return _REDACTED if secretish and token != _REDACTED and token in haystack else token

    text = redact(_WORD.sub(word, text))
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _traceback_text(exc: BaseException, request: BaseModel) -> str:
    """``exc``'s traceback for the log: redacted like its message, the tail kept."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # an exception whose __str__ raises, a broken frame
        return f"(no traceback: {type(exc).__name__} could not be formatted)"
    if len(text) > _MAX_TRACEBACK_CHARS * 4:
        text = text[-_MAX_TRACEBACK_CHARS * 4 :]
    text = _redact(text, request, limit=_MAX_TRACEBACK_CHARS * 4)
    return text if len(text) <= _MAX_TRACEBACK_CHARS else "..." + text[-_MAX_TRACEBACK_CHARS:]


def _system_prompt_change(request: BaseModel, messages: list[Any]) -> str | None:
    """Why ``messages`` alters the request's system prompt, or None when it does not."""
    before = getattr(request, "messages", None)
    if not isinstance(before, list):
        return None
    had = bool(before) and isinstance(before[0], dict) and before[0].get("role") == "system"
    has = bool(messages) and messages[0].get("role") == "system"
    if had and not has:
        return "the system prompt (message 0) was removed"
    if has and not had:
        return "a system prompt was added at message 0"
    if had and has and messages[0].get("content") != before[0].get("content"):
        return "the system prompt (message 0) was changed; it is immutable (R-1.3)"
    return None


def _validate(hook: str, value: Any, request: BaseModel) -> tuple[Provenance, Any, str | None]:
    """Check a returned value against the hook's contract: (provenance, value, problem)."""
    if value is None:
        return Provenance.NONE, None, None
    if hook in _IGNORED_HOOKS:
        return Provenance.OK, None, None
    if hook in _TEXT_HOOKS:
        if isinstance(value, str):
            return Provenance.OK, value, None
        return Provenance.INVALID, None, f"returned {type(value).__name__}, expected str or None"
    model = RESULT_TYPES.get(hook)
    if model is None:  # a hookspec this fence has no contract for: pass the value through
        return Provenance.OK, value, None
    if isinstance(value, dict):
        return (
            Provenance.INVALID,
            None,
            f"returned a plain dict, expected {model.__name__} or None (build the result "
            f"with {model.__name__}(...); a dict is never adopted)",
        )
    if not isinstance(value, model):
        return (
            Provenance.INVALID,
            None,
            f"returned {type(value).__name__}, expected {model.__name__} or None",
        )
    if "messages" in type(value).model_fields:
        messages = getattr(value, "messages", None)
        if not isinstance(messages, list):
            return (
                Provenance.INVALID,
                None,
                f"{model.__name__}.messages is {type(messages).__name__}, expected a list",
            )
        violations = check_invariants(messages)
        if violations:
            shown = "; ".join(str(v) for v in violations[:5])
            more = f"; and {len(violations) - 5} more" if len(violations) > 5 else ""
            return (
                Provenance.INVALID,
                None,
                f"{len(violations)} window invariant violation(s): {shown}{more}",
            )
        change = _system_prompt_change(request, messages)
        if change:
            return Provenance.INVALID, None, change
    return Provenance.OK, value, None


# --- the runner ---------------------------------------------------------------------------


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
    job: _Job | None = None
    outcome: Fenced[Any] | None = None


class HookRunner:
    """Calls one plugin's hook implementation inside the fence (see the module docstring).

    ``pm`` is a ``pluggy.PluginManager`` whose plugins are registered by name (the entry-point
    name, e.g. ``compressor``).  ``hooks`` supplies timeouts, breaker settings and the leaked
    worker cap; ``clock`` (seconds, monotonic) drives the breaker and is injectable for tests;
    ``trace`` overrides ``$HERMES_HOST_TRACE_PLUGINS`` (read once, here).
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        hooks: HooksSection | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        trace: bool | None = None,
        trace_stream: TextIO | None = None,
    ) -> None:
        self._pm = pm
        self._hooks = hooks if hooks is not None else HooksSection()
        self._clock = clock
        if trace is None:
            trace = trace_enabled()
        self._trace = trace
        self._trace_stream = trace_stream
        self._pool = _WorkerPool(self._hooks.max_leaked_workers)
        self._breakers: dict[str, _Breaker] = {}
        self._breaker_lock = threading.Lock()
        self._health = HealthLog()
        self._recorders: list[HealthLog] = []
        self._pid = os.getpid()
        self._timeouts = {
            name: self._hooks.timeout(name) for name in {*DEFAULT_TIMEOUTS, *self._hooks.timeouts}
        }

    # -- public API ------------------------------------------------------------------------

    def timeout_for(self, hook: str) -> float:
        """The configured time limit of ``hook`` in seconds."""
        return self._timeouts.get(hook, FALLBACK_TIMEOUT)

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
        now = self._clock()
        cooldown = self._hooks.breaker.cooldown_seconds
        out: dict[str, dict[str, Any]] = {}
        with self._breaker_lock:
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
        with self._breaker_lock:
            self._recorders = [*self._recorders, log_]
        try:
            yield log_
        finally:
            with self._breaker_lock:
                self._recorders = [r for r in self._recorders if r is not log_]

    def with_breakers(self, rows: Sequence[HookHealth]) -> list[HookHealth]:
        """``rows`` with each plugin's current breaker state filled in."""
        states = {name: b["state"] for name, b in self.breaker_state().items()}
        return [replace(row, breaker=states.get(row.plugin)) for row in rows]

    def pool_state(self) -> dict[str, int]:
        """Worker threads, idle ones, leaked ones and the leak cap."""
        return self._pool.state()

    # -- internals -------------------------------------------------------------------------

    def _start(self, plugin: str, hook: str, request: BaseModel, timeout: float | None) -> _Started:
        if not isinstance(request, BaseModel):
            raise TypeError(f"request must be a pydantic model, not {type(request).__name__}")
        if os.getpid() != self._pid:
            self._after_fork()
        if timeout is None:
            timeout = self.timeout_for(hook)
        elif not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        started = _Started(plugin, hook, request, time.perf_counter(), timeout=timeout)

        caller = getattr(self._pm.hook, hook, None)
        if caller is None or not isinstance(caller, pluggy.HookCaller):
            started.outcome = self._stamp(
                started,
                Provenance.ERROR,
                None,
                f"plugin {plugin!r} hook {hook!r} not called: no such hook is declared",
                "UnknownHook",
            )
            return started
        target = self._pm.get_plugin(plugin)
        if target is None:
            names = ", ".join(sorted(n for n, p in self._pm.list_name_plugin() if p is not None))
            started.outcome = self._stamp(
                started,
                Provenance.ERROR,
                None,
                f"plugin {plugin!r} hook {hook!r} not called: no plugin of that name is "
                f"registered (registered: {names or 'none'})",
                "UnknownPlugin",
            )
            return started
        if not any(impl.plugin is target for impl in caller.get_hookimpls()):
            started.outcome = self._stamp(started, Provenance.NONE, None, None, None)
            return started

        refusal = self._admit(plugin)
        if refusal is not None:
            started.outcome = self._stamp(
                started, Provenance.BREAKER_OPEN, None, refusal, "BreakerOpen", account=False
            )
            return started

        others = [p for p in self._pm.get_plugins() if p is not target]
        one = self._pm.subset_hook_caller(hook, remove_plugins=others)
        started.firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
        job = _Job(one, _snapshot(request))
        try:
            self._pool.submit(job)
        except _PoolRefused as exc:
            self._release_trial(plugin)
            started.outcome = self._stamp(
                started,
                Provenance.ERROR,
                None,
                f"plugin {plugin!r} hook {hook!r} not called: {exc}",
                "PoolExhausted",
                account=False,
            )
            return started
        started.job = job
        started.deadline = started.start + timeout
        return started

    def _finish(self, started: _Started) -> Fenced[Any]:
        if started.outcome is not None:
            return started.outcome
        job = started.job
        assert job is not None
        plugin, hook = started.plugin, started.hook
        if not _wait(job, self._pool, started.deadline):
            return self._stamp(
                started,
                Provenance.TIMEOUT,
                None,
                f"plugin {plugin!r} hook {hook!r} timed out after {started.timeout:g}s; "
                "its result, if any, will be discarded",
                "TimeoutError",
            )
        if job.exc is not None:
            exc = job.exc
            try:
                text = str(exc)
            except Exception:  # an exception whose __str__ raises
                text = "<unprintable message>"
            message = _redact(text, started.request)
            detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
            return self._stamp(
                started,
                Provenance.ERROR,
                None,
                f"plugin {plugin!r} hook {hook!r} raised {detail}",
                type(exc).__name__,
                logged=_traceback_text(exc, started.request),
            )
        raw = job.value
        if not started.firstresult:
            # a broadcast hookspec returns the list of non-None results: here 0 or 1 of them
            raw = raw[0] if isinstance(raw, list) and raw else None
        try:
            provenance, value, problem = _validate(hook, raw, started.request)
        except Exception as exc:  # e.g. a result whose __eq__ raises
            provenance, value = Provenance.INVALID, None
            problem = f"could not be validated ({type(exc).__name__})"
        if provenance is Provenance.INVALID:
            return self._stamp(
                started,
                provenance,
                None,
                f"plugin {plugin!r} hook {hook!r} returned an invalid result: {problem}",
                "InvalidResult",
            )
        return self._stamp(started, provenance, value, None, None)

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
            duration=time.perf_counter() - started.start,
            error_type=error_type,
        )
        if account and started.job is not None:
            self._record(started.plugin, fenced)
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
        line = (
            f"[hermes-host trace] plugin={fenced.plugin} hook={fenced.hook} "
            f"{fenced.duration * 1000:.2f}ms provenance={fenced.provenance.value}"
        )
        if fenced.error_type:
            line += f" error={fenced.error_type}"
        if fenced.error:
            line += f" message={fenced.error}"
        stream = self._trace_stream or sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed stderr must not break a call
            pass

    def _after_fork(self) -> None:
        """In a forked child the parent's worker threads do not exist and a lock may have
        been copied while held: start with a fresh pool and lock (breaker counts are kept)."""
        self._pid = os.getpid()
        self._pool = _WorkerPool(self._hooks.max_leaked_workers)
        self._breaker_lock = threading.Lock()

    def _breaker(self, plugin: str) -> _Breaker:
        b = self._breakers.get(plugin)
        if b is None:
            b = self._breakers[plugin] = _Breaker()
        return b

    def _admit(self, plugin: str) -> str | None:
        """None when ``plugin`` may be called now, else the refusal message."""
        known = self._breakers.get(plugin)
        if known is None or known.opened_at is None:  # closed: the common case, no lock
            return None
        settings = self._hooks.breaker
        with self._breaker_lock:
            b = self._breaker(plugin)
            if b.opened_at is None:
                return None
            head = (
                f"plugin {plugin!r} skipped: circuit breaker open after {b.consecutive} "
                f"consecutive failures (last: {b.last_error})"
            )
            remaining = b.opened_at + settings.cooldown_seconds - self._clock()
            if remaining > 0:
                return f"{head}; next trial call in {remaining:.1f}s"
            if b.trial:
                return f"{head}; a trial call is in progress"
            b.trial = True
            return None

    def _release_trial(self, plugin: str) -> None:
        with self._breaker_lock:
            self._breaker(plugin).trial = False

    def _record(self, plugin: str, fenced: Fenced[Any]) -> None:
        opened: tuple[int, str | None] | None = None
        with self._breaker_lock:
            b = self._breaker(plugin)
            b.calls += 1
            if fenced.provenance in _FAILURES:
                b.failures += 1
                b.consecutive += 1
                b.last_error = fenced.error or f"{fenced.hook}: {fenced.provenance.value}"
                if b.trial or b.consecutive >= self._hooks.breaker.failures:
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
                plugin, opened[0], opened[1], self._hooks.breaker.cooldown_seconds,
            )
