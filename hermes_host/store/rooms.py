"""What every backend's rooms share (issue 15): the session rules of ``create``, ``list``,
``update`` and ``resume`` (R-8.3, R-9.1), the window marker's rotation rule and a publish's
checks (R-8.1, R-9.4), written once over a few one-query hooks.

A backend subclasses :class:`SharedRooms` with its connection type and writes the hooks (the
methods that raise :class:`NotImplementedError` here) in its own SQL; the flows and the
wording are here.  Publishing's plain-Python planning is in :mod:`hermes_host.store.rules`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from hermes_host.models import Message
from hermes_host.store.errors import (
    LeaseLostError,
    SessionNotFoundError,
    StaleSessionError,
    StoreError,
    TitleConflictError,
)
from hermes_host.store.ids import new_session_id
from hermes_host.store.records import Conversation, Lease, Session, WindowMarker
from hermes_host.store.rules import (
    Prepared,
    lost_lease_message,
    next_title,
    numbered_titles,
    prepare_messages,
    rotated_message,
    title_base,
)

__all__ = [
    "ROTATION_TIP",
    "SharedRooms",
    "conversation",
    "listing",
    "session_changes",
    "title_conflict",
]

C = TypeVar("C")

ROTATION_TIP = (  # the newest session of its conversation: no rotation child of its own
    "NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id "
    "AND c.conversation_id = s.conversation_id)"
)
"""The clause that keeps, of the ``sessions s`` a listing reads, each conversation's tip."""


def listing(
    clauses: list[str],
    *,
    include_archived: bool,
    source: str | None,
    user_id: str | None,
    limit: int,
    offset: int,
    mark: str,
    not_archived: str,
) -> tuple[str, list[Any]]:
    """The ``WHERE … ORDER BY … LIMIT … OFFSET`` of a session listing over ``sessions s``
    and its parameters: ``clauses`` plus the filters, newest activity first.  ``mark`` is
    the backend's placeholder, ``not_archived`` its clause for an unarchived session."""
    params: list[Any] = []
    if not include_archived:
        clauses.append(not_archived)
    for column, value in (("source", source), ("user_id", user_id)):
        if value is not None:
            clauses.append(f"s.{column} = {mark}")
            params.append(value)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    where += f" ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT {mark} OFFSET {mark}"
    return where, [*params, max(0, int(limit)), max(0, int(offset))]


def title_conflict(title: str | None, owner: str | None = None) -> TitleConflictError:
    """``title`` is taken, by session ``owner`` (or by one that is not known)."""
    by = f"session {owner}" if owner is not None else "another session"
    return TitleConflictError(f"the title {title!r} is already used by {by}; choose another")


def conversation(tip: Session, totals: Sequence[Any]) -> Conversation:
    """The :class:`Conversation` of its newest session and its ``(sessions, messages,
    input tokens, output tokens)`` totals."""
    sessions, messages, tokens_in, tokens_out = totals
    return Conversation(tip.conversation_id or tip.id, tip, max(1, int(sessions)),
                        int(messages), int(tokens_in), int(tokens_out))


def session_changes(
    *,
    title: str | None,
    cwd: str | None,
    goal: str | None,
    model: str | None,
    model_config: dict[str, Any] | None,
    archived: bool | None,
    pinned: bool | None,
) -> dict[str, Any]:
    """The ``sessions`` columns an ``update_session`` sets, with their stored values (column
    names from this fixed list only, never from input)."""
    changes: dict[str, Any] = {}
    for column, value in (("title", title), ("cwd", cwd), ("goal", goal), ("model", model)):
        if value is not None:
            changes[column] = value
    if model_config is not None:
        changes["model_config"] = json.dumps(model_config, ensure_ascii=False)
    for flag, on in (("archived", archived), ("pinned", pinned)):
        if on is not None:
            changes[flag] = bool(on)
    return changes


