"""Copying a whole history between two stores of any backends (``hermes-host store migrate``,
issue 16): sessions (lineage, usage, guards, titles …), every message row (window and
archived, ids and window order kept), and engine state — then verifying it.

Request manifests, their parts and compaction receipts (issue 29) are copied too.  Both
built-in backends hold the same columns, so a backend that can take part implements
the two methods of :class:`Transferable` over its own tables; the copy itself, its order
(parents before children) and its verification live here once.  Leases are not copied: they
are seconds-long locks of running hosts.

Verification reads the target back and compares, per table, the row counts and, per
message, a SHA-256 checksum of everything the row holds (ids, session, order, flags, token
count, time and every message column).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hermes_host.store.base import StateStore, StoreError
from hermes_host.store.codec import ROW_COLUMNS

__all__ = [
    "COLUMNS",
    "ORDER_KEYS",
    "MigrationReport",
    "Transferable",
    "message_checksum",
    "migrate_history",
]

BOOLEAN = {"archived", "pinned", "active", "compacted"}
COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": (
        "id", "source", "user_id", "session_key", "chat_id", "chat_type", "thread_id", "model",
        "model_config", "system_prompt", "parent_session_id", "conversation_id", "title", "cwd",
        "goal", "created_at", "ended_at", "end_reason", "last_activity_at",
        "last_activity_kind", "archived", "pinned", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd",
        "compression_count", "cooldown_until", "fallback_streak", "ineffective_count",
        "ineffective_tokens",
    ),
    "messages": (
        "id", "session_id", "seq", "token_count", "timestamp", "active", "compacted",
        *ROW_COLUMNS,
    ),
    "engine_state": ("session_id", "engine", "state", "updated_at"),
    "requests": (
        "id", "session_id", "created_at", "entries", "tokens", "prefix_tokens", "details",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    ),
    "request_parts": ("hash", "message", "tokens"),
    "compactions": ("id", "session_id", "result_session_id", "created_at", "status", "receipt"),
}
"""What is copied, table by table, in this order (a table's rows reference the one before)."""

ORDER_KEYS: dict[str, tuple[str, ...]] = {
    "engine_state": ("session_id", "engine"),
    "request_parts": ("hash",),
}
"""A table's primary key, when it is not ``id`` (rows are exported in its order)."""


@runtime_checkable
class Transferable(Protocol):
    """A store that can take part in a migration (both built-in backends can)."""

    def export_rows(
        self, table: str, columns: Sequence[str], batch: int
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The table's rows (``columns`` order, booleans as ``bool``), in batches, ordered
        by primary key."""
        ...

    def import_rows(self, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
                    ) -> None:
        """Insert rows exactly as given (ids included), in one transaction."""
        ...

    def finish_import(self) -> None:
        """After the last batch: bring indexes and id sequences up to date."""
        ...


def _normal(columns: Sequence[str], row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(bool(v) if c in BOOLEAN and v is not None else v
                 for c, v in zip(columns, row, strict=True))


def message_checksum(row: Sequence[Any]) -> str:
    """SHA-256 of one ``COLUMNS["messages"]`` row (booleans normalised)."""
    data = json.dumps(list(_normal(COLUMNS["messages"], row)), ensure_ascii=True)
    return hashlib.sha256(data.encode("ascii")).hexdigest()


@dataclass
class MigrationReport:
    copied: dict[str, int] = field(default_factory=dict)
    verified_messages: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"copied": self.copied, "verified_messages": self.verified_messages,
                "ok": self.ok, "problems": self.problems}


def _parents_first(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    parent_at = COLUMNS["sessions"].index("parent_session_id")
    by_id = {r[0]: r for r in rows}
    done: set[str] = set()
    ordered: list[tuple[Any, ...]] = []
    for row in rows:
        chain = []
        current: tuple[Any, ...] | None = row
        while current is not None and current[0] not in done:
            chain.append(current)
            done.add(current[0])
            parent = current[parent_at]
            current = by_id.get(parent) if parent is not None else None
        ordered += reversed(chain)
    return ordered


def _count(store: Transferable, table: str) -> int:
    return sum(len(b) for b in store.export_rows(table, COLUMNS[table][:1], 50_000))


def migrate_history(
    source: StateStore,
    target: StateStore,
    *,
    into_nonempty: bool = False,
    batch: int = 2_000,
    progress: Callable[[str, int, int], None] | None = None,
) -> MigrationReport:
    """Copy everything from ``source`` to ``target`` and verify it.  Refuses a target that
    already holds sessions unless ``into_nonempty`` (then ids must not collide)."""
    for store, role in ((source, "source"), (target, "target")):
        if not isinstance(store, Transferable):
            raise StoreError(f"the {role} store ({store.location}) cannot export or import "
                             "a whole history")
    assert isinstance(source, Transferable) and isinstance(target, Transferable)
    existing = _count(target, "sessions")
    if existing and not into_nonempty:
        raise StoreError(
            f"the target store {target.location} already holds {existing} sessions; nothing "
            "was copied (pass --into-nonempty to add this history to it)"
        )
    totals = {table: _count(source, table) for table in COLUMNS}
    report = MigrationReport()
    sessions = [r for b in source.export_rows("sessions", COLUMNS["sessions"], batch) for r in b]
    for table in COLUMNS:
        done = 0
        batches: Iterator[list[tuple[Any, ...]]]
        if table == "sessions":
            ordered = _parents_first([_normal(COLUMNS[table], r) for r in sessions])
            batches = iter([ordered[i:i + batch] for i in range(0, len(ordered), batch)])
        else:
            batches = source.export_rows(table, COLUMNS[table], batch)
        for rows in batches:
            try:
                target.import_rows(table, COLUMNS[table],
                                   [_normal(COLUMNS[table], r) for r in rows])
            except StoreError as exc:
                raise StoreError(f"copying {table} stopped after {done} rows: {exc}") from None
            done += len(rows)
            if progress is not None:
                progress(table, done, totals[table])
        report.copied[table] = done
    target.finish_import()
    _verify(source, target, totals, report, batch, progress)
    return report


def _verify(source: Transferable, target: Transferable, totals: dict[str, int],
            report: MigrationReport, batch: int,
            progress: Callable[[str, int, int], None] | None) -> None:
    for table, expected in totals.items():
        if report.copied.get(table) != expected:
            report.problems.append(f"{table}: {expected} rows in the source, "
                                   f"{report.copied.get(table)} copied")
    wanted: dict[int, str] = {}
    for rows in source.export_rows("messages", COLUMNS["messages"], batch):
        wanted.update((int(r[0]), message_checksum(r)) for r in rows)
    checked = 0
    for rows in target.export_rows("messages", COLUMNS["messages"], batch):
        for row in rows:
            digest = wanted.pop(int(row[0]), None)
            if digest is None:
                continue  # a row the target had before (--into-nonempty)
            if digest != message_checksum(row):
                report.problems.append(f"message {row[0]}: checksum differs in the target")
            checked += 1
        if progress is not None:
            progress("verify", checked, totals["messages"])
    report.problems += [f"message {mid}: missing in the target" for mid in list(wanted)[:20]]
    report.verified_messages = checked
