"""A small, real HistoryReader for the engine's own tests: SQLite FTS5, BM25 ranking.

The host's store implements the same ``HistoryReader`` protocol; these tests must not depend
on it, so they carry their own minimal implementation over a real SQLite database.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_host.messages import text_of
from hermes_host.models import Message


class FtsHistory:
    """``HistoryReader`` over rows ``(session_id, message, active)`` in an FTS5 table."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.db = sqlite3.connect(str(path))
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS messages(id INTEGER PRIMARY KEY, session_id TEXT, "
            "role TEXT, content TEXT, raw TEXT, active INTEGER)"
        )
        self.db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
            "content, content='messages', content_rowid='id', tokenize='porter unicode61')"
        )
        self.queries: list[str] = []

    def add(self, rows: Iterable[tuple[str, Message, bool]]) -> None:
        with self.db:
            for session_id, message, active in rows:
                text = text_of(message)
                cur = self.db.execute(
                    "INSERT INTO messages(session_id, role, content, raw, active) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (session_id, message["role"], text, json.dumps(message), int(active)),
                )
                self.db.execute(
                    "INSERT INTO messages_fts(rowid, content) VALUES (?, ?)",
                    (cur.lastrowid, text),
                )

    def search(self, query: str, *, limit: int = 20, lineage: bool = True) -> list[dict[str, Any]]:
        """Plain-text search, as the protocol promises: every word is quoted (all must match)."""
        self.queries.append(query)
        words = re.findall(r"\w+", query.replace("\x00", " "))[:16]
        if not words:
            return []
        match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.db.execute(
            "SELECT m.id, m.session_id, m.role, m.content, bm25(messages_fts), m.active "
            "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [
            {
                "message_id": r[0],
                "session_id": r[1],
                "role": r[2],
                "content": r[3],
                "score": r[4],
                "active": bool(r[5]),
            }
            for r in rows
        ]

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        sql = "SELECT raw FROM messages" + ("" if include_inactive else " WHERE active = 1")
        return [json.loads(r[0]) for r in self.db.execute(sql + " ORDER BY id")]

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM messages").fetchone()[0])


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


SYSTEM: Message = {"role": "system", "content": "You are a coding agent."}
