"""``ContextHost`` / ``Session``: the API an agent loop embeds (SPEC sections 1, 2, 8, 10, 12).

An agent loop does, per model call::

    session.add_user(text)                       # persisted at once, verbatim
    request = session.build_request(injections)  # system prompt + window + turn-scoped extras
    reply = call_the_model(request)
    session.add_assistant(reply.text, reply.tool_calls)
    session.add_tool_result(call_id, output)     # for every call
    outcome = session.end_turn(usage)            # maybe compresses; the session id may switch

The host owns the truth (the store), the rules (invariants, guards, the fence) and the
schedule.  Engines only ever see private snapshots and return proposals; a proposal is
committed in one store transaction after the fence adopted and validated it, or thrown away.

**Normalisation.**  The store keeps every message exactly as it was added.  Real agents
produce adjacent same-role messages (console echoes, interrupted turns) and calls that were
never answered; the *window* the host sends and hands to engines is therefore normalised each
time it is built: :func:`~hermes_host.messages.repair_tool_pairs` closes dangling calls and
drops stray results, then :func:`~hermes_host.messages.normalize_alternation` merges
neighbours of one role (R-1.4, R-6.9).  The function is deterministic, so the normalised
window only ever grows at its end and prompt caching holds.  :attr:`Session.normalised`
reports what it did.

**Prompt caching (R-1.3).**  Every :meth:`Session.build_request` compares the new system
prompt + window with the previous one: the system prompt must be byte-identical and the
previous window (except its final, still-open message, which a same-role merge may extend)
must be a byte-identical prefix — unless a compression was committed in between.
:attr:`Session.cache_violations` counts breaches.  ``select_context`` output and turn-scoped
injections are per-request by design and are not part of this check.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_host import guards as guard_rules
from hermes_host.config import HermesConfig, SessionResetSection, load_config
from hermes_host.fence import Fenced, HookRunner
from hermes_host.injections import Injection, apply_injections
from hermes_host.messages import (
    DANGLING_RESULT,
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
    tool_call_ids,
    turn_starts,
    validate_messages,
)
from hermes_host.models import (
    CompressDecision,
    CompressRequest,
    CompressResult,
    GuardState,
    Message,
    PreCompressRequest,
    SelectRequest,
    SelectResult,
    SessionEvent,
    ShouldCompressRequest,
)
from hermes_host.plugins import LoadedPlugins, load_plugins
from hermes_host.store import (
    Deferred,
    Guards,
    Lease,
    LeaseLostError,
    PublishResult,
    StaleSessionError,
    StaleWindowError,
    StateStore,
    StoreError,
    WindowMarker,
    open_store,
)
from hermes_host.tokens import RunningTotal, TokenCounter, encoding_info

__all__ = [
    "COMPACTED_MARKER",
    "COMPACTING_MARKER",
    "SESSION_ENV",
    "CompressionReport",
    "ContextHost",
    "Normalisation",
    "Session",
    "TurnOutcome",
    "reset_due",
]

COMPACTING_MARKER = "🗜️ Compacting context — summarizing earlier conversation..."
"""Shown when a compression pass starts (R-10.4)."""
COMPACTED_MARKER = "✓ Context compaction complete — continuing turn..."
"""Shown when a compression was committed (R-10.4)."""

_COMMITTING_OUTCOMES = frozenset({"summarised", "fallback", "dropped"})

SESSION_ENV = "HERMES_HOST_SESSION_ID"
"""The environment variable that exposes the live session id to the process and the tools
it starts (R-8.1).  Set by :meth:`Session.export_id`; a rotation moves it to the new id."""

_FOLLOW_TRIES = 20
"""Re-reads of a window another process keeps changing before :meth:`Session._follow`
settles for a marker that may be older than the window (the next check then notices)."""

ReportStatus = Literal["committed", "preview", "not_committed", "deferred", "rejected"]


@dataclass
class Normalisation:
    """What the host changed in the window it sends (the store keeps the originals)."""

    merged_adjacent: int = 0
    """Adjacent same-role messages merged into one (R-1.4)."""
    tool_pairs_repaired: int = 0
    """Dangling calls closed with a short note, or stray results dropped (R-6.9)."""

    def as_dict(self) -> dict[str, int]:
        return {
            "merged_adjacent": self.merged_adjacent,
            "tool_pairs_repaired": self.tool_pairs_repaired,
        }


@dataclass
class CompressionReport:
    """One compression attempt, committed or not.

    ``status``: ``committed`` (published; the session may have a new id), ``preview``
    (``compress(preview=True)``: computed, not published), ``deferred`` (another path holds
    the lease, R-10.1), ``not_committed`` (the engine declined, failed transiently, aborted or
    no-op'd; guards updated), ``rejected`` (the fence or the host refused the proposal, or the
    pass ran out of time: the session is unchanged).
    """

    status: ReportStatus
    outcome: str
    """The engine's ``SummaryOutcome``, or ``compression_deferred`` / ``timeout`` /
    ``error`` / ``invalid`` / ``no_engine`` / ``lease_lost`` when the host decided."""
    tokens_before: int
    tokens_after: int
    llm_calls: int = 0
    engine: str | None = None
    session_id: str = ""
    previous_session_id: str | None = None
    holder: str | None = None
    message: str | None = None
    notes: list[str] = field(default_factory=list)
    published_messages: int = 0
    """How many messages the compressed window holds (rows written by the publish)."""
    proposed: list[Message] | None = None
    """The proposed window (``preview`` only)."""
    duration: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "outcome": self.outcome,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "llm_calls": self.llm_calls,
            "engine": self.engine,
            "session_id": self.session_id,
            "previous_session_id": self.previous_session_id,
            "holder": self.holder,
            "message": self.message,
            "notes": list(self.notes),
            "published_messages": self.published_messages,
            "duration": round(self.duration, 4),
        }


@dataclass
class TurnOutcome:
    """What :meth:`Session.end_turn` did.  ``events`` are user-facing lines, in order,
    including the R-10.4 status markers around a compression."""

    session_id: str
    decision: CompressDecision
    decided_by: str
    """``engine:<name>`` or ``host`` (no engine answered, or the engine failed)."""
    window_tokens: int
    compression: CompressionReport | None = None
    events: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``continued`` (no compression attempted), else the compression report's status."""
        return "continued" if self.compression is None else self.compression.status

    @property
    def deferred(self) -> bool:
        return self.compression is not None and self.compression.status == "deferred"


