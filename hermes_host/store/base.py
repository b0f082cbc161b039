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

This module holds the protocol; the errors live in :mod:`hermes_host.store.errors` and the
records it returns in :mod:`hermes_host.store.records` (both re-exported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hermes_host.models import HistoryReader, Message
from hermes_host.store.errors import (
    LeaseLostError,
    SchemaTooNewError,
    SessionNotFoundError,
    StaleSessionError,
    StaleWindowError,
    StoreError,
    TitleConflictError,
)
from hermes_host.store.records import (
    DEFAULT_LEASE_TTL,
    Conversation,
    Deferred,
    Guards,
    Lease,
    PublishMode,
    PublishResult,
    SearchHit,
    Session,
    StoredMessage,
    WindowMarker,
)

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Conversation",
    "CountedWindowStore",
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
    "WindowMarker",
]


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


@runtime_checkable
class CountedWindowStore(Protocol):
    """A store that hands the window with the ``token_count`` it stored for each row (the
    SQLite store does).  Optional: without it a resumed session counts its window itself;
    with it, a message the session's window holds unchanged keeps the count the store made
    when it was written, instead of being tokenised again (issue 32)."""

    def active_messages_counted(self, session_id: str) -> tuple[list[Message], list[int]]:
        """:meth:`StateStore.active_messages` and, in the same order, each row's stored
        ``token_count`` (counted with the default encoding, or passed by the writer)."""
        ...
