"""The SQLite store's sessions room: create, read, list, update, end, lineage, resume
(R-8.3, R-9.1)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from hermes_host.store.base import (
    Conversation,
    Session,
    SessionNotFoundError,
    StoreError,
    TitleConflictError,
)
from hermes_host.store.rules import numbered_titles, session_from_row, title_base
from hermes_host.store.sqlite._base import SQLiteBase, errors

__all__ = ["SessionRooms", "numbered"]

SESSION_SELECT = """
SELECT s.*,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active = 1) AS active_count
FROM sessions s
"""

def numbered(conn: sqlite3.Connection, base: str) -> list[tuple[int, str]]:
    """``(N, session id)`` of every session titled ``base #N``: a lineage's rotations."""
    rows = conn.execute(
        "SELECT id, title FROM sessions WHERE substr(title, 1, ?) = ?",
        (len(base) + 2, base + " #"),
    ).fetchall()
    return numbered_titles(base, rows)


class SessionRooms(SQLiteBase):
    """Sessions: one row each in ``sessions``."""

    @staticmethod
    def _session(row: sqlite3.Row) -> Session:
        return session_from_row(row)

    def _fetch_sessions(self, where: str, params: Sequence[Any]) -> list[Session]:
        cur = self._conn().cursor()
        cur.row_factory = sqlite3.Row
        return [self._session(r) for r in cur.execute(SESSION_SELECT + where, params)]


    def _check_title_free(self, conn: sqlite3.Connection, title: str, owner: str | None) -> None:
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
        if row is not None and row[0] != owner:
            raise TitleConflictError(
                f"the title {title!r} is already used by session {row[0]}; choose another"
            )

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
            if title is not None:
                self._check_title_free(conn, title, None)
            if parent_session_id is not None:
                self._require(conn, parent_session_id)
            sid = session_id or self._fresh_id(conn)
            if session_id is not None and self._exists(conn, session_id):
                raise StoreError(f"a session with id {session_id!r} already exists")
            conn.execute(
                "INSERT INTO sessions (id, source, user_id, session_key, chat_id, chat_type, "
                "thread_id, model, model_config, system_prompt, parent_session_id, title, cwd, "
                "goal, created_at, last_activity_at, last_activity_kind, conversation_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'created', ?)",
                (
                    sid,
                    source,
                    user_id,
                    session_key,
                    chat_id,
                    chat_type,
                    thread_id,
                    model,
                    config_json,
                    system_prompt,
                    parent_session_id,
                    title,
                    cwd,
                    goal,
                    now,
                    now,
                    sid,  # a new conversation (a branch too: it goes its own way)
                ),
            )
        return self.get_session(sid)


    @errors("reading a session")
    def get_session(self, session_id: str) -> Session:
        found = self._fetch_sessions("WHERE s.id = ?", (session_id,))
        if not found:
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
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
        clauses: list[str] = []
        params: list[Any] = []
        if not include_archived:
            clauses.append("s.archived = 0")
        if source is not None:
            clauses.append("s.source = ?")
            params.append(source)
        if user_id is not None:
            clauses.append("s.user_id = ?")
            params.append(user_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
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
        clauses = [  # the newest session of its conversation: no rotation child of its own
            "NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id "
            "AND c.conversation_id = s.conversation_id)"
        ]
        params: list[Any] = []
        if not include_archived:
            clauses.append("s.archived = 0")
        if source is not None:
            clauses.append("s.source = ?")
            params.append(source)
        if user_id is not None:
            clauses.append("s.user_id = ?")
            params.append(user_id)
        where = "WHERE " + " AND ".join(clauses)
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
        found: list[Conversation] = []
        conn = self._conn()
        for tip in self._fetch_sessions(where, params):
            cid = tip.conversation_id or tip.id
            sessions, messages, tokens_in, tokens_out = conn.execute(
                "SELECT count(*), (SELECT count(*) FROM messages m JOIN sessions x "
                "ON x.id = m.session_id WHERE x.conversation_id = ?), "
                "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
                "FROM sessions WHERE conversation_id = ?",
                (cid, cid),
            ).fetchone()
            found.append(
                Conversation(cid, tip, max(1, sessions), messages, tokens_in, tokens_out)
            )
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
        changes: dict[str, Any] = {}
        for column, value in (("title", title), ("cwd", cwd), ("goal", goal), ("model", model)):
            if value is not None:
                changes[column] = value
        if model_config is not None:
            changes["model_config"] = json.dumps(model_config, ensure_ascii=False)
        if archived is not None:
            changes["archived"] = int(archived)
        if pinned is not None:
            changes["pinned"] = int(pinned)
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
                raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")

    @errors("reading a lineage")
    def lineage(self, session_id: str) -> list[str]:
        rows = (
            self._conn()
            .execute(
                "WITH RECURSIVE chain(id, parent, depth) AS ("
                " SELECT id, parent_session_id, 0 FROM sessions WHERE id = ?"
                " UNION ALL SELECT s.id, s.parent_session_id, c.depth + 1"
                " FROM sessions s JOIN chain c ON s.id = c.parent WHERE c.depth < 100000)"
                " SELECT id FROM chain ORDER BY depth DESC",
                (session_id,),
            )
            .fetchall()
        )
        if not rows:
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
        return [r[0] for r in rows]


    @errors("resuming a session")
    def resume(self, by: str) -> Session:
        conn = self._conn()
        key = by.strip()
        if key in ("last", "-c", "continue"):
            row = conn.execute(
                "SELECT id FROM sessions WHERE archived = 0 "
                "ORDER BY last_activity_at DESC, created_at DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(f"there are no sessions to continue in {self.path}")
            return self.get_session(self._tip(conn, row[0]))
        if self._exists(conn, key):
            return self.get_session(key)
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (key,)).fetchone()
        if row is None:
            rotations = numbered(conn, title_base(key))
            if not rotations:
                raise SessionNotFoundError(
                    f"no session with id or title {by!r} in {self.path}; "
                    "`hermes-host sessions list` shows what exists"
                )
            row = (max(rotations)[1],)
        return self.get_session(self._tip(conn, row[0]))

