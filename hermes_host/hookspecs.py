"""The hooks of hermes-host: the plugin author's reference.

Two families:

* **Context lifecycle** (``should_compress``, ``compress``, ``select_context``,
  ``prune_tool_results_only``) — ``firstresult``: engines are asked in the order the user
  configured (``context.hooks.<hook>`` in ``config.yaml``, else ``[context.engine]``) and the
  first non-``None`` answer wins, except ``select_context``, which is a *chain*: each engine
  receives the previous engine's messages.
* **Memory providers** (``on_pre_compress``, ``on_session_start``, ``on_session_switch``,
  ``on_session_reset``, ``on_session_end``, ``on_turn_complete``, ``on_system_prompt``,
  ``on_post_compress``) — broadcast: every provider is called, each fenced on its own
  (``on_post_compress`` also reaches every configured engine that implements it).

Every call goes through the fence (``hermes_host.fence``): your implementation receives a
private deep copy of the request, runs on a daemon worker thread (or, when the user sets
``fence.isolation: process`` for your engine, in a worker process killed at the deadline;
docs/isolation.md), and must answer within the time limit in ``hooks.timeouts.<hook>``
(defaults in ``DEFAULT_TIMEOUTS``).  What you return is copied into plain data before it is
checked: changing your objects afterwards changes nothing.  A late, raising or
invalid answer is discarded and the hook's fail policy applies; the live session is never
touched.  Engines never write the store: they return a proposal, and the host commits it.

Implement a hook with ``from hermes_host import hookimpl`` and a method of the same name taking
the keyword argument ``request``.
"""

from __future__ import annotations

import pluggy

from hermes_host.models import (
    CompactionReceipt,
    CompressDecision,
    CompressRequest,
    CompressResult,
    PreCompressRequest,
    PruneRequest,
    PruneResult,
    SelectRequest,
    SelectResult,
    SessionEvent,
    ShouldCompressRequest,
)

PROJECT_NAME = "hermes_host"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

LIFECYCLE_HOOKS: tuple[str, ...] = (
    "should_compress",
    "compress",
    "select_context",
    "prune_tool_results_only",
)
MEMORY_HOOKS: tuple[str, ...] = (
    "on_pre_compress",
    "on_session_start",
    "on_session_switch",
    "on_session_reset",
    "on_session_end",
    "on_turn_complete",
    "on_system_prompt",
    "on_post_compress",
)

DEFAULT_TIMEOUTS: dict[str, float] = {
    "should_compress": 2.0,
    "compress": 120.0,
    "select_context": 5.0,
    "prune_tool_results_only": 10.0,
    "on_pre_compress": 10.0,
    "on_session_start": 5.0,
    "on_session_switch": 5.0,
    "on_session_reset": 5.0,
    "on_session_end": 5.0,
    "on_turn_complete": 5.0,
    "on_system_prompt": 5.0,
    "on_post_compress": 5.0,
}
"""Seconds each hook may take before the fence discards it (override in
``hooks.timeouts.<hook>``; the whole compression pass is also bounded by
``compression.context_timeout_seconds``)."""


# --- context lifecycle ------------------------------------------------------------------


@hookspec(firstresult=True)
def should_compress(request: ShouldCompressRequest) -> CompressDecision | None:
    """Decide, after every turn, whether the window should be compressed now.

    Called once after each completed turn with the window, the host's token count, the
    provider's reported ``prompt_tokens`` and the session's durable guard counters (cooldown
    deadline, fallback streak, ineffective count) read fresh from the store.

    Return ``CompressDecision(compress=True)`` to have the host run the compression pass, or
    ``compress=False`` with a short ``reason`` (``below_threshold``, ``cooldown:<seconds>``,
    ``ineffective``) that front ends show.  Return ``None`` for "not mine": the next engine in
    the configured order is asked.

    Never fake ``True`` to get a per-turn callback: use ``select_context`` (R-3.1).

    Time limit: 2 s by default.  Fail policy: on timeout, error or invalid answer the host
    falls back to its own threshold rule (R-4.1/R-4.2).
    """


@hookspec(firstresult=True)
def compress(request: CompressRequest) -> CompressResult | None:
    """Shorten the window: the proposal replaces the session's active messages.

    Called when ``should_compress`` said yes (or on a manual ``/compress``, ``force=True``),
    inside the compression pass: the host holds the session's lease, has collected
    ``memory_context`` from memory providers, and will validate your messages (role
    alternation, every tool call paired with its result, at most one summary block) before
    committing them in one transaction (rotate to a child session, or in-place).

    Return ``CompressResult(messages=..., outcome=...)``.  ``outcome`` tells the host which
    guard counters to update (``failed_transient`` with ``cooldown_seconds`` starts a
    cooldown, ``fallback`` extends the fallback streak, ``noop`` records an ineffective
    attempt).  Return ``None`` for "not mine": the next configured engine is asked.

    Cost: report the summary requests your summariser made — or an LLM summariser would
    have made — in ``summary_requests``, ``summary_input_tokens`` (of which
    ``summary_cached_tokens`` a prompt-caching provider reads from its cache) and
    ``summary_output_tokens``; ``replay`` and ``eval`` price them.  Decide whether a
    proposal is worth a summariser call *before* making it: ``compression.min_saving_percent``
    is the user's minimum share of the window freed, ``compression.target_percent`` the
    share of the trigger a compression should leave, ``request.max_output_tokens`` the
    reply's reservation (the request budget is ``context_length`` less it).

    During a cooldown (``request.guards.cooldown_until`` in the future) the host calls you
    only if your engine class declares ``compresses_during_cooldown = True`` — a promise to
    make no LLM call then (the default compressor summarises offline meanwhile).

    ``compress`` is not all-or-nothing (R-6.8): an aborted compression may still return a
    cleaned list (blank echoes removed).  The summary message carries ``_compressed_summary``;
    the host strips ``_`` keys before anything goes on the wire.

    Time limit: 120 s by default, and the whole pass is bounded by
    ``compression.context_timeout_seconds``.  Fail policy: on timeout, error or invalid
    answer the window is left unchanged and nothing is committed.
    """


