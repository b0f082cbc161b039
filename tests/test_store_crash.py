"""Crash safety of publishing a compression (R-8.1, R-8.2, R-1.2).

A real child process publishes compressions in a tight loop and is SIGKILLed at a random
moment, over and over.  After every kill the database must pass ``PRAGMA integrity_check`` and
both FTS integrity checks, and the session must be exactly "before" or "after" some number of
complete publishes: never a half-written window, never a lost or duplicated message.

Children are forked from the test process (already warm: imports and tokenizer loaded), so
each kill costs milliseconds and a few hundred kills stay well inside the CI budget.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from pathlib import Path

import pytest
from reliability_figures import record
from store_helpers import (
    compressed_window,
    conversation,
    fork_child,
    fts_integrity,
    kill_at_random,
)

from hermes_host.store import Lease, open_store
from hermes_host.tokens import count_text

KILLS = 100  # per mode: 200 SIGKILLs in total

pytestmark = [
    pytest.mark.slow,  # ~15-25 s: 200 forked children killed mid-publish
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)"),
]


def _rows(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_sigkill_during_in_place_publish_is_all_or_nothing_R_8_2(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = open_store(db)
    session = store.create_session(title="crash")
    original = conversation(10, tag="orig")
    store.append_messages(session.id, original)
    store.close()
    window = compressed_window("new", tail=10)
    count_text("warm the tokenizer before forking")

    def publish_forever(ready_fd: int) -> None:
        child_store = open_store(db)
        lease = child_store.acquire_lease(session.id, ttl=600)  # reclaims the dead holder
        assert isinstance(lease, Lease)
        os.write(ready_fd, b"r")
        while True:
            child_store.publish_compression(lease, session.id, window, mode="in_place")

    rng = random.Random(1234)
    seen_counts: set[int] = set()
    for kill in range(KILLS):
        pid, read_fd = fork_child(publish_forever)
        kill_at_random(pid, read_fd, rng, 0.012)
        fts_integrity(db)
        check = open_store(db)
        count = check.get_session(session.id).compression_count
        # exactly `count` complete publishes: nothing lost, nothing duplicated, nothing partial
        total, archived, compacted = _rows(
            db, "SELECT count(*), sum(active = 0), sum(compacted) FROM messages "
            "WHERE session_id = ?", (session.id,))[0]
        # A republished identical window is the same rows (stored once, not copied again).
        assert total == len(original) + (len(window) if count else 0)
        assert check.active_messages(session.id) == (window if count else original)
        assert archived == compacted == (len(original) if count else 0)
        if kill % 10 == 0 or kill == KILLS - 1:  # full decode of the history, now and then
            rows = check.all_messages(session.id)
            assert [r.message for r in rows[: len(original)]] == original
            assert [r.message for r in rows[len(original) :]] == (window if count else [])
        check.close()
        seen_counts.add(count)
    assert len(seen_counts) > KILLS // 4, "kills never landed between publishes"
    record("sigkill", workload="publish loop (store level), in_place", trials=KILLS,
           acked=None, lost=0, duplicated=0, compressions=max(seen_counts),
           killed_mid_compaction=None, rows=None)


def test_sigkill_during_rotate_publish_is_all_or_nothing_R_8_1(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = open_store(db)
    root = store.create_session(title="crash")
    original = conversation(10, tag="orig")
    store.append_messages(root.id, original)
    store.close()
    window = compressed_window("new", tail=10)
    count_text("warm the tokenizer before forking")

    def rotate_forever(ready_fd: int) -> None:
        child_store = open_store(db)
        sid = child_store.resume("crash").id
        os.write(ready_fd, b"r")
        while True:
            lease = child_store.acquire_lease(sid, ttl=600)
            assert isinstance(lease, Lease)
            sid = child_store.publish_compression(lease, sid, window).session_id
            child_store.release_lease(lease)

    rng = random.Random(4321)
    for _ in range(KILLS):
        pid, read_fd = fork_child(rotate_forever)
        kill_at_random(pid, read_fd, rng, 0.012)
        fts_integrity(db)
        check = open_store(db)
        tip = check.resume("crash")
        chain = check.lineage(tip.id)
        assert chain[0] == root.id
        assert len(_rows(db, "SELECT id FROM sessions")) == len(chain)  # no orphan child
        assert [m.message for m in check.all_messages(root.id)] == original
        for depth, sid in enumerate(chain):
            session = check.get_session(sid)
            assert session.title == ("crash" if depth == 0 else f"crash #{depth + 1}")
            assert session.compression_count == depth
            assert (session.end_reason == "compression") == (sid != tip.id)
            if depth:  # never partial, never doubled; the window lives in the newest only
                assert check.active_messages(sid) == (window if sid == tip.id else [])
        if len(chain) > 1:
            assert _rows(db, "SELECT count(*) FROM messages")[0][0] == len(original) + len(window)
        check.close()
    assert len(chain) > KILLS // 4, "kills never landed between publishes"
    record("sigkill", workload="publish loop (store level), rotate", trials=KILLS,
           acked=None, lost=0, duplicated=0, compressions=len(chain) - 1,
           killed_mid_compaction=None, rows=None)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
