"""The ``StateStore`` protocol: the one place the host keeps the truth (SPEC R-1.2, R-9).

The host owns the store; engines never touch it (they get a read-only
:class:`~hermes_host.models.HistoryReader` at most).  Everything a process needs to agree on
with other processes — the message history, the durable guards (R-5.3), the per-session
compression lease (R-9.4) — lives here, so two gateways working on one ``state.db`` see the
same facts.

Vocabulary (SPEC): the *window* is the session's active rows (``active=1``) in window order;
a *lineage* is the chain of sessions linked by ``parent_session_id`` (rotation, R-8.1); the
*conversation* is the part of a lineage that rotations made, under one stable
``conversation_id`` (the root's id: what a framework's own session id maps to); a *lease* is
the durable per-session lock that makes "never two compressions of one session at once" true
across processes.

Every stored message is one row, stored once.  A rotation moves the rows the new window
keeps into the child (their ids do not change) and archives the rows the compression
replaced in the parent (``active=0, compacted=1``); an in-place publish or ``/undo`` archives
only the rows it replaced.  Nothing is appended to a rotated parent: ``append_messages``
refuses it with :class:`StaleSessionError`.

Every method raises :class:`StoreError` (or a subclass) with a user-facing message; nothing in
this module leaks a raw ``sqlite3`` traceback to a caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hermes_host.models import GuardState, HistoryReader, Message

__all__ = [
    "Conversation",
    "Deferred",
    "Guards",
    "Lease",
    "LeaseLostError",
    "PublishMode",
    "PublishResult",
    "SchemaTooNewError",
    "SearchHit",
    "Session",
    "SessionNotFoundError",
    "StaleSessionError",
    "StaleWindowError",
    "StateStore",
    "StoreError",
    "StoredMessage",
    "TitleConflictError",
]

PublishMode = Literal["rotate", "in_place"]


# --------------------------------------------------------------------------- errors


class StoreError(Exception):
    """Any store failure.  ``str()`` is a complete, user-facing message (no traceback needed):
    it names the store file and what to do when that is known."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer hermes-host (its schema version is higher than the
    newest this code knows).  Refused rather than guessed at, so no data is damaged."""


class LeaseLostError(StoreError):
    """The compression lease is no longer held by this holder (expired and reclaimed, or
    released).  Raised by ``publish_compression``/``refresh_lease``; nothing was changed."""


class SessionNotFoundError(StoreError):
    """No session matches the given id, title or ``last``."""


class StaleSessionError(LeaseLostError):
    """The session was already compressed into a child (rotate) by another path; publishing
    to it again would fork the lineage.  Like a lost lease, nothing was changed (hence the
    subclass).  Work on the newest session (``resume`` follows rotations)."""


class StaleWindowError(LeaseLostError):
    """The window changed since the compression read it in a way a publish cannot carry over
    (rows were archived or rewritten by a writer that did not hold the lease).  Nothing was
    changed; compress again from the current window."""


class TitleConflictError(StoreError):
    """Another session already has this title (titles are unique, R-9.1)."""


# --------------------------------------------------------------------------- records


DEFAULT_LEASE_TTL = 300.0
"""Seconds a compression lease lives without refresh (config ``store.lease_ttl_seconds``)."""


@dataclass(frozen=True)
class Guards:
    """The durable guard columns of a session (R-5.3), re-read before every decision."""

    cooldown_until: float | None = None
    """Unix time before which automatic compression is suppressed (R-5.1)."""
    fallback_streak: int = 0
    """Consecutive compressions that used the fallback path (R-5.2)."""
    ineffective_count: int = 0
    """Consecutive compressions that saved < 10 % or were no-ops (R-5.2, R-6.7)."""
    ineffective_tokens: int | None = None
    """The window's tokens at the last ineffective attempt: anti-thrash re-arms once the
    window has grown materially past it (:func:`hermes_host.guards.rearmed`)."""

    def as_guard_state(self, now: float) -> GuardState:
        """The hook-facing form, stamped with the host's clock."""
        return GuardState(
            cooldown_until=self.cooldown_until,
            fallback_streak=self.fallback_streak,
            ineffective_count=self.ineffective_count,
            ineffective_tokens=self.ineffective_tokens,
            now=now,
        )


