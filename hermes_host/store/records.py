"""The store's records: what ``StateStore`` methods return and take — sessions, guards,
stored messages, search hits, leases, deferrals, publish results, window markers (SPEC R-9).
Re-exported by :mod:`hermes_host.store.base` and :mod:`hermes_host.store`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_host.models import GuardState, Message

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Conversation",
    "Deferred",
    "Guards",
    "Lease",
    "PublishMode",
    "PublishResult",
    "SearchHit",
    "Session",
    "StoredMessage",
    "WindowMarker",
]

PublishMode = Literal["rotate", "in_place"]


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
    compares it with what it wrote itself to notice another process's writes.

    ``active_count`` alone can match by chance after several writes (issue 31: another
    process compressed in place and appended as many rows as it archived, in the gap
    between a session's check and its own append); ``active_id_sum`` cannot: every row
    added since has a higher id than every row archived since, so equal counts with equal
    id sums mean the same rows."""

    session_id: str
    """The tip of the rotations from the session asked about (that session if not rotated)."""
    last_message_id: int
    """Highest message id of that session, archived rows included (0 if none)."""
    active_count: int
    """Messages in its window."""
    active_id_sum: int = 0
    """The sum of their row ids (see above)."""
