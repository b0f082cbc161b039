"""Publishing a compression: rotate (R-8.1) and in-place (R-8.2), each in one transaction,
guarded by the lease (R-9.4)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_helpers import compressed_window, conversation, fts_integrity

from hermes_host.store import (
    Lease,
    LeaseLostError,
    StateStore,
)


def _lease(store: StateStore, session_id: str, ttl: float | None = None) -> Lease:
    lease = store.acquire_lease(session_id, ttl)
    assert isinstance(lease, Lease), lease
    return lease


def _snapshot(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        rows = []
        for table in ("sessions", "messages", "compression_locks", "engine_state"):
            rows += [(table, *r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]
        return rows
    finally:
        conn.close()


def test_in_place_publish_keeps_both_fts_indexes_consistent_R_8_2(store: StateStore,
                                                                  tmp_path: Path) -> None:
    """SQLite's own check (the contract suite runs the behaviour on every backend)."""
    session = store.create_session()
    store.append_messages(session.id, conversation(5, tag="archivedword"))
    lease = _lease(store, session.id)
    store.publish_compression(lease, session.id, compressed_window("fresh"), mode="in_place")
    before = _snapshot(tmp_path / "state.db")
    with pytest.raises(LeaseLostError):
        store.publish_compression(lease, "another", compressed_window("x"))
    assert _snapshot(tmp_path / "state.db") == before
    fts_integrity(tmp_path / "state.db")
