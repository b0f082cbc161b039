"""The fence: the only way the host calls a plugin (R-0.4, R-10.2, R-14.9).

pluggy gives no per-plugin isolation, no time limit and no protection of its arguments.
:class:`HookRunner` adds them around *one* plugin's implementation at a time:

1. **snapshot** (:mod:`.snapshot`) — the plugin receives a private deep copy of the
   request; plain data is copied, handles (the read-only ``history`` reader) are passed by
   reference.  Whatever the plugin does to its copy, the caller's request is untouched.
2. **isolation and bounded wait** — per engine, ``fence.isolation`` (``engines.<name>.fence``
   overrides the global ``fence`` section):

   * ``thread`` (default, :mod:`.workers`): a pooled *daemon* worker thread; the caller
     waits at most the hook's timeout (``hooks.timeouts.<hook>``, overridable per call).  A
     worker still running after that is *leaked*: counted against its plugin, its late
     result discarded; when ``hooks.max_leaked_workers`` of one plugin's workers are stuck,
     that plugin's calls are refused at once — other plugins are unaffected.
   * ``process`` (:mod:`.isolation`, :mod:`.worker`): a worker process, SIGKILLed at the
     deadline whatever it is doing (holding the GIL, exiting, allocating); request and
     answer cross as JSON.

3. **adopt** (:mod:`.adopt`, :mod:`.validate`) — what came back becomes the host's own
   plain copy *before* it is checked (size-capped by ``fence.max_result_bytes``, inside the
   deadline), is rebuilt as the hook's result type (a plain ``dict`` answer is refused as
   ``invalid``: an engine builds the model) and, when it carries ``messages``, must satisfy
   the window invariants and leave the system prompt exactly as it was.  The deadline is
   checked again when the result is in hand and after validation.
4. **stamp** (:mod:`.provenance`) — every call ends with one :class:`Provenance`; a stamp is
   final.  A timed-out call can never be overwritten by its late worker, and a late result
   can never leak into a later call (each call has its own rendezvous).
5. **account** (:mod:`.breaker`) — a circuit breaker per plugin and hook: after
   ``hooks.breaker.failures`` consecutive failures of a hook, the plugin's calls of that hook
   are skipped with a clear message until ``breaker.cooldown_seconds`` pass, then one trial
   call decides (never while an earlier call of that plugin is still stuck).

Fail *policies* (what the host does when a call is not adopted) belong to the host; the
composition helpers implement the two fixed by the hook contracts:
:meth:`HookRunner.first_result` ("a failed link is no answer") and :meth:`HookRunner.chain`
("a failed link leaves the messages as they were").

Error strings name the plugin, the hook and the exception class and message — never the
request's contents (:mod:`.errors`): text found in the request is redacted from exception
messages, then :func:`hermes_host.redact.redact` removes anything that looks like a
credential, and the text is bounded (300 characters).

**Visible failures.**  Every call that is not adopted for a reason other than a ``None``
answer is a *problem*: ``error``, ``timeout``, ``invalid`` or ``breaker_open`` (skipped).
:meth:`HookRunner.health` counts the calls and problems per plugin and hook, with the last
error message and the plugin's breaker state (``ContextHost.engine_health()``,
``Session.status()``, ``replay`` and ``chat`` show it); :meth:`HookRunner.recording` counts
only what happens inside a ``with`` block (a replay, a chat turn).  Each problem is logged on
the ``hermes_host.fence`` logger at WARNING — with the plugin's redacted traceback when it
raised — and an opening breaker once; a skip by an open breaker is logged at DEBUG.

Set ``HERMES_HOST_TRACE_PLUGINS=1`` to print one line per call to stderr (with the error
message of a failed call).  docs/isolation.md says what each isolation mode does and does
not protect against, and what it costs.
"""

from __future__ import annotations

from hermes_host.fence.provenance import Fenced, HealthLog, HookHealth, Provenance
from hermes_host.fence.runner import FALLBACK_TIMEOUT, HookRunner
from hermes_host.fence.validate import RESULT_TYPES
from hermes_host.plugins import TRACE_ENV  # one switch for both traces

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