@hookspec(firstresult=True)
def select_context(request: SelectRequest) -> SelectResult | None:
    """Choose which context this turn sends (retrieval, topic routing, branch switch).

    Called before every send with the window (ending in the incoming user message), the
    token budget of this turn, a read-only ``history`` handle over the stored lineage and the
    engine's own ``state`` from its previous answer.

    Return ``SelectResult(messages=...)``: the messages this turn sends.  It *replaces* the
    context of this turn and never shrinks the store; anything you add is turn-scoped and
    never persisted.  ``decision`` is shown by ``/status``, the trace and ``replay --json``.
    Return ``None`` to leave the context unchanged.

    Engines configured for this hook form a chain: each receives the previous one's messages.

    Time limit: 5 s by default.  Fail policy: fail open — on timeout, error or invalid answer
    the unchanged input is sent.
    """


@hookspec(firstresult=True)
def prune_tool_results_only(request: PruneRequest) -> PruneResult | None:
    """Cheaply reclaim tokens from old, large tool outputs — deterministic, no LLM (R-11.1).

    Called when ``compression.proactive_prune_tokens`` is set and the window holds more than
    that, independently of ``should_compress``.  Replace large finished tool outputs outside
    the protected tail with informative one-line summaries; never split a tool call from its
    result.

    Return ``PruneResult(messages=..., pruned=N)``, or ``None`` for "nothing to do".

    Time limit: 10 s by default.  Fail policy: fail open to the unchanged window.
    """


# --- memory providers -------------------------------------------------------------------


@hookspec
def on_pre_compress(request: PreCompressRequest) -> str | None:
    """Return text that must survive the coming compression (R-11.4), or ``None``.

    Called before every compression with the window about to be compressed.  Non-empty
    answers from all providers are joined into ``CompressRequest.memory_context`` and merged
    into the summary prompt as source material.  Time limit: 10 s; a failing provider is
    skipped, the others still count.
    """


@hookspec
def on_system_prompt(request: SessionEvent) -> str | None:
    """Return a block to append to the system prompt of a new session (R-13.1), or ``None``.

    Called once when a session starts or rotates; the result is frozen into the session's
    system prompt snapshot so prompt caching holds (R-1.3).  Time limit: 5 s.
    """


@hookspec
def on_session_start(request: SessionEvent) -> None:
    """A session was opened (new or resumed).  Time limit: 5 s; return value ignored."""


@hookspec
def on_session_switch(request: SessionEvent) -> None:
    """The live session id changed (rotation after compression, ``/resume``, ``/branch``):
    ``previous_session_id`` → ``session_id``.  Time limit: 5 s; return value ignored."""


@hookspec
def on_session_reset(request: SessionEvent) -> None:
    """The session was reset (``/new``, idle or daily reset per ``session_reset.mode``).
    Time limit: 5 s; return value ignored."""


@hookspec
def on_session_end(request: SessionEvent) -> None:
    """The session is closing (process exit, reset, rotation).  Time limit: 5 s."""


@hookspec
def on_turn_complete(request: SessionEvent) -> None:
    """A turn finished; ``messages`` holds that turn's new messages.  Time limit: 5 s."""


@hookspec
def on_post_compress(request: CompactionReceipt) -> None:
    """A compaction was committed; ``request`` is its receipt (issue 29).

    Called after the store committed the compressed window, never before and never for an
    attempt that changed nothing: the trigger (``auto`` / ``manual`` / ``forced``) and who
    decided at which threshold, the engine and its outcome, tokens before and after, how many
    messages (and tokens) were kept, pruned, summarised or dropped and the summary that
    replaced them, the summariser's requests and tokens, the duration, and the window's row
    ids before and after (``hermes_host.store.manifests.decode_entries``).  The receipt is
    already stored (``receipt.id``); ``result_session_id`` is the session that now holds the
    window (a new id after a rotation).

    Called on every memory provider and on every configured engine that implements it — e.g.
    to re-index what was summarised, to save a note of what left the window, or to re-inject
    something (Claude Code's PostCompact).  Time limit: 5 s; return value ignored; a failing
    implementation changes nothing (the compaction is committed already).
    """
