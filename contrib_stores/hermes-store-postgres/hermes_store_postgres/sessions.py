"""The PostgreSQL store's sessions room: create, read, list, update, end, lineage, resume
(R-8.3, R-9.1).  Rules shared with every backend come from :mod:`hermes_host.store.rooms`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from hermes_host.store import Conversation, Session, StoreError
from hermes_host.store.rooms import (
    ROTATION_TIP,
    conversation,
    listing,
    session_changes,
    title_conflict,
)
from hermes_host.store.rules import session_from_row
from hermes_store_postgres._base import NOW, PostgresBase
from hermes_store_postgres.bounded import Conn
from hermes_store_postgres.failures import errors

__all__ = ["SessionRooms"]

SESSION_SELECT = """
SELECT s.*,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active) AS active_count
FROM sessions s
"""


class SessionRooms(PostgresBase):
    """Sessions: one row each in ``sessions``."""

    def _fetch_sessions(self, conn: Conn, where: str, params: Sequence[Any]) -> list[Session]:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute((SESSION_SELECT + where).encode(), params)
            return [session_from_row(r) for r in cur.fetchall()]

    @errors("creating a session")
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
        config_json = json.dumps(model_config or {}, ensure_ascii=False)
        try:
            with self._tx() as conn:
                sid = self._new_session_id(conn, session_id, title, parent_session_id)
                conn.execute(
                    "INSERT INTO sessions (id, source, user_id, session_key, chat_id, chat_type,"
                    " thread_id, model, model_config, system_prompt, parent_session_id, title,"
                    " cwd, goal, created_at, last_activity_at, last_activity_kind,"
                    f" conversation_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                    f" %s, %s, {NOW}, {NOW}, 'created', %s)".encode(),
                    (sid, source, user_id, session_key, chat_id, chat_type, thread_id, model,
                     config_json, system_prompt, parent_session_id, title, cwd, goal,
                     sid),  # a new conversation (a branch too: it goes its own way)
                )
                return self._fetch_sessions(conn, "WHERE s.id = %s", (sid,))[0]
        except psycopg.errors.UniqueViolation as exc:  # another host took it meanwhile
            if title is not None and "title" in str(exc):
                raise title_conflict(title) from None
            raise StoreError(f"a session with id {session_id!r} already exists") from None

    @errors("reading a session")
    def get_session(self, session_id: str) -> Session:
        with self._read() as conn:
            found = self._fetch_sessions(conn, "WHERE s.id = %s", (session_id,))
        if not found:
            raise self._missing(session_id)
        return found[0]

    @errors("listing sessions")
    def list_sessions(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Session]:
        where, params = listing([], include_archived=include_archived, source=source,
                                user_id=user_id, limit=limit, offset=offset, mark="%s",
                                not_archived="NOT s.archived")
        with self._read() as conn:
            return self._fetch_sessions(conn, where, params)

    @errors("listing conversations")
    def list_conversations(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Conversation]:
        where, params = listing([ROTATION_TIP], include_archived=include_archived,
                                source=source, user_id=user_id, limit=limit, offset=offset,
                                mark="%s", not_archived="NOT s.archived")
        found: list[Conversation] = []
        with self._tx() as conn:
            for tip in self._fetch_sessions(conn, where, params):
                cid = tip.conversation_id or tip.id
                row = conn.execute(
                    "SELECT count(*), (SELECT count(*) FROM messages m JOIN sessions x "
                    "ON x.id = m.session_id WHERE x.conversation_id = %s), "
                    "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
                    "FROM sessions WHERE conversation_id = %s",
                    (cid, cid),
                ).fetchone()
                assert row is not None
                found.append(conversation(tip, row))
        return found

    @errors("updating a session")
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
        changes = session_changes(title=title, cwd=cwd, goal=goal, model=model,
                                  model_config=model_config, archived=archived, pinned=pinned)
        try:
            with self._tx() as conn:
                self._require(conn, session_id)
                if title is not None:
                    self._check_title_free(conn, title, session_id)
                if changes:  # column names from session_changes' fixed list, never from input
                    sets = ", ".join(f"{c} = %s" for c in changes)
                    conn.execute(f"UPDATE sessions SET {sets} WHERE id = %s".encode(),
                                 (*changes.values(), session_id))
                return self._fetch_sessions(conn, "WHERE s.id = %s", (session_id,))[0]
        except psycopg.errors.UniqueViolation:
            raise title_conflict(title) from None

    @errors("ending a session")
    def end_session(self, session_id: str, reason: str) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                f"UPDATE sessions SET ended_at = {NOW}, end_reason = %s, last_activity_at = "
                f"{NOW}, last_activity_kind = 'ended' WHERE id = %s".encode(),
                (reason, session_id),
            )
            if cur.rowcount == 0:
                raise self._missing(session_id)

    def _lineage(self, conn: Conn, session_id: str) -> list[str]:
        rows = conn.execute(
            "WITH RECURSIVE chain(id, parent, depth) AS ("
            " SELECT id, parent_session_id, 0 FROM sessions WHERE id = %s"
            " UNION ALL SELECT s.id, s.parent_session_id, c.depth + 1"
            " FROM sessions s JOIN chain c ON s.id = c.parent WHERE c.depth < 100000)"
            " SELECT id FROM chain ORDER BY depth DESC",
            (session_id,),
        ).fetchall()
        if not rows:
            raise self._missing(session_id)
        return [str(r[0]) for r in rows]

    @errors("reading a lineage")
    def lineage(self, session_id: str) -> list[str]:
        with self._read() as conn:
            return self._lineage(conn, session_id)

    @errors("resuming a session")
    def resume(self, by: str) -> Session:
        with self._tx() as conn:
            found = self._resume_id(conn, by)
            return self._fetch_sessions(conn, "WHERE s.id = %s", (found,))[0]