@dataclass(frozen=True)
class Session:
    """One row of ``sessions`` (R-9.1)."""

    id: str
    created_at: float
    last_activity_at: float
    source: str | None = None
    user_id: str | None = None
    session_key: str | None = None
    chat_id: str | None = None
    chat_type: str | None = None
    thread_id: str | None = None
    model: str | None = None
    model_config: dict[str, Any] = field(default_factory=dict)
    system_prompt: str | None = None
    parent_session_id: str | None = None
    conversation_id: str | None = None
    """The conversation this session belongs to: the id of the session that started it,
    the same for every session its rotations made (a branch or an import starts its own)."""
    title: str | None = None
    cwd: str | None = None
    """The recorded working directory, restored on resume (R-8.3)."""
    goal: str | None = None
    """A persistent goal; migrates to a rotated child (R-8.1)."""
    ended_at: float | None = None
    end_reason: str | None = None
    """Why the session ended, e.g. ``"compression"`` for a rotated parent."""
    archived: bool = False
    pinned: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    compression_count: int = 0
    """Compressions already published in this lineage (carried to a rotated child)."""
    guards: Guards = field(default_factory=Guards)
    message_count: int = 0
    """Stored messages of this session (active and archived)."""
    active_count: int = 0
    """Messages in the window (``active=1``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for ``--json`` output)."""
        from dataclasses import asdict

        return asdict(self)


@dataclass(frozen=True)
class Conversation:
    """One row of ``sessions list``: a conversation, shown by its newest session."""

    id: str
    """The conversation id (its first session's id)."""
    tip: Session
    """The newest session of the conversation: the one that holds the live window."""
    sessions: int
    """Sessions in the conversation (1 + rotations)."""
    message_count: int
    """Stored messages of the whole conversation, each counted once."""
    input_tokens: int = 0
    output_tokens: int = 0
    """Provider-reported usage summed over the conversation's sessions."""

    @property
    def rotations(self) -> int:
        return self.sessions - 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the tip session's fields plus ``conversation_id``, ``sessions``,
        ``rotations`` and ``conversation_messages``."""
        return {
            **self.tip.to_dict(),
            "conversation_id": self.id,
            "sessions": self.sessions,
            "rotations": self.rotations,
            "conversation_messages": self.message_count,
            "conversation_input_tokens": self.input_tokens,
            "conversation_output_tokens": self.output_tokens,
        }


@dataclass(frozen=True)
class StoredMessage:
    """A message as stored: the original dict (verbatim, ``_`` metadata included) plus the
    store's own bookkeeping."""

    id: int
    session_id: str
    message: Message
    active: bool
    compacted: bool
    """True when a compaction superseded this row (in-place archive, R-8.2)."""
    token_count: int
    timestamp: float

    @property
    def role(self) -> str:
        return str(self.message.get("role", ""))


@dataclass(frozen=True)
class SearchHit:
    """One ``session_search`` result: the hit plus its bookends (R-13.3) — the messages just
    before it (usually the goal/question) and just after it (usually the conclusion)."""

    message_id: int
    session_id: str
    role: str
    content: str
    """Searchable text of the hit (text parts joined)."""
    score: float
    """BM25 rank; lower is better.  Trigram-only hits rank after porter hits."""
    active: bool
    timestamp: float
    before: list[StoredMessage] = field(default_factory=list)
    after: list[StoredMessage] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The dict shape ``HistoryReader.search`` promises, plus the bookends."""

        def _m(sm: StoredMessage) -> dict[str, Any]:
            return {"message_id": sm.id, "active": sm.active, **sm.message}

        return {
            "message_id": self.message_id,
            "session_id": self.session_id,
            "role": self.role,
            "content": self.content,
            "score": self.score,
            "active": self.active,
            "timestamp": self.timestamp,
            "before": [_m(m) for m in self.before],
            "after": [_m(m) for m in self.after],
        }


@dataclass(frozen=True)
class Lease:
    """A held per-session compression lease (R-9.4).  ``holder`` is
    ``pid:<pid>/host:<hostname>/nonce:<hex>`` and is unique per acquisition."""

    session_id: str
    holder: str
    acquired_at: float
    expires_at: float


@dataclass(frozen=True)
class Deferred:
    """``acquire_lease`` lost the race: another path is compressing this session (R-10.1).
    Not an error — the turn records ``compression_deferred`` and tells the user who holds it."""

    session_id: str
    holder: str
    expires_at: float

    @property
    def message(self) -> str:
        return (
            f"compression deferred: session {self.session_id} is being compressed by {self.holder}"
        )


@dataclass(frozen=True)
class PublishResult:
    """What ``publish_compression`` committed."""

    session_id: str
    """The session that now holds the window: a new child id (rotate) or the same id."""
    parent_session_id: str | None
    """The rotated-from session (rotate), else the session's existing parent."""
    message_ids: list[int]
    """Ids of the new window's rows, in window order: rows it kept from the old window keep
    their ids, the others (a summary …) are new."""
    mode: PublishMode = "rotate"
    title: str | None = None
    flush_baseline: int = 0
    """How many messages of the new window are already persisted (``len(new_messages)``).
    A later flush in the same turn appends only ``window[flush_baseline:]`` (R-8.2)."""
    carried: list[Message] = field(default_factory=list)
    """Messages another writer appended after the ``snapshot`` the compression read: they were
    not compressed, and now follow the new window (in their order, after ``message_ids``)."""
    carried_ids: list[int] = field(default_factory=list)
    """Their row ids (unchanged)."""


