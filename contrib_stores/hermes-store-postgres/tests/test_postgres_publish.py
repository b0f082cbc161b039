"""Issue 16 (publish of a long session): the PostgreSQL publish reads the values of only
the window rows a proposed message can equal (same ``content``, or appended after the
snapshot) — the same plan as reading every row, checked here against SQLite on the same
history: duplicate contents, a ``None`` content (a tool-call turn), a row appended after
the snapshot, in place and rotated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_host.store import Lease, PublishMode, StateStore, open_store
from hermes_store_postgres import PostgresStore


def _history() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"role": "system", "content": "you are terse"}]
    for i in range(30):
        rows.append({"role": "user", "content": "ok" if i % 7 == 0 else f"question {i}"})
        rows.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": f"c{i}", "type": "function",
                                     "function": {"name": "terminal", "arguments": "{}"}}]})
        rows.append({"role": "tool", "content": f"output {i}", "tool_call_id": f"c{i}"})
        rows.append({"role": "assistant", "content": "ok"})
    return rows


def _publish(store: StateStore, mode: PublishMode) -> tuple[list[Any], list[Any], list[Any]]:
    """Publish system + summary + the last 6 rows with a row appended after the
    snapshot; returns the new window as positions of the original rows (or ``fresh``),
    the carried rows, and every row's (position, active, compacted)."""
    history = _history()
    sid = store.create_session().id
    ids = store.append_messages(sid, history)
    snapshot = store.window_marker(sid)
    late = store.append_messages(sid, [{"role": "user", "content": "ok"}])
    lease = store.acquire_lease(sid)
    assert isinstance(lease, Lease)
    window = [history[0], {"role": "user", "content": "summary", "_compressed_summary": True},
              *history[-6:]]
    result = store.publish_compression(lease, sid, window, mode=mode, snapshot=snapshot)
    position = {row_id: n for n, row_id in enumerate(ids + late)}
    shape = [position.get(row_id, "fresh") for row_id in result.message_ids]
    rows = [r for s in store.lineage(result.session_id) for r in store.all_messages(s)]
    flags = sorted((position.get(r.id, -1), r.active, r.compacted) for r in rows)
    return shape, [position.get(i) for i in result.carried_ids], flags


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_publish_keeps_the_same_rows_as_sqlite_issue_16(
    pg_store: PostgresStore, tmp_path: Path, mode: PublishMode
) -> None:
    sqlite = open_store(tmp_path / "same.db")
    try:
        expected = _publish(sqlite, mode)
    finally:
        sqlite.close()
    got = _publish(pg_store, mode)
    assert got == expected
    shape, carried, _ = got
    assert shape[0] == 0 and shape[1] == "fresh"  # the system row kept, the summary new
    assert all(isinstance(p, int) for p in shape[2:])  # the tail kept, not re-stored
    assert carried == [len(_history())]  # the row appended after the snapshot
