"""The history reader an engine receives: a read-only view of a session's lineage (R-10.2).

:class:`SQLiteHistoryReader` holds its **own read-only connection** to the database file
(``mode=ro``, ``PRAGMA query_only``, no ``ATTACH``)
and the session id — never the store.  ``request.history._store._conn().execute("UPDATE …")``
rewrote stored messages before (issue 13); now there is no store to reach, and the
connection that is reachable refuses every write.  The connection opens on first use (most
engines never search) and closes when the reader is dropped.
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
import weakref
from pathlib import Path
from typing import Any

from hermes_host.models import Message
from hermes_host.store.base import SessionNotFoundError, StoreError
from hermes_host.store.codec import STORED_COLUMNS, stored_from_row
from hermes_host.store.sqlite.fts import register_functions, run_search

__all__ = ["SQLiteHistoryReader", "lineage_ids", "open_read_only"]

def open_read_only(path: str | Path, *, busy_timeout: float = 5.0) -> sqlite3.Connection:
    """A connection to ``path`` that can only read: opened ``mode=ro`` (SQLite refuses
    every write to the file), ``query_only`` on, and no database may be attached."""
    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        register_functions(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def lineage_ids(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The session ids of ``session_id``'s lineage, root first ([] when it does not exist)."""
    rows = conn.execute(
        "WITH RECURSIVE chain(id, parent, depth) AS ("
        " SELECT id, parent_session_id, 0 FROM sessions WHERE id = ?"
        " UNION ALL SELECT s.id, s.parent_session_id, c.depth + 1"
        " FROM sessions s JOIN chain c ON s.id = c.parent WHERE c.depth < 100000)"
        " SELECT id FROM chain ORDER BY depth DESC",
        (session_id,),
    ).fetchall()
    return [r[0] for r in rows]


def _close(holder: list[sqlite3.Connection]) -> None:
    for conn in holder:
        try:
            conn.close()
        except sqlite3.Error:
            pass


class SQLiteHistoryReader:
    """Read-only :class:`~hermes_host.models.HistoryReader` over a session's lineage.

    It exposes ``search`` and ``messages``; it holds a read-only connection of its own and
    the session id, so an engine has no write method to call and no store to reach.
    """

    __slots__ = ("__weakref__", "_conn", "_lock", "_path", "_session_id")

    def __init__(self, path: str | Path, session_id: str) -> None:
        self._path = str(path)
        self._session_id = session_id
        self._lock = threading.Lock()
        self._conn: list[sqlite3.Connection] = []  # opened on first use
        weakref.finalize(self, _close, self._conn)

    @property
    def session_id(self) -> str:
        return self._session_id

    def _connection(self) -> sqlite3.Connection:
        if not self._conn:
            try:
                self._conn.append(open_read_only(self._path))
            except sqlite3.Error as exc:
                raise StoreError(
                    f"{self._path}: cannot open the history read-only: {exc}"
                ) from None
        return self._conn[0]

    def _lineage(self, conn: sqlite3.Connection, lineage: bool) -> list[str]:
        ids = lineage_ids(conn, self._session_id)
        if not ids:
            raise SessionNotFoundError(f"no session with id {self._session_id!r} in {self._path}")
        return ids if lineage else [self._session_id]

    def search(self, query: str, *, limit: int = 20, lineage: bool = True) -> list[dict[str, Any]]:
        with self._lock:
            conn = self._connection()
            hits = run_search(conn, query, self._lineage(conn, lineage), limit)
        return [hit.to_dict() for hit in hits]

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        with self._lock:
            conn = self._connection()
            ids = self._lineage(conn, True)
            marks = ", ".join("?" * len(ids))
            active = "" if include_inactive else " AND active = 1"
            rows = conn.execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id IN ({marks}){active} "
                "ORDER BY id",
                ids,
            ).fetchall()
        return [stored_from_row(r).message for r in rows]
