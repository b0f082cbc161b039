"""The PostgreSQL store's manifests room: what each model call received and what each
compaction did (hermes-host issue 29, :mod:`hermes_host.store.manifests`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hermes_host.models import CompactionReceipt, Message
from hermes_host.store.codec import STORED_COLUMNS, stored_from_row
from hermes_host.store.manifests import RequestRecord
from hermes_host.store.records import StoredMessage
from hermes_store_postgres._base import WINDOW_ORDER
from hermes_store_postgres.failures import errors
from hermes_store_postgres.publish import PublishRooms

__all__ = ["ManifestRooms"]

_REQUEST_COLS = ("id, session_id, created_at, entries, tokens, prefix_tokens, details, "
                 "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens")


def _request(row: Sequence[Any]) -> RequestRecord:
    def opt(value: Any) -> int | None:
        return None if value is None else int(value)

    return RequestRecord(
        id=int(row[0]), session_id=row[1], created_at=float(row[2]), entries=row[3],
        tokens=int(row[4]), prefix_tokens=int(row[5]), details=json.loads(row[6] or "{}"),
        input_tokens=opt(row[7]), output_tokens=opt(row[8]), cache_read_tokens=opt(row[9]),
        cache_write_tokens=opt(row[10]),
    )


class ManifestRooms(PublishRooms):
    """``requests``, ``request_parts`` and ``compactions``."""

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
        with self._tx() as conn:
            if parts:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO request_parts (hash, message, tokens) VALUES (%s, %s, %s) "
                        "ON CONFLICT (hash) DO NOTHING",
                        [(h, text, int(n)) for h, (text, n) in parts.items()],
                    )
            row = conn.execute(
                "INSERT INTO requests (session_id, created_at, entries, tokens, prefix_tokens, "
                "details) VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                (session_id, time.time(), entries, int(tokens), int(prefix_tokens),
                 json.dumps(dict(details), ensure_ascii=False, default=str)),
            ).fetchone()
        return int(row[0]) if row else 0

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
        with self._one() as conn:
            conn.execute(
                "UPDATE requests SET input_tokens = %s, output_tokens = %s, "
                "cache_read_tokens = %s, cache_write_tokens = %s WHERE id = %s",
                (int(input_tokens), int(output_tokens), int(cache_read_tokens),
                 int(cache_write_tokens), int(request_id)),
            )

    @errors("listing requests")
    def list_requests(self, session_ids: Sequence[str]) -> list[RequestRecord]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_REQUEST_COLS} FROM requests WHERE session_id = ANY(%s) ORDER BY id",
                (list(session_ids),),
            ).fetchall()
        return [_request(r) for r in rows]

    @errors("reading request parts")
    def request_parts(self, hashes: Iterable[str]) -> dict[str, Message]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT hash, message FROM request_parts WHERE hash = ANY(%s)",
                (sorted(set(hashes)),),
            ).fetchall()
        return {h: json.loads(text) for h, text in rows}

    @errors("reading the window's ids")
    def active_ids(self, session_id: str, after_id: int = 0) -> list[int]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id FROM messages WHERE session_id = %s AND active AND id > %s "
                f"{WINDOW_ORDER}".encode(),
                (session_id, int(after_id)),
            ).fetchall()
        return [int(r[0]) for r in rows]

    @errors("reading messages")
    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE id = ANY(%s)".encode(),
                (sorted({int(i) for i in ids}),),
            ).fetchall()
        found = [stored_from_row(r) for r in rows]
        return {m.id: m for m in found}

    @errors("recording a compaction receipt")
    def record_receipt(self, receipt: CompactionReceipt) -> int:
        with self._one() as conn:
            row = conn.execute(
                "INSERT INTO compactions (session_id, result_session_id, created_at, status, "
                "receipt) VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (receipt.session_id, receipt.result_session_id, receipt.at, receipt.status,
                 receipt.model_dump_json(exclude={"id"})),
            ).fetchone()
        return int(row[0]) if row else 0

    @errors("listing compaction receipts")
    def list_receipts(self, session_ids: Sequence[str]) -> list[CompactionReceipt]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, receipt FROM compactions WHERE session_id = ANY(%s) ORDER BY id",
                (list(session_ids),),
            ).fetchall()
        return [CompactionReceipt.model_validate_json(text).model_copy(update={"id": int(rid)})
                for rid, text in rows]
