"""What every backend's rooms share (issue 15): the session rules of ``create``, ``list``,
``update`` and ``resume`` (R-8.3, R-9.1), written once over a few one-query hooks.

A backend subclasses :class:`SharedRooms` with its connection type and writes the hooks
(:meth:`~SharedRooms._exists`, :meth:`~SharedRooms._title_owner`,
:meth:`~SharedRooms._last_active`, :meth:`~SharedRooms._titled_rows`,
:meth:`~SharedRooms._tip`) in its own SQL; the flows and the wording are here.  Publishing's
plain-Python rules are in :mod:`hermes_host.store.rules`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from hermes_host.store.errors import SessionNotFoundError, StoreError, TitleConflictError
from hermes_host.store.ids import new_session_id
from hermes_host.store.records import Conversation, Session
from hermes_host.store.rules import next_title, numbered_titles, rotated_message, title_base

__all__ = ["ROTATION_TIP", "SharedRooms", "conversation", "listing", "session_changes"]

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
    """The session rules of a backend whose connections are of type ``C``."""

    location: str
    """Where the store is, as its messages name it (a path, or a URL without password)."""

    # -- hooks: one query each, in the backend's SQL ----------------------------------------

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
            raise TitleConflictError(
                f"the title {title!r} is already used by session {found}; choose another"
            )

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