@dataclass(frozen=True)
class WindowMarker:
    """Where a conversation's window is now, and a fingerprint of it (``window_marker``).

    Any write to the window by any process changes it: an append or an in-place publish
    raises ``last_message_id``, archiving rows (``/undo``) lowers ``active_count``, and a
    rotation moves ``session_id`` to the newest child.  A live :class:`hermes_host.host.Session`
    compares it with what it wrote itself to notice another process's writes."""

    session_id: str
    """The tip of the rotations from the session asked about (that session if not rotated)."""
    last_message_id: int
    """Highest message id of that session, archived rows included (0 if none)."""
    active_count: int
    """Messages in its window."""


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class StateStore(Protocol):
    """Sessions, messages, FTS search, leases, durable guards and compression publishing.

    Implementations: :class:`hermes_host.store.sqlite.SQLiteStore` (default, one file).
    Instances are safe to share between threads of one process (each thread gets its own
    connection); each process opens its own store.
    """

    location: str
    """Where the store lives (a file path for SQLite), for messages and ``--json`` output."""

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        *,
        session_id: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_key: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        model_config: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        cwd: str | None = None,
        goal: str | None = None,
    ) -> Session:
        """Create a session (id ``YYYYmmdd_HHMMSS_<6 hex>`` unless given).  Raises
        :class:`TitleConflictError` for a taken title, :class:`SessionNotFoundError` for an
        unknown parent."""
        ...

    def get_session(self, session_id: str) -> Session:
        """The session, or :class:`SessionNotFoundError`."""
        ...

    def list_conversations(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Conversation]:
        """Conversations (one per lineage of rotations, shown by its newest session), most
        recent activity first; the filters apply to the newest session."""
        ...

    def list_sessions(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Session]:
        """Sessions, most recent activity first."""
        ...

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        cwd: str | None = None,
        goal: str | None = None,
        model: str | None = None,
        model_config: dict[str, Any] | None = None,
        archived: bool | None = None,
        pinned: bool | None = None,
    ) -> Session:
        """Change the given fields (``None`` = unchanged) and return the updated row."""
        ...

    def end_session(self, session_id: str, reason: str) -> None:
        """Mark the session ended (``ended_at``, ``end_reason``)."""
        ...

    def lineage(self, session_id: str) -> list[str]:
        """Ids from the root ancestor to ``session_id`` (root first, ``session_id`` last)."""
        ...

    # -- messages ---------------------------------------------------------------------------

    def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None = None,
    ) -> list[int]:
        """Append to the window in one transaction; returns the new row ids in order.  A
        session a compression rotated is refused with :class:`StaleSessionError` (nothing is
        written): append to its newest descendant (``window_marker`` names it).  Every
        key of every message is kept verbatim (``_`` metadata included).  Token counts come
        from :func:`hermes_host.tokens.count_message` unless the caller, who usually counted
        already, passes ``token_counts`` (one per message)."""
        ...

    def active_messages(self, session_id: str) -> list[Message]:
        """The window: active rows in window order, as the original dicts (empty for a
        session a compression rotated: its window lives on in the child)."""
        ...

    def active_token_count(self, session_id: str) -> int:
        """Sum of stored ``token_count`` over the window (cheap running total)."""
        ...

    def window_marker(self, session_id: str) -> WindowMarker:
        """Follow ``session_id``'s compression rotations to the newest session and return its
        :class:`WindowMarker`: cheap enough to ask before every write of a turn."""
        ...

    def all_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        """Every stored row of this one session, with bookkeeping, in window order (archived
        rows before the window that replaced them).  A rotation moves the rows it kept to
        the child, so the conversation's rows are those of its sessions together."""
        ...

    # -- guards and usage -------------------------------------------------------------------

    def read_guards(self, session_id: str) -> Guards:
        """The durable guards, read fresh from the store (R-5.3)."""
        ...

    def write_guards(self, session_id: str, guards: Guards) -> None:
        """Replace the three guard columns."""
        ...

    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        """Add provider-reported usage to the five token counters and the cost."""
        ...

    # -- leases (R-9.4, R-10.1) -------------------------------------------------------------

    def acquire_lease(self, session_id: str, ttl: float | None = None) -> Lease | Deferred:
        """Take the session's compression lease, reclaiming an expired or dead-holder row.
        Contention returns :class:`Deferred`, never raises."""
        ...

    def refresh_lease(self, lease: Lease, ttl: float | None = None) -> Lease:
        """Extend a held lease; :class:`LeaseLostError` if it is no longer ours."""
        ...

    def release_lease(self, lease: Lease) -> bool:
        """Drop the lease if still ours; ``False`` when it was already gone."""
        ...

    # -- compression (R-8.1, R-8.2) ---------------------------------------------------------

    def publish_compression(
        self,
        lease: Lease,
        session_id: str,
        new_messages: Sequence[Message],
        mode: PublishMode = "rotate",
        reason: str = "compression",
        token_counts: Sequence[int] | None = None,
        snapshot: WindowMarker | None = None,
    ) -> PublishResult:
        """Commit a compressed window in one transaction, verifying the lease inside it.

        A message of ``new_messages`` equal to a row of the current window *is* that row
        (stored once, id kept); the others are written.  Rows of the window the new one does
        not keep are archived (``active=0``, still searchable; ``compacted`` when ``reason``
        is ``"compression"``).  ``rotate``: a child session gets the window (the kept rows
        move there), the parent is linked and ended with ``reason``; title numbered, goal,
        guards, cwd and the conversation id carried.  ``in_place``: the same session keeps
        the id.

        ``snapshot`` is the :class:`WindowMarker` of the window the engine read.  Rows
        appended after it (by another process, while the engine worked) were never
        compressed: they are neither archived nor dropped but follow the new window, in
        order (``PublishResult.carried``).  A window that changed otherwise since the
        snapshot raises :class:`StaleWindowError`.  Without ``snapshot`` every active row
        is taken as read.  A lost lease raises :class:`LeaseLostError` and changes nothing.
        The lease is not released; call :meth:`release_lease`.
        """
        ...

    # -- search, resume ---------------------------------------------------------------------

    def session_search(
        self,
        query: str,
        session_id: str | None = None,
        lineage: bool = True,
        limit: int = 10,
    ) -> list[SearchHit]:
        """Full-text search over both FTS indexes, with bookends; no LLM (R-13.3).  Any user
        text is safe: it is quoted, never passed raw to ``MATCH``."""
        ...

    def resume(self, by: str) -> Session:
        """The session for ``by``: an id, ``"last"`` (most recent activity) or a title (the
        newest of its lineage, so ``my project`` finds ``my project #3``)."""
        ...

    def recap(self, session_id: str) -> str:
        """A compact recap for resume (R-8.3): last 10 turns, user text ≤ 300 chars,
        assistant ≤ 200 chars / 3 lines, tool calls folded into counts."""
        ...

    def history_reader(self, session_id: str) -> HistoryReader:
        """Read-only view of the session's lineage for ``select_context`` engines."""
        ...

    # -- engine state -----------------------------------------------------------------------

    def get_engine_state(self, session_id: str, engine: str) -> dict[str, Any]:
        """The state an engine returned last time (``SelectResult.state``), or ``{}``."""
        ...

    def set_engine_state(self, session_id: str, engine: str, state: dict[str, Any]) -> None:
        """Persist an engine's JSON-serialisable state for this session."""
        ...

    def close(self) -> None:
        """Close every connection this store opened."""
        ...