class SharedRooms(Generic[C]):
    """The shared rules of a backend whose connections are of type ``C`` (the base of its
    ``_base`` room)."""

    location: str
    """Where the store is, as its messages name it (a path, or a URL without password)."""

    # -- hooks: the backend's own SQL -------------------------------------------------------

    def _exists(self, conn: C, session_id: str) -> bool:
        raise NotImplementedError

    def _title_owner(self, conn: C, title: str) -> str | None:
        """The id of the session titled exactly ``title``."""
        raise NotImplementedError

    def _last_active(self, conn: C) -> str | None:
        """The unarchived session of the most recent activity."""
        raise NotImplementedError

    def _titled_rows(self, conn: C, prefix: str) -> Sequence[tuple[str, str]]:
        """``(id, title)`` of the sessions whose title starts with ``prefix``."""
        raise NotImplementedError

    def _tip(self, conn: C, session_id: str) -> str:
        """Follow compression rotations to the newest session of the lineage."""
        raise NotImplementedError

    def _marker_row(self, conn: C, session_id: str) -> Sequence[Any] | None:
        """``(end_reason, max message id or 0, active row count, sum of active row ids)`` of
        the session."""
        raise NotImplementedError

    def _holder(self, conn: C, session_id: str) -> str | None:
        """Who holds the session's compression lease row now."""
        raise NotImplementedError

    def _window_counts(self, session_id: str, size: int) -> dict[tuple[Any, ...], int]:
        """Token counts of the window's head and tail rows (``size`` each: a compressed
        window keeps a head and a tail), keyed by their column values."""
        raise NotImplementedError

    # -- rules ------------------------------------------------------------------------------

    def _missing(self, session_id: str) -> SessionNotFoundError:
        return SessionNotFoundError(f"no session with id {session_id!r} in {self.location}")

    def _require(self, conn: C, session_id: str) -> None:
        if not self._exists(conn, session_id):
            raise self._missing(session_id)

    def _fresh_id(self, conn: C) -> str:
        while True:
            sid = new_session_id()
            if not self._exists(conn, sid):
                return sid

    def _check_title_free(self, conn: C, title: str, owner: str | None) -> None:
        found = self._title_owner(conn, title)
        if found is not None and found != owner:
            raise title_conflict(title, found)

    def _new_session_id(
        self, conn: C, session_id: str | None, title: str | None, parent_session_id: str | None
    ) -> str:
        """The id a ``create_session`` writes, after checking its title, parent and id."""
        if title is not None:
            self._check_title_free(conn, title, None)
        if parent_session_id is not None:
            self._require(conn, parent_session_id)
        sid = session_id or self._fresh_id(conn)
        if session_id is not None and self._exists(conn, session_id):
            raise StoreError(f"a session with id {session_id!r} already exists")
        return sid

    def _numbered(self, conn: C, base: str) -> list[tuple[int, str]]:
        """``(N, session id)`` of every session titled ``base #N``: a lineage's rotations."""
        return numbered_titles(base, self._titled_rows(conn, base + " #"))

    def _next_title(self, conn: C, title: str) -> str:
        """``name`` → ``name #2`` → ``name #3`` (R-8.1), skipping numbers already taken."""
        base = title_base(title)
        return next_title(base, self._numbered(conn, base))

    def _rotated(self, conn: C, session_id: str, outcome: str) -> str:
        """Why a session a compression rotated takes no more writes."""
        return rotated_message(session_id, self._tip(conn, session_id), outcome)

    def _marker(self, conn: C, session_id: str) -> WindowMarker:
        """The :class:`WindowMarker` of ``session_id``'s window, or of the newest session of
        its lineage once a compression rotated it."""
        tip = session_id
        for _ in range(2):  # a second pass only after following a rotation
            row = self._marker_row(conn, tip)
            if row is None:
                raise self._missing(tip)
            if row[0] != "compression" or tip != session_id:
                break
            tip = self._tip(conn, session_id)
        assert row is not None
        return WindowMarker(tip, last_message_id=int(row[1]), active_count=int(row[2]),
                            active_id_sum=int(row[3]))

    def _lost_message(self, conn: C, lease: Lease, doing: str) -> str:
        return lost_lease_message(
            lease.session_id, lease.holder, self._holder(conn, lease.session_id), doing)

    def _check_lease(self, conn: C, lease: Lease, session_id: str, held: str | None) -> None:
        """:class:`LeaseLostError` unless ``lease`` is of ``session_id`` and ``held`` (the
        lease row's holder, read in the publishing transaction) is its holder."""
        if lease.session_id != session_id or held != lease.holder:
            raise LeaseLostError(self._lost_message(conn, lease, "publish the compression"))

    def _check_live(self, conn: C, session_id: str, row: Sequence[Any] | None) -> None:
        """A publish's checks of the session's ``(…, end_reason)`` row: it exists and no
        compression rotated it yet."""
        if row is None:
            raise self._missing(session_id)
        if row[-1] == "compression":
            raise StaleSessionError(self._rotated(conn, session_id, "nothing was published"))

    def _publish_rows(
        self, session_id: str, new_messages: Sequence[Message], mode: str,
        token_counts: Sequence[int] | None,
    ) -> list[Prepared]:
        """A publish's arguments checked and its messages encoded and counted (before its
        transaction; rows the window already holds keep their stored counts)."""
        if mode not in ("rotate", "in_place"):
            raise StoreError(f"unknown publish mode {mode!r}; allowed: rotate, in_place")
        known = None
        if token_counts is None and not isinstance(new_messages, dict | str | bytes):
            known = self._window_counts(session_id, len(new_messages))
        return prepare_messages(new_messages, token_counts, known)

    def _resume_id(self, conn: C, by: str) -> str:
        """The session ``resume(by)`` finds: ``last`` (``-c``, ``continue``), an id or a
        title (the newest of its lineage), followed to the tip of its rotations."""
        key = by.strip()
        if key in ("last", "-c", "continue"):
            last = self._last_active(conn)
            if last is None:
                raise SessionNotFoundError(f"there are no sessions to continue in {self.location}")
            return self._tip(conn, last)
        if self._exists(conn, key):
            return key
        found = self._title_owner(conn, key)
        if found is None:
            rotations = self._numbered(conn, title_base(key))
            if not rotations:
                raise SessionNotFoundError(
                    f"no session with id or title {by!r} in {self.location}; "
                    "`hermes-host sessions list` shows what exists"
                )
            found = max(rotations)[1]
        return self._tip(conn, found)