class ContextHost:
    """Loads config and plugins once, owns the store, opens sessions.

    Build it with :meth:`from_config`.  One host per process is the norm; it is not
    thread-safe per session (an agent loop drives one session from one thread), but the
    store and the fence are shared safely.
    """

    def __init__(
        self,
        config: HermesConfig,
        store: StateStore,
        plugins: LoadedPlugins,
        *,
        owns_store: bool = False,
    ) -> None:
        self.config = config
        self.store = store
        self.plugins = plugins
        self.runner = HookRunner(plugins.pm, config.hooks)
        self.tokens = TokenCounter(model=config.model.name)  # the encoding fits the model
        self._owns_store = owns_store
        self._owned_plugins: list[object] = []

    @classmethod
    def from_config(
        cls,
        config: HermesConfig | str | os.PathLike[str] | None = None,
        *,
        store: StateStore | str | os.PathLike[str] | None = None,
        extra_plugins: Mapping[str, object] | None = None,
    ) -> ContextHost:
        """A host from ``config`` (a :class:`HermesConfig`, a path, or ``None`` for the
        R-14.5 lookup), the ``store`` (an open store, a path, or ``None`` for the configured
        one) and ``extra_plugins`` (name → instance, registered as if installed; select them
        by name in the config).

        Raises :class:`~hermes_host.config.ConfigError`,
        :class:`~hermes_host.plugins.PluginError` or
        :class:`~hermes_host.store.StoreError` with user-facing messages.
        """
        if not isinstance(config, HermesConfig):
            config = load_config(config)
        plugins = load_plugins(config, extra=dict(extra_plugins or {}))
        caller_owned = {name for name in (extra_plugins or {})}
        owns = not (store is not None and not isinstance(store, str | os.PathLike))
        if store is None:
            store = config.store_path()
        if isinstance(store, str | os.PathLike):
            Path(store).expanduser().parent.mkdir(parents=True, exist_ok=True)
            store = open_store(store, lease_ttl=config.store.lease_ttl_seconds)
        host = cls(config, store, plugins, owns_store=owns)
        host._owned_plugins = [
            instance
            for name, instance in {**plugins.engines, **plugins.providers}.items()
            if name not in caller_owned
        ]
        return host

    # -- names --------------------------------------------------------------------------

    def chain(self, hook: str) -> list[str]:
        """Engines configured for ``hook`` that are registered (R-14.8)."""
        return [name for name in self.config.context.chain(hook) if name in self.plugins.engines]

    @property
    def providers(self) -> list[str]:
        return [n for n in self.config.memory.providers if n in self.plugins.providers]

    def engine_health(self) -> list[dict[str, Any]]:
        """Per engine / memory provider and hook, since this host started: calls, errors,
        timeouts, invalid answers, breaker skips, the last (redacted) error message and the
        breaker state — what went wrong is every row with ``problems > 0``.  JSON-ready."""
        return [row.as_dict() for row in self.runner.health()]

    # -- sessions -----------------------------------------------------------------------

    def open_session(
        self,
        title: str | None = None,
        system_prompt: str = "",
        *,
        user_id: str | None = None,
        cwd: str | None = None,
        source: str | None = "hermes-host",
    ) -> Session:
        """Start a new session.  The system prompt snapshot is ``system_prompt`` plus what
        memory providers append (``on_system_prompt``, R-13.1), frozen for the session."""
        probe = SessionEvent(session_id="(new)", user_id=user_id, cwd=cwd, reason="new")
        blocks = [
            f.value
            for f in self.runner.broadcast("on_system_prompt", self.providers, probe)
            if f.adopted and isinstance(f.value, str) and f.value.strip()
        ]
        snapshot = "\n\n".join([system_prompt, *blocks]) if blocks else system_prompt
        row = self.store.create_session(
            source=source,
            user_id=user_id,
            model=self.config.model.name,
            model_config={"base_system_prompt": system_prompt},
            system_prompt=snapshot,
            title=title,
            cwd=cwd if cwd is not None else os.getcwd(),
        )
        session = Session(self, row.id, snapshot, [], title=row.title, cwd=row.cwd,
                          conversation_id=row.conversation_id)
        self._broadcast("on_session_start", SessionEvent(
            session_id=row.id, user_id=user_id, cwd=row.cwd, reason="new"
        ))
        return session

    def resume(self, by: str) -> Session:
        """Reopen a stored session by id, ``"last"`` or title (the newest of its lineage,
        R-8.3).  The id of a session a compression rotated resumes its newest descendant: the
        rotated one is ended and its window lives on there.  Raises
        :class:`~hermes_host.store.SessionNotFoundError`."""
        row = self.store.resume(by)
        marker = self.store.window_marker(row.id)
        if marker.session_id != row.id:
            row = self.store.get_session(marker.session_id)
        snapshot = row.system_prompt
        if snapshot is None:
            for ancestor in reversed(self.store.lineage(row.id)[:-1]):
                snapshot = self.store.get_session(ancestor).system_prompt
                if snapshot is not None:
                    break
        window = self.store.active_messages(row.id)
        if window and window[0].get("role") == "system":
            snapshot = str(window[0].get("content") or "")
            window = window[1:]
        session = Session(
            self, row.id, snapshot or "", window, title=row.title, cwd=row.cwd, marker=marker,
            conversation_id=row.conversation_id,
        )
        session.compression_count = row.compression_count
        session.lineage = self.store.lineage(row.id)
        self._broadcast("on_session_start", SessionEvent(
            session_id=row.id, user_id=row.user_id, cwd=row.cwd, reason="resume"
        ))
        return session

    def session_for(
        self,
        user_id: str | None = None,
        *,
        system_prompt: str = "",
        title: str | None = None,
        cwd: str | None = None,
        now: float | None = None,
    ) -> Session:
        """The live session of ``user_id`` for a gateway: the newest unended one, unless
        ``session_reset`` says it is stale (then ``on_session_reset`` fires, it is ended and a
        new one opens).  With ``group_sessions_per_user: false`` every user shares one.

        To give the agent one turn to save memory before an automatic reset (R-11.4), check
        :meth:`Session.reset_due` first and call :meth:`Session.reset` yourself."""
        key = user_id if self.config.group_sessions_per_user else None
        candidates = self.store.list_sessions(limit=20, user_id=key)
        current = next((row for row in candidates if row.ended_at is None), None)
        if current is None:
            return self.open_session(title, system_prompt, user_id=user_id, cwd=cwd)
        session = self.resume(current.id)
        reason = reset_due(self.config.session_reset, current.last_activity_at, now)
        if reason is None:
            return session
        return session.reset(reason, title=title, system_prompt=system_prompt)

    def close(self) -> None:
        """Close the plugins this host instantiated (those with a ``close()``, e.g. an
        engine's network clients) and the store when this host opened it."""
        for plugin in self._owned_plugins:
            closer = getattr(plugin, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # a plugin's cleanup bug must not stop the others
                    pass
        self._owned_plugins = []
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ContextHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------

    def _broadcast(
        self, hook: str, request: Any, timeout: float | None = None
    ) -> list[Fenced[Any]]:
        if not self.providers:
            return []
        return self.runner.broadcast(hook, self.providers, request, timeout=timeout)


def reset_due(
    section: SessionResetSection, last_activity: float, now: float | None = None
) -> str | None:
    """Why a session idle since ``last_activity`` must be reset now (``session_reset.mode``,
    R-12.2): ``"idle"`` after ``idle_minutes`` without activity, ``"daily"`` once the local
    clock passed ``daily_hour`` since then; ``None`` to keep it."""
    now = time.time() if now is None else now
    if section.mode in ("idle", "both") and now - last_activity >= section.idle_minutes * 60:
        return "idle"
    if section.mode in ("daily", "both"):
        last = _dt.datetime.fromtimestamp(last_activity)
        boundary = last.replace(hour=section.daily_hour, minute=0, second=0, microsecond=0)
        if boundary <= last:
            boundary += _dt.timedelta(days=1)
        if _dt.datetime.fromtimestamp(now) >= boundary:
            return "daily"
    return None


def _needs_repair(messages: Sequence[Message]) -> bool:
    """Cheap scan: does any call lack its result, or any result lack its call?"""
    pending: set[str] = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return True
            pending.discard(call_id)
            continue
        if pending:
            return True
        if role == "assistant":
            pending = set(tool_call_ids(message))
    return bool(pending)


def _needs_merge(messages: Sequence[Message]) -> bool:
    """Cheap scan: are two user or two assistant messages adjacent?"""
    return any(
        a.get("role") == b.get("role") and a.get("role") in ("user", "assistant")
        for a, b in itertools.pairwise(messages)
    )


def _closes_open_call(message: Message) -> bool:
    """Is this the note :func:`repair_tool_pairs` adds for a call without a result?"""
    return message == {
        "role": "tool", "tool_call_id": message.get("tool_call_id"), "content": DANGLING_RESULT
    }


def _canonical(message: Message) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


class Session:
    """One live conversation: its system prompt snapshot and window, backed by the store.

    ``id`` switches when a compression rotates the session (R-8.1); ``lineage`` lists every
    id it had; ``conversation_id`` stays the same across rotations (the id to map a
    framework's own session id to).  Messages are persisted the moment they are added, so a
    crash loses nothing.

    Several processes may hold the same conversation (gateway workers taking turns): before
    each write and each request the session compares the store's
    :class:`~hermes_host.store.WindowMarker` with what it wrote itself, and when another
    process appended, compressed, rotated or undid, it takes the window from the store (and
    follows a rotation to the new id) instead of writing to a stale one.
    """

    def __init__(
        self,
        host: ContextHost,
        session_id: str,
        system_prompt: str,
        window: list[Message],
        *,
        title: str | None = None,
        cwd: str | None = None,
        marker: WindowMarker | None = None,
        conversation_id: str | None = None,
    ) -> None:
        self.host = host
        self.id = session_id
        self.conversation_id = conversation_id or session_id
        """Stable across rotations: the conversation's first session id."""
        self.title = title
        self.cwd = cwd
        """The working directory recorded for the session; restoring it on resume is the
        front end's choice (``os.chdir(session.cwd)``, R-8.3)."""
        self.system_prompt = system_prompt
        self._window: list[Message] = list(window)
        self._turn_start = len(self._window)
        self.lineage: list[str] = [session_id]
        self.compression_count = 0
        self.compression_epoch = 0
        self.cache_violations = 0
        self.cache_checks = 0
        self.normalised = Normalisation()
        self.last_select: list[dict[str, Any]] = []
        self.last_prompt_tokens: int | None = None
        self._last_base: tuple[int, list[str]] | None = None
        self._last_base_messages: list[Message] = []
        self.events: list[str] = []
        self.on_event: Callable[[str], None] | None = None
        """Called with each user-facing line the moment it happens — e.g. the R-10.4
        "Compacting context" marker *before* the summariser runs, so a front end can show a
        "Summarizing…" state instead of a silent pause.  Exceptions it raises are ignored."""
        self._window_cache: tuple[tuple[int, int], list[Message], int] | None = None
        self._settled = True
        """False while the window may hold rows the marker does not cover (see _follow)."""
        self._unreleased: Lease | None = None
        """A lease whose release the store refused (a full disk): released first thing at
        the next compression pass, so it does not block this session for its whole TTL."""
        self._running = RunningTotal(counter=host.tokens)  # per message of the cached window
        # Read before ``window`` was (see ContextHost.resume): a write in between then shows
        # up as a difference at the next check instead of going unnoticed.
        self._marker = marker if marker is not None else host.store.window_marker(session_id)

    # -- other processes ----------------------------------------------------------------

    def _sync(self) -> None:
        """Take the window from the store if another process changed it since our last
        write (one indexed query when nothing changed)."""
        marker = self.host.store.window_marker(self.id)
        if marker != self._marker:
            self._follow(marker)

    def _follow(self, marker: WindowMarker) -> None:
        host, store = self.host, self.host.store
        previous = self.id
        window = store.active_messages(marker.session_id)
        self._settled = False
        for _ in range(_FOLLOW_TRIES):
            # The marker and the window are two reads: a write in between would put rows
            # in the window that the marker does not cover, and a compression's snapshot
            # (the marker) would then carry them over *and* keep the engine's copy.
            again = store.window_marker(marker.session_id)
            if again == marker:
                self._settled = True
                break
            marker = again
            window = store.active_messages(marker.session_id)
        if window and window[0].get("role") == "system":
            window = window[1:]  # stored by an import or an older front end: not the window
        row = store.get_session(marker.session_id)
        rewritten = window[: len(self._window)] != self._window
        self.id = row.id
        self.conversation_id = row.conversation_id or self.conversation_id
        self.title = row.title or self.title
        self.compression_count = row.compression_count
        if self.id != previous:
            self.lineage = store.lineage(self.id)
            if os.environ.get(SESSION_ENV) == previous:
                os.environ[SESSION_ENV] = self.id
        self._window = window
        self._turn_start = len(window) if rewritten else min(self._turn_start, len(window))
        if rewritten or self.id != previous:
            self.compression_epoch += 1  # like a compression here: the check restarts
        self._marker = marker
        change = f"now session {self.id}" if self.id != previous else "same session"
        self._emit(self.events, f"another process changed this conversation ({change}, "
                                f"{len(window)} messages in the window); continuing from the store")
        if self.id != previous:
            host._broadcast("on_session_switch", SessionEvent(
                session_id=self.id, previous_session_id=previous, reason="compression"
            ))

    def _published(self, result: PublishResult, window: list[Message]) -> None:
        """Our own publish: the marker it leaves, without asking the store (asking could
        absorb another process's write made in between).  ``window`` is what the publish
        left: the new window and the messages it carried over."""
        last = max([*result.message_ids, *result.carried_ids], default=0)
        if result.session_id == self._marker.session_id:  # archived rows stay the session's
            last = max(last, self._marker.last_message_id)
        self._marker = WindowMarker(result.session_id, last, len(window))

    # -- adding messages ----------------------------------------------------------------

    def add_message(self, message: Message) -> None:
        """Append one OpenAI-format message as is (every key kept) and persist it now.

        Raises :class:`~hermes_host.messages.MessageError` for a structurally invalid
        message; nothing is stored then."""
        validate_messages([message])
        if message.get("role") == "system":
            raise ValueError(
                "a system message cannot be added mid-session: the system prompt is frozen "
                "for prompt caching (R-1.3); open a new session instead"
            )
        self._sync()
        try:  # counted once: the window's own count finds it in the host's cache later
            counts: list[int] | None = [self.host.tokens.count(message)]
        except Exception:  # the store has its own fallback for a message tiktoken refuses
            counts = None
        store = self.host.store
        try:
            (new_id,) = store.append_messages(self.id, [message], token_counts=counts)
        except StaleSessionError:
            # Another process rotated the conversation between our check and this write:
            # the store refused it (nothing goes to a rotated parent); follow and write there.
            self._sync()
            (new_id,) = store.append_messages(self.id, [message], token_counts=counts)
        self._window.append(message)
        self._marker = WindowMarker(self.id, new_id, self._marker.active_count + 1)

    def add_user(self, content: str | list[dict[str, Any]]) -> None:
        self.add_message({"role": "user", "content": content})

    def add_assistant(
        self, content: str | None, tool_calls: Sequence[Mapping[str, Any]] | None = None
    ) -> None:
        message: Message = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [dict(c) for c in tool_calls]
        self.add_message(message)

    def add_tool_result(self, tool_call_id: str, content: str, name: str | None = None) -> None:
        message: Message = {"role": "tool", "tool_call_id": tool_call_id, "content": content}
        if name is not None:
            message["name"] = name
        self.add_message(message)

    # -- the window ---------------------------------------------------------------------

    @property
    def raw_window(self) -> list[Message]:
        """The window as stored (not normalised), without the system prompt."""
        return list(self._window)

    def window(self) -> list[Message]:
        """System prompt + normalised window, ``_`` metadata kept (what engines receive).

        Cached until the window changes; treat the returned messages as read-only.  The
        session never edits a stored message in place (it appends, or a compression
        replaces the window), so per-message token counts and the R-1.3 canonical forms are
        reused for messages equal to last turn's, and only new messages cost work."""
        key = (len(self._window), self.compression_epoch)
        if self._window_cache is None or self._window_cache[0] != key:
            merged, fixes, merges = list(self._window), 0, 0
            if _needs_repair(merged):
                merged, fixes = repair_tool_pairs(merged)
            if _needs_merge(merged):
                merged, merges = normalize_alternation(merged)
            self.normalised = Normalisation(merged_adjacent=merges, tool_pairs_repaired=fixes)
            head: list[Message] = (
                [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
            )
            built = head + merged
            self._window_cache = (key, built, self._count_window(built))
        return list(self._window_cache[1])

    def _count_window(self, built: list[Message]) -> int:
        """Tokens of ``built``, recounting only what changed since the last window: the
        unchanged prefix keeps its counts, so a turn costs O(new messages) in tokenising
        (equality of unchanged messages is a cheap identity-first comparison)."""
        previous = self._window_cache[1] if self._window_cache is not None else []
        same = 0
        for old, new in zip(previous, built, strict=False):
            if old != new:
                break
            same += 1
        self._running.truncate(same)
        self._running.extend(built[same:])
        return self._running.total

    @property
    def window_tokens(self) -> int:
        """Host-counted tokens of system prompt + normalised window."""
        self.window()
        assert self._window_cache is not None
        return self._window_cache[2]

    def _check_cache(self, base: list[Message]) -> bool:
        """R-1.3: the previous base (minus its open final message) must be a byte-identical
        prefix of ``base`` unless a compression was committed in between."""
        # A message equal to the one at the same place last time has the same canonical
        # form: reuse it, so the check serialises only what is new this turn.
        previous = self._last_base[1] if self._last_base is not None else []
        canon = [
            previous[i]
            if i < len(previous) and i < len(self._last_base_messages)
            and m == self._last_base_messages[i]
            else _canonical(m)
            for i, m in enumerate(base)
        ]
        self._last_base_messages = base
        ok = True
        if self._last_base is not None and self._last_base[0] == self.compression_epoch:
            prev = self._last_base[1]
            self.cache_checks += 1
            same_system = bool(prev) == bool(canon) and (not prev or prev[0] == canon[0])
            keep = prev[:-1] if len(prev) > 1 else prev[:1]
            ok = same_system and canon[: len(keep)] == keep
            if not ok:
                self.cache_violations += 1
        self._last_base = (self.compression_epoch, canon)
        return ok

    def build_request(
        self, injections: Iterable[Injection | str] | None = None
    ) -> list[Message]:
        """The wire-ready message list for the next model call.

        System prompt + normalised window → the ``select_context`` chain (fenced, fail open)
        → turn-scoped ``injections`` (used by this request only, never stored, R-2.2) →
        :func:`repair_tool_pairs` → :func:`sanitize_for_wire` (every ``_`` key removed).
        """
        self._sync()
        base = self.window()
        self._check_cache(base)
        selected = self._select(base)
        extras = list(injections or [])
        request = apply_injections(selected, extras) if extras else selected
        if request is not base:  # base is normalised already: only a changed list is scanned
            if _needs_repair(request):
                request, _ = repair_tool_pairs(request)
            if _needs_merge(request):
                request, _ = normalize_alternation(request)
        return sanitize_for_wire(request)

    def _select(self, base: list[Message]) -> list[Message]:
        host = self.host
        chain = host.chain("select_context")
        self.last_select = []
        if not chain:
            return base
        incoming = next((m for m in reversed(base) if m.get("role") == "user"), None)
        model = host.config.model
        budget = max(model.context_length // 2, model.context_length - model.max_output_tokens)
        try:
            history = host.store.history_reader(self.id)
            states = {name: host.store.get_engine_state(self.id, name) for name in chain}
        except StoreError:
            history, states = None, {}
        request = SelectRequest(
            session_id=self.id,
            messages=base,
            incoming_message=incoming,
            budget_tokens=budget,
            history=history,
        )
        result, stamps = host.runner.chain("select_context", chain, request, states=states)
        for stamp in stamps:
            if stamp.provenance.value == "none":
                continue  # the engine does not implement select_context, or left it as is
            entry: dict[str, Any] = {"engine": stamp.plugin, "provenance": str(stamp.provenance)}
            if stamp.adopted and isinstance(stamp.value, SelectResult):
                entry["decision"] = stamp.value.decision
                if stamp.value.state is not None:
                    try:
                        host.store.set_engine_state(self.id, stamp.plugin, stamp.value.state)
                    except (StoreError, TypeError, ValueError) as exc:
                        entry["state_error"] = str(exc)
            elif stamp.error:
                entry["error"] = stamp.error
            self.last_select.append(entry)
        return result.messages if result is not None else base

    # -- after a turn -------------------------------------------------------------------

    def end_turn(self, usage: Mapping[str, Any] | Any | None = None) -> TurnOutcome:
        """Finish a turn: record usage, ask ``should_compress`` (fenced; on failure the
        host's own threshold rule decides), and run the compression pass when due."""
        host = self.host
        self._sync()
        prompt_tokens = self._record_usage(usage)
        turn_messages = self._window[self._turn_start :]
        self._turn_start = len(self._window)
        host._broadcast("on_turn_complete", SessionEvent(
            session_id=self.id, reason="turn", messages=turn_messages
        ))
        base = self.window()
        tokens = self.window_tokens
        guards = self._guards()
        decision, decided_by = self._decide(base, tokens, prompt_tokens, guards)
        outcome = TurnOutcome(
            session_id=self.id, decision=decision, decided_by=decided_by, window_tokens=tokens
        )
        if decision.compress:
            report = self._compression_pass(force=False, events=outcome.events)
            outcome.compression = report
            outcome.session_id = self.id
            outcome.window_tokens = self.window_tokens
        self.events.extend(outcome.events)
        return outcome

    def _record_usage(self, usage: Mapping[str, Any] | Any | None) -> int | None:
        if usage is None:
            return None

        def get(name: str) -> int:
            value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            return int(value) if isinstance(value, int | float) else 0

        prompt = get("prompt_tokens") or get("input_tokens")
        self.host.store.add_usage(
            self.id,
            input_tokens=prompt,
            output_tokens=get("completion_tokens") or get("output_tokens"),
            cache_read_tokens=get("cache_read_tokens") or get("cache_read_input_tokens"),
            cache_write_tokens=get("cache_write_tokens") or get("cache_creation_input_tokens"),
            reasoning_tokens=get("reasoning_tokens"),
        )
        if prompt:
            self.last_prompt_tokens = prompt
            return prompt
        return None

    def _guards(self) -> GuardState:
        """The durable guards, re-read from the store before every decision (R-5.3)."""
        return self.host.store.read_guards(self.id).as_guard_state(time.time())

    def _decide(
        self, base: list[Message], tokens: int, prompt_tokens: int | None, guards: GuardState
    ) -> tuple[CompressDecision, str]:
        host = self.host
        model = host.config.model
        settings = host.config.compression
        chain = host.chain("should_compress")
        # Overflow, or a window grown materially since the last ineffective attempt:
        # anti-thrash yields for one more attempt (the cooldown does not; guards.rearmed).
        guards = guard_rules.rearmed(guards, tokens, model.context_length)
        if chain:
            request = ShouldCompressRequest(
                session_id=self.id,
                messages=base,
                prompt_tokens=prompt_tokens,
                current_tokens=tokens,
                context_length=model.context_length,
                max_output_tokens=model.max_output_tokens,
                model=model.name,
                compression_count=self.compression_count,
                guards=guards,
                compression=settings,
            )
            value, stamps = host.runner.first_result("should_compress", chain, request)
            if isinstance(value, CompressDecision):
                engine = next(s.plugin for s in stamps if s.adopted)
                blocked = guard_rules.blocked_reason(guards, tokens, model.context_length)
                if value.compress and blocked is not None:
                    # The durable guards bind every engine: never thrash or ignore a
                    # cooldown because an engine forgot to look.
                    return (
                        CompressDecision(
                            compress=False, reason=blocked, threshold_tokens=value.threshold_tokens
                        ),
                        f"engine:{engine}+guards",
                    )
                return value, f"engine:{engine}"
        effective = prompt_tokens or tokens
        return (
            guard_rules.host_decision(
                tokens=effective,
                context_length=model.context_length,
                settings=settings,
                guards=guards,
                model=model.name,
            ),
            "host",
        )

    # -- compression --------------------------------------------------------------------

    def compress(
        self,
        *,
        force: bool = True,
        focus: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
    ) -> CompressionReport:
        """Manual ``/compress`` (R-12.1): ``force`` clears the cooldown and the anti-thrash
        counters; ``focus`` favours a topic; ``keep_last_turns`` keeps exactly the last N
        user turns; ``preview`` computes the proposal without publishing it."""
        events: list[str] = []
        self._sync()
        report = self._compression_pass(
            force=force, focus=focus, keep_last_turns=keep_last_turns, preview=preview,
            events=events,
        )
        self.events.extend(events)
        return report

    def _compression_pass(
        self,
        *,
        force: bool,
        events: list[str],
        focus: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
    ) -> CompressionReport:
        host = self.host
        store = host.store
        settings = host.config.compression
        started = time.monotonic()
        deadline = started + settings.context_timeout_seconds
        base = self.window()
        tokens_before = self.window_tokens
        sid = self.id

        def report(status: ReportStatus, outcome: str, **kw: Any) -> CompressionReport:
            r = CompressionReport(
                status=status,
                outcome=outcome,
                tokens_before=tokens_before,
                tokens_after=kw.pop("tokens_after", tokens_before),
                session_id=self.id,
                duration=time.monotonic() - started,
                **kw,
            )
            if r.message:
                self._emit(events, r.message)
            return r

        chain = host.chain("compress")
        if not chain:
            return report(
                "rejected", "no_engine",
                message="compression skipped: no installed engine answers 'compress'",
            )
        self._release_unreleased(events)
        lease = store.acquire_lease(sid)
        if isinstance(lease, Deferred):
            # not an exhaustion, not a failure; the guards stay as they are.
            return report(
                "deferred", "compression_deferred", holder=lease.holder, message=lease.message
            )
        try:
            # The window is read under the lease: what another process appended since the
            # caller looked is in the snapshot the engine gets, and what it appends while the
            # engine works is carried over by the publish (``snapshot``), never dropped.
            compressions = self.compression_count
            self._sync()
            if self.id != sid or self.compression_count != compressions:
                return report(
                    "deferred", "compression_deferred",
                    message="compression skipped: another process compressed this "
                    f"conversation meanwhile (now session {self.id})",
                )
            if not self._settled:
                return report(
                    "deferred", "compression_deferred",
                    message="compression skipped: other processes kept writing to this "
                    "conversation while its window was read; the next turn tries again",
                )
            base = self.window()
            tokens_before = self.window_tokens
            snapshot = self._marker
            if not preview:
                self._emit(events, COMPACTING_MARKER)
            guards = self._guards()
            if force:
                guards = guard_rules.cleared_for_force(guards)
                if not preview:  # a preview changes nothing, not even the guards
                    store.write_guards(sid, Guards())

            def remaining(hook: str) -> float | None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                return min(host.runner.timeout_for(hook), left)

            memory_context = None
            budget = remaining("on_pre_compress")
            if budget is not None and host.providers:
                pre = PreCompressRequest(session_id=sid, messages=base, focus_topic=focus)
                texts = [
                    f.value.strip()
                    for f in host._broadcast("on_pre_compress", pre, timeout=budget)
                    if f.adopted and isinstance(f.value, str) and f.value.strip()
                ]
                memory_context = "\n\n".join(texts) or None

            budget = remaining("compress")
            if budget is None:
                return report(
                    "rejected", "timeout",
                    message="compression abandoned: compression.context_timeout_seconds "
                    "ran out before the engine was called; the session is unchanged",
                )
            request = CompressRequest(
                session_id=sid,
                messages=base,
                current_tokens=tokens_before,
                context_length=host.config.model.context_length,
                model=host.config.model.name,
                focus_topic=focus,
                force=force,
                memory_context=memory_context,
                compression_count=self.compression_count,
                keep_last_turns=keep_last_turns,
                today=_dt.date.today(),
                guards=guards,
                compression=settings,
                summarizer=host.config.summarizer,
            )
            value, stamps = host.runner.first_result("compress", chain, request, timeout=budget)
            if not isinstance(value, CompressResult):
                failed = [s for s in stamps if s.failed]
                if failed:
                    worst = failed[-1]
                    return report(
                        "rejected", str(worst.provenance.value),
                        engine=worst.plugin,
                        message=f"compression failed, session unchanged: {worst.error}",
                    )
                return report(
                    "not_committed", "declined",
                    message="compression declined: no engine proposed a compressed window",
                )
            engine = next(s.plugin for s in stamps if s.adopted)
            proposed = [dict(m) for m in value.messages]
            has_system = bool(proposed) and proposed[0].get("role") == "system"
            new_window = proposed[1:] if has_system else proposed
            while new_window and _closes_open_call(new_window[-1]):
                # The snapshot ended inside another writer's turn: its call is answered
                # later (the publish carries the answer over), so the note the window's
                # normalisation added for it is not stored (it is added again if needed).
                new_window.pop()
            tokens_after = host.tokens.count_all(
                ([base[0]] if base and base[0].get("role") == "system" else []) + new_window
            )
            # The fence already refused a proposal that breaks an invariant (stamped invalid).
            common: dict[str, Any] = {
                "engine": engine,
                "llm_calls": value.llm_calls,
                "notes": list(value.notes),
                "tokens_after": tokens_after,
            }
            if preview:
                return report("preview", value.outcome, proposed=proposed, **common)
            current = base[1:] if base and base[0].get("role") == "system" else base
            shrinks = tokens_after < tokens_before
            if not shrinks:
                # A "compression" that does not shrink the window is never worth a rotation;
                # the guards count it as ineffective, with the engine's outcome.
                common["notes"] = [*value.notes, "the proposal did not shrink the window"]
            if value.outcome not in _COMMITTING_OUTCOMES or new_window == current or not shrinks:
                self._update_guards(sid, guards, value, tokens_before, tokens_before)
                common["tokens_after"] = tokens_before
                notes = common["notes"]
                return report(
                    "not_committed", value.outcome,
                    message=f"compression not committed ({value.outcome}); "
                    + ("; ".join(notes) if notes else "the window is unchanged"),
                    **common,
                )
            if time.monotonic() > deadline:
                return report(
                    "rejected", "timeout", **{**common, "tokens_after": tokens_before},
                    message="compression discarded: it finished after "
                    "compression.context_timeout_seconds; the session is unchanged",
                )
            try:
                published = store.publish_compression(
                    lease, sid, new_window, mode=settings.mode, snapshot=snapshot
                )
            except StoreError as exc:
                # Lost lease, or another process already rotated this session: nothing was
                # written, so the live session stays exactly as it was.
                kind = "lease_lost" if isinstance(exc, LeaseLostError) else "store_refused"
                if isinstance(exc, StaleWindowError):
                    kind = "window_changed"
                return report(
                    "rejected", kind, **{**common, "tokens_after": tokens_before},
                    message=f"compression discarded, session unchanged: {exc}",
                )
            previous = self.id
            self._window = [*new_window, *published.carried]
            self._published(published, self._window)
            self.id = published.session_id
            if os.environ.get(SESSION_ENV) == previous:
                os.environ[SESSION_ENV] = self.id  # the exposed id follows the rotation
            self.title = published.title or self.title
            self._turn_start = len(self._window)
            self.compression_count += 1
            self.compression_epoch += 1
            if self.id != previous:
                self.lineage.append(self.id)
            self._update_guards(self.id, guards, value, tokens_before, tokens_after)
            if self.id != previous:
                host._broadcast("on_session_end", SessionEvent(
                    session_id=previous, reason="compression"
                ))
                host._broadcast("on_session_switch", SessionEvent(
                    session_id=self.id, previous_session_id=previous, reason="compression"
                ))
            self._emit(events, COMPACTED_MARKER)
            return report(
                "committed", value.outcome, previous_session_id=previous,
                published_messages=len(new_window), **common,
            )
        finally:
            self._release(lease, events)

    def _release(self, lease: Lease, events: list[str]) -> None:
        """Release the compression lease; a store that refuses even that (its disk is full)
        must not turn the pass's report into an exception: say so, and retry next pass."""
        try:
            self.host.store.release_lease(lease)
        except StoreError as exc:
            self._unreleased = lease
            self._emit(events, f"compression lease not released: {exc}; retried at the next "
                               "compression (it expires after store.lease_ttl_seconds anyway)")

    def _release_unreleased(self, events: list[str]) -> None:
        lease, self._unreleased = self._unreleased, None
        if lease is not None:
            self._release(lease, events)

    def _emit(self, events: list[str], line: str) -> None:
        events.append(line)
        if self.on_event is not None:
            try:
                self.on_event(line)
            except Exception:  # a front end's display bug must not break the turn
                pass

    def _update_guards(
        self,
        session_id: str,
        guards: GuardState,
        result: CompressResult,
        tokens_before: int,
        tokens_after: int,
    ) -> None:
        settings = self.host.config.compression
        updated = guard_rules.after_compression(
            guards,
            outcome=result.outcome,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            cooldown_seconds=result.cooldown_seconds or settings.cooldown_seconds,
            requested_cooldown=result.cooldown_seconds,
        )
        self.host.store.write_guards(
            session_id,
            Guards(
                cooldown_until=updated.cooldown_until,
                fallback_streak=updated.fallback_streak,
                ineffective_count=updated.ineffective_count,
                ineffective_tokens=updated.ineffective_tokens,
            ),
        )

    def status(self) -> dict[str, Any]:
        """What ``/status`` shows (R-12.1): session, model, tokens and context use, guards,
        lineage, the invariant counters, and ``engine_problems``: the rows of
        :meth:`ContextHost.engine_health` with a problem.  JSON-ready."""
        host = self.host
        model = host.config.model
        tokens = self.window_tokens
        guards = self._guards()
        decision = guard_rules.host_decision(
            tokens=tokens, context_length=model.context_length,
            settings=host.config.compression, guards=guards, model=model.name,
        )
        return {
            "session_id": self.id,
            "conversation_id": self.conversation_id,
            "title": self.title,
            "model": model.name,
            "window_tokens": tokens,
            "context_length": model.context_length,
            "context_used": round(tokens / model.context_length, 4),
            "threshold_tokens": decision.threshold_tokens,
            "blocked": guard_rules.blocked_reason(guards, tokens, model.context_length),
            "messages": len(self._window),
            "compression_count": self.compression_count,
            "lineage": list(self.lineage),
            "guards": {
                "cooldown_until": guards.cooldown_until,
                "fallback_streak": guards.fallback_streak,
                "ineffective_count": guards.ineffective_count,
                "ineffective_tokens": guards.ineffective_tokens,
            },
            "normalised": self.normalised.as_dict(),
            "cache_violations": self.cache_violations,
            "engines": {hook: host.chain(hook) for hook in ("should_compress", "compress",
                                                            "select_context")},
            "memory_providers": host.providers,
            "engine_problems": [row for row in host.engine_health() if row["problems"]],
            "tokenizer": encoding_info(model.name),
        }

    def undo(self, turns: int = 1) -> int:
        """``/undo [N]``: take the last ``turns`` user turns out of the window; returns how
        many messages left it.  Their rows are archived in the store (``active=0``, still
        searchable), never deleted; the rows that stay keep their ids (nothing is
        copied).  Like a compression, this is a deliberate rewrite of past context, so the
        prompt-cache check restarts after it."""
        if turns < 1:
            raise ValueError("undo needs at least one turn")
        self._sync()
        starts = turn_starts(self._window)  # a user-role summary block is not a turn
        if not starts:
            return 0
        cut = starts[-min(turns, len(starts))]
        kept = self._window[:cut]
        store = self.host.store
        lease = store.acquire_lease(self.id)
        if isinstance(lease, Deferred):
            raise StoreError(f"cannot undo now: {lease.message}")
        try:
            published = store.publish_compression(
                lease, self.id, kept, mode="in_place", reason="undo", snapshot=self._marker
            )
        finally:
            store.release_lease(lease)
        removed = len(self._window) - cut
        self._window = [*kept, *published.carried]
        self._published(published, self._window)
        self._turn_start = min(self._turn_start, len(self._window))
        self.compression_epoch += 1
        return removed

    def branch(self, title: str | None = None) -> Session:
        """``/branch [name]``: a new session that starts from a copy of this window (same
        system prompt), linked to this one as its parent; this session is left as it is."""
        host = self.host
        row = host.store.get_session(self.id)
        child = host.store.create_session(
            source=row.source, user_id=row.user_id, model=row.model,
            model_config=dict(row.model_config), system_prompt=self.system_prompt,
            parent_session_id=self.id, title=title, cwd=row.cwd, goal=row.goal,
        )
        if self._window:
            host.store.append_messages(child.id, self._window)
        fork = Session(host, child.id, self.system_prompt, list(self._window),
                       title=child.title, cwd=child.cwd, conversation_id=child.conversation_id)
        fork.lineage = [*self.lineage, child.id]
        host._broadcast("on_session_switch", SessionEvent(
            session_id=child.id, previous_session_id=self.id, reason="branch"
        ))
        return fork

    def set_title(self, title: str) -> None:
        """``/title name``.  Raises :class:`~hermes_host.store.TitleConflictError` when
        another session has it (titles are unique)."""
        self.title = self.host.store.update_session(self.id, title=title).title

    def export_id(self) -> None:
        """Expose this session's id as ``$HERMES_HOST_SESSION_ID`` to the process and the
        tools it starts; a rotation keeps it current (R-8.1)."""
        os.environ[SESSION_ENV] = self.id

    # -- reset --------------------------------------------------------------------------

    def reset_due(self, now: float | None = None) -> str | None:
        """``"idle"`` / ``"daily"`` when ``session_reset`` says this session is stale."""
        row = self.host.store.get_session(self.id)
        return reset_due(self.host.config.session_reset, row.last_activity_at, now)

    def reset(
        self, reason: str = "new", *, title: str | None = None, system_prompt: str | None = None
    ) -> Session:
        """``/new``: end this session and open a fresh one (all compression state starts
        over).  Memory providers get ``on_session_reset`` first, so they can save what
        matters.  The old session stays in the store."""
        host = self.host
        row = host.store.get_session(self.id)
        host._broadcast("on_session_reset", SessionEvent(
            session_id=self.id, reason=reason, user_id=row.user_id,
            messages=self.window(), cwd=row.cwd,
        ))
        host._broadcast("on_session_end", SessionEvent(session_id=self.id, reason=reason))
        host.store.end_session(self.id, reason)
        if system_prompt is None:
            # The snapshot already holds the memory blocks; start again from the prompt the
            # caller gave, so fresh memory is appended once.
            base = row.model_config.get("base_system_prompt", row.system_prompt or "")
            system_prompt = str(base)
        return host.open_session(title, system_prompt, user_id=row.user_id, cwd=row.cwd)

    # -- misc ---------------------------------------------------------------------------

    def open_calls(self) -> list[str]:
        """Tool call ids of the window still waiting for their result."""
        pending: list[str] = []
        for message in self._window:
            if message.get("role") == "tool":
                if message.get("tool_call_id") in pending:
                    pending.remove(message["tool_call_id"])
            else:
                pending = tool_call_ids(message) if message.get("role") == "assistant" else []
        return pending

