"""The SQLite store's manifests room: what each model call received and what each compaction
did (issue 29, :mod:`hermes_host.store.manifests`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hermes_host.models import CompactionReceipt, Message
from hermes_host.store.codec import STORED_COLUMNS, WINDOW_ORDER, stored_from_row
from hermes_host.store.manifests import RequestRecord
from hermes_host.store.records import StoredMessage
from hermes_host.store.sqlite._base import errors
from hermes_host.store.sqlite.publish import PublishRooms

__all__ = ["ManifestRooms"]

_CHUNK = 500  # ids per IN (...) query: well under SQLite's variable limit

_REQUEST_COLS = ("id, session_id, created_at, entries, tokens, prefix_tokens, details, "
                 "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens")


def request_from_row(row: Sequence[Any]) -> RequestRecord:
    return RequestRecord(
        id=int(row[0]), session_id=row[1], created_at=float(row[2]), entries=row[3],
        tokens=int(row[4]), prefix_tokens=int(row[5]), details=json.loads(row[6] or "{}"),
        input_tokens=row[7], output_tokens=row[8], cache_read_tokens=row[9],
        cache_write_tokens=row[10],
    )


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


class ManifestRooms(PublishRooms):
    """``requests``, ``request_parts`` and ``compactions``."""

    @contextmanager
    def _window_neutral(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that changes no window (a manifest, its usage): the window
        markers this connection cached before it stay valid after it — else every request
        recorded would make the next ``window_marker`` recount the window (issue 32)."""
        markers = self._markers()
        with self._tx() as conn:
            version = self._version(conn)  # inside the write lock, as append_messages does
            yield conn
        after = (version[0], conn.total_changes)
        for key, (seen, marker) in list(markers.items()):
            if seen == version:
                markers[key] = (after, marker)

    @errors("recording a request")
    def record_request(
        self,
        session_id: str,
        entries: str,
        parts: Mapping[str, tuple[str, int]],
        *,
        tokens: int,
        prefix_tokens: int,
        details: Mapping[str, Any],
    ) -> int:
        with self._window_neutral() as conn:
            if parts:
                conn.executemany(
                    "INSERT OR IGNORE INTO request_parts (hash, message, tokens) "
                    "VALUES (?, ?, ?)",
                    [(h, text, int(n)) for h, (text, n) in parts.items()],
                )
            cur = conn.execute(
                "INSERT INTO requests (session_id, created_at, entries, tokens, prefix_tokens, "
                "details) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, time.time(), entries, int(tokens), int(prefix_tokens),
                 json.dumps(dict(details), ensure_ascii=False, default=str)),
            )
            return int(cur.lastrowid or 0)

    @errors("recording a request's usage")
    def record_request_usage(
        self,
        request_id: int,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
    ) -> None:
        with self._window_neutral() as conn:
            conn.execute(
                "UPDATE requests SET input_tokens = ?, output_tokens = ?, "
                "cache_read_tokens = ?, cache_write_tokens = ? WHERE id = ?",
                (int(input_tokens), int(output_tokens), int(cache_read_tokens),
                 int(cache_write_tokens), int(request_id)),
            )

    @errors("listing requests")
    def list_requests(self, session_ids: Sequence[str]) -> list[RequestRecord]:
        conn = self._conn()
        rows: list[Any] = []
        for chunk in _chunks(list(session_ids)):
            marks = ", ".join("?" * len(chunk))
            rows += conn.execute(
                f"SELECT {_REQUEST_COLS} FROM requests WHERE session_id IN ({marks})", chunk
            ).fetchall()
        return sorted((request_from_row(r) for r in rows), key=lambda r: r.id)

    @errors("reading request parts")
    def request_parts(self, hashes: Iterable[str]) -> dict[str, Message]:
        conn = self._conn()
        found: dict[str, Message] = {}
        for chunk in _chunks(sorted(set(hashes))):
            marks = ", ".join("?" * len(chunk))
            for h, text in conn.execute(
                f"SELECT hash, message FROM request_parts WHERE hash IN ({marks})", chunk
            ):
                found[h] = json.loads(text)
        return found

    @errors("reading the window's ids")
    def active_ids(self, session_id: str, after_id: int = 0) -> list[int]:
        return [
            int(r[0]) for r in self._conn().execute(
                "SELECT id FROM messages WHERE session_id = ? AND active = 1 AND id > ? "
                + WINDOW_ORDER,
                (session_id, int(after_id)),
            )
        ]

    @errors("reading messages")
    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        conn = self._conn()
        found: dict[int, StoredMessage] = {}
        for chunk in _chunks(sorted({int(i) for i in ids})):
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE id IN ({marks})", chunk
            ):
                stored = stored_from_row(row)
                found[stored.id] = stored
        return found

    @errors("reading the messages' index")
    def message_index(self, session_ids: Sequence[str]) -> list[tuple[int, str, bool]]:
        """``(id, session_id, active)`` of every row of these sessions, by id: what a page
        of ``browse`` needs to place a page of a long lineage without decoding every row."""
        conn = self._conn()
        rows: list[tuple[int, str, bool]] = []
        for chunk in _chunks(list(session_ids)):
            marks = ", ".join("?" * len(chunk))
            rows += [(int(i), sid, bool(active)) for i, sid, active in conn.execute(
                f"SELECT id, session_id, active FROM messages WHERE session_id IN ({marks})",
                chunk)]
        rows.sort()
        return rows

    @errors("recording a compaction receipt")
    def record_receipt(self, receipt: CompactionReceipt) -> int:
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO compactions (session_id, result_session_id, created_at, status, "
                "receipt) VALUES (?, ?, ?, ?, ?)",
                (receipt.session_id, receipt.result_session_id, receipt.at, receipt.status,
                 receipt.model_dump_json(exclude={"id"})),
            )
            return int(cur.lastrowid or 0)

    @errors("listing compaction receipts")
    def list_receipts(self, session_ids: Sequence[str]) -> list[CompactionReceipt]:
        conn = self._conn()
        rows: list[Any] = []
        for chunk in _chunks(list(session_ids)):
            marks = ", ".join("?" * len(chunk))
            rows += conn.execute(
                f"SELECT id, receipt FROM compactions WHERE session_id IN ({marks})", chunk
            ).fetchall()
        rows.sort(key=lambda r: r[0])
        return [CompactionReceipt.model_validate_json(text).model_copy(update={"id": rid})
                for rid, text in rows]
