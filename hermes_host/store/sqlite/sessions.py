"""The SQLite store's sessions room: create, read, list, update, end, lineage, resume
(R-8.3, R-9.1)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from hermes_host.store.base import Conversation, Session
from hermes_host.store.rooms import ROTATION_TIP, conversation, listing, session_changes
from hermes_host.store.rules import session_from_row
from hermes_host.store.sqlite._base import SQLiteBase, errors
from hermes_host.store.sqlite.reader import lineage_ids

__all__ = ["SessionRooms"]

SESSION_SELECT = """
SELECT s.*,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active = 1) AS active_count
FROM sessions s
"""
_UNARCHIVED = "s.archived = 0"


class SessionRooms(SQLiteBase):
    """Sessions: one row each in ``sessions``."""

    def _fetch_sessions(self, where: str, params: Sequence[Any]) -> list[Session]:
        cur = self._conn().cursor()
        cur.row_factory = sqlite3.Row
        return [session_from_row(r) for r in cur.execute(SESSION_SELECT + where, params)]

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
        now = time.time()
        config_json = json.dumps(model_config or {}, ensure_ascii=False)
        with self._tx() as conn:
            sid = self._new_session_id(conn, session_id, title, parent_session_id)
            conn.execute(
                "INSERT INTO sessions (id, source, user_id, session_key, chat_id, chat_type, "
                "thread_id, model, model_config, system_prompt, parent_session_id, title, cwd, "
                "goal, created_at, last_activity_at, last_activity_kind, conversation_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'created', ?)",
                (sid, source, user_id, session_key, chat_id, chat_type, thread_id, model,
                 config_json, system_prompt, parent_session_id, title, cwd, goal, now, now,
                 sid),  # a new conversation (a branch too: it goes its own way)
            )
        return self.get_session(sid)

    @errors("reading a session")
    def get_session(self, session_id: str) -> Session:
        found = self._fetch_sessions("WHERE s.id = ?", (session_id,))
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
                                user_id=user_id, limit=limit, offset=offset, mark="?",
                                not_archived=_UNARCHIVED)
        return self._fetch_sessions(where, params)

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
                                mark="?", not_archived=_UNARCHIVED)
        found: list[Conversation] = []
        conn = self._conn()
        for tip in self._fetch_sessions(where, params):
            cid = tip.conversation_id or tip.id
            found.append(conversation(tip, conn.execute(
                "SELECT count(*), (SELECT count(*) FROM messages m JOIN sessions x "
                "ON x.id = m.session_id WHERE x.conversation_id = ?), "
                "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
                "FROM sessions WHERE conversation_id = ?",
                (cid, cid),
            ).fetchone()))
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
        with self._tx() as conn:
            self._require(conn, session_id)
            if title is not None:
                self._check_title_free(conn, title, session_id)
            if changes:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(
                    f"UPDATE sessions SET {sets} WHERE id = ?", (*changes.values(), session_id)
                )
        return self.get_session(session_id)

    @errors("ending a session")
    def end_session(self, session_id: str, reason: str) -> None:
        now = time.time()
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ?, last_activity_at = ?, "
                "last_activity_kind = 'ended' WHERE id = ?",
                (now, reason, now, session_id),
            )
            if cur.rowcount == 0:
                raise self._missing(session_id)

    @errors("reading a lineage")
    def lineage(self, session_id: str) -> list[str]:
        ids = lineage_ids(self._conn(), session_id)
        if not ids:
            raise self._missing(session_id)
        return ids

    @errors("resuming a session")
    def resume(self, by: str) -> Session:
        return self.get_session(self._resume_id(self._conn(), by))
