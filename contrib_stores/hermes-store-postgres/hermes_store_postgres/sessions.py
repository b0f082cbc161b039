"""The PostgreSQL store's sessions room: create, read, list, update, end, lineage, resume
(R-8.3, R-9.1).  Rules shared with every backend come from :mod:`hermes_host.store.rules`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from hermes_host.store import (
    Conversation,
    Session,
    SessionNotFoundError,
    StoreError,
    TitleConflictError,
)
from hermes_host.store.rules import numbered_titles, session_from_row, title_base
from hermes_store_postgres._base import NOW, Conn, PostgresBase, errors

__all__ = ["SessionRooms", "numbered"]

SESSION_SELECT = """
SELECT s.*,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active) AS active_count
FROM sessions s
"""


def numbered(conn: Conn, base: str) -> list[tuple[int, str]]:
    """``(N, session id)`` of every session titled ``base #N``: a lineage's rotations."""
    rows = conn.execute(
        "SELECT id, title FROM sessions WHERE left(title, %s) = %s",
        (len(base) + 2, base + " #"),
    ).fetchall()
    return numbered_titles(base, rows)


class SessionRooms(PostgresBase):
    """Sessions: one row each in ``sessions``."""

    def _fetch_sessions(self, conn: Conn, where: str, params: Sequence[Any]) -> list[Session]:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute((SESSION_SELECT + where).encode(), params)
            return [session_from_row(r) for r in cur.fetchall()]

    @staticmethod
    def _check_title_free(conn: Conn, title: str, owner: str | None) -> None:
        row = conn.execute("SELECT id FROM sessions WHERE title = %s", (title,)).fetchone()
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
        config_json = json.dumps(model_config or {}, ensure_ascii=False)
        try:
            with self._tx() as conn:
                if title is not None:
                    self._check_title_free(conn, title, None)
                if parent_session_id is not None:
                    self._require(conn, parent_session_id)
                sid = session_id or self._fresh_id(conn)
                if session_id is not None and self._exists(conn, session_id):
                    raise StoreError(f"a session with id {session_id!r} already exists")
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
                raise TitleConflictError(
                    f"the title {title!r} is already used by another session; choose another"
                ) from None
            raise StoreError(f"a session with id {session_id!r} already exists") from None

    @errors("reading a session")
    def get_session(self, session_id: str) -> Session:
        with self._read() as conn:
            found = self._fetch_sessions(conn, "WHERE s.id = %s", (session_id,))
        if not found:
            raise self._missing(session_id)
        return found[0]

    @staticmethod
    def _filters(
        clauses: list[str], include_archived: bool, source: str | None, user_id: str | None
    ) -> list[Any]:
        params: list[Any] = []
        if not include_archived:
            clauses.append("NOT s.archived")
        if source is not None:
            clauses.append("s.source = %s")
            params.append(source)
        if user_id is not None:
            clauses.append("s.user_id = %s")
            params.append(user_id)
        return params

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
        params = self._filters(clauses, include_archived, source, user_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT %s OFFSET %s"
        params += [max(0, int(limit)), max(0, int(offset))]
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
        clauses = [  # the newest session of its conversation: no rotation child of its own
            "NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id "
            "AND c.conversation_id = s.conversation_id)"
        ]
        params = self._filters(clauses, include_archived, source, user_id)
        where = "WHERE " + " AND ".join(clauses)
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT %s OFFSET %s"
        params += [max(0, int(limit)), max(0, int(offset))]
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
                sessions, messages, tokens_in, tokens_out = row
                found.append(Conversation(cid, tip, max(1, int(sessions)), int(messages),
                                          int(tokens_in), int(tokens_out)))
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
            changes["archived"] = bool(archived)
        if pinned is not None:
            changes["pinned"] = bool(pinned)
        try:
            with self._tx() as conn:
                self._require(conn, session_id)
                if title is not None:
                    self._check_title_free(conn, title, session_id)
                if changes:  # column names come from the fixed list above, never from input
                    sets = ", ".join(f"{c} = %s" for c in changes)
                    conn.execute(f"UPDATE sessions SET {sets} WHERE id = %s".encode(),
                                 (*changes.values(), session_id))
                return self._fetch_sessions(conn, "WHERE s.id = %s", (session_id,))[0]
        except psycopg.errors.UniqueViolation:
            raise TitleConflictError(
                f"the title {title!r} is already used by another session; choose another"
            ) from None

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
        key = by.strip()
        with self._tx() as conn:
            if key in ("last", "-c", "continue"):
                row = conn.execute(
                    "SELECT id FROM sessions WHERE NOT archived "
                    "ORDER BY last_activity_at DESC, created_at DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    raise SessionNotFoundError(
                        f"there are no sessions to continue in {self.location}"
                    )
                found = self._tip(conn, row[0])
            elif self._exists(conn, key):
                found = key
            else:
                row = conn.execute("SELECT id FROM sessions WHERE title = %s",
                                   (key,)).fetchone()
                if row is None:
                    rotations = numbered(conn, title_base(key))
                    if not rotations:
                        raise SessionNotFoundError(
                            f"no session with id or title {by!r} in {self.location}; "
                            "`hermes-host sessions list` shows what exists"
                        )
                    row = (max(rotations)[1],)
                found = self._tip(conn, row[0])
            return self._fetch_sessions(conn, "WHERE s.id = %s", (found,))[0]
