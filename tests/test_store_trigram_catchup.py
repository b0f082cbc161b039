"""The trigram (substring) index catches up after bulk writes (schema v2, R-9.3, R-13.3).

A write of ``DEFER_TRIGRAM_MIN`` or more messages leaves its rows above the index's mark;
smaller writes index what they write plus up to ``CATCH_UP_PER_WRITE`` waiting rows, and
``index_pending`` finishes the job.  What must never change: a committed row is found by
substring search at once, with the same answers as once indexed, and both FTS indexes pass
FTS5's own integrity check at every step.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from store_helpers import conversation, fts_integrity

from hermes_host.store import open_store
from hermes_host.store.sqlite import CATCH_UP_PER_WRITE, DEFER_TRIGRAM_MIN, SQLiteStore
from hermes_host.store.sqlite import messages as sqlite_mod
from hermes_host.store.sqlite.schema import MIGRATIONS, migrate

WORDS = ("parser", "lexer", "Überprüfung", "naïve", "日本語のテキスト", "flaky", "build")


def _bulk(count: int, seed: int = 3) -> list[dict[str, str]]:
    """``count`` messages, every fourth a tool row, with varied mixed-script text."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = f"{rng.choice(WORDS)} item{i:05d}x {rng.choice(WORDS)} {rng.choice(WORDS)}"
        if i % 4 == 2:
            out.append({"role": "tool", "content": text, "tool_call_id": f"c{i}", "name": "t"})
        else:
            out.append({"role": "user" if i % 2 else "assistant", "content": text})
    return out


def _indexed(path: Path, needle: str) -> set[int]:
    """Rows the trigram index itself returns for ``needle`` (no scan)."""
    conn = sqlite3.connect(path)
    try:
        phrase = '"' + needle.replace('"', '""') + '"'
        return {r[0] for r in conn.execute(
            "SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?", (phrase,)
        )}
    finally:
        conn.close()


def _found(store: SQLiteStore, query: str, session_id: str | None = None) -> set[int]:
    return {hit.message_id for hit in store.session_search(query, session_id, limit=500)}


def test_bulk_append_defers_the_index_yet_substrings_are_found_at_once_R_9_3(
    store: SQLiteStore,
) -> None:
    session = store.create_session()
    messages = _bulk(DEFER_TRIGRAM_MIN + 44)
    ids = store.append_messages(session.id, messages)
    assert store.pending_index_rows() == len(messages)
    target = ids[101]  # a user row: "item00101x"
    assert _indexed(store.path, "em00101") == set()  # not in the index yet ...
    assert _found(store, "em00101") == {target}  # ... and found anyway
    fts_integrity(store.path)  # the index's content is what it indexed: consistent
    assert store.index_pending(batch=97) == len(messages)
    assert store.pending_index_rows() == 0
    assert _indexed(store.path, "em00101") == {target}
    assert _found(store, "em00101") == {target}
    fts_integrity(store.path)


def test_answers_are_the_same_before_and_after_catching_up_R_13_3(store: SQLiteStore) -> None:
    one, two = store.create_session(), store.create_session()
    store.append_messages(one.id, _bulk(600, seed=1))
    store.append_messages(two.id, _bulk(600, seed=2))
    assert store.pending_index_rows() == 1200
    # every query matches fewer rows than the limit, so the full answer sets compare
    queries = ["ÜBERPRÜF", "überprüfung lex", "NAÏVE", "本語のテ", "em0004", "item0059",
               "aky bui", "x naï", "zzzz-not-there"]
    before = {(q, s): _found(store, q, s) for q in queries for s in (None, one.id, two.id)}
    assert before[("ÜBERPRÜF", one.id)]  # the Unicode case fold of the scan matches
    assert before[("em0004", None)] and before[("zzzz-not-there", None)] == set()
    assert before[("em0004", one.id)] < before[("em0004", None)]  # scope is honoured
    assert all(len(found) < 500 for found in before.values())
    store.index_pending()
    after = {(q, s): _found(store, q, s) for q in queries for s in (None, one.id, two.id)}
    assert after == before


def test_tool_rows_stay_out_of_substring_search_before_and_after_R_9_3(
    store: SQLiteStore,
) -> None:
    session = store.create_session()
    messages = _bulk(DEFER_TRIGRAM_MIN)
    ids = store.append_messages(session.id, messages)
    tool_id = ids[2]  # "item00002x" is a tool row
    assert store.session_search("em00002") == []
    store.index_pending()
    assert store.session_search("em00002") == []
    assert tool_id not in _indexed(store.path, "em00002")


def test_small_writes_catch_up_a_bounded_amount_each(store: SQLiteStore) -> None:
    session = store.create_session()
    bulk = CATCH_UP_PER_WRITE * 2 + 500
    store.append_messages(session.id, _bulk(bulk))
    store.append_messages(session.id, conversation(1))  # 5 rows: itself + 1,000 waiting
    assert store.pending_index_rows() == bulk + 5 - (5 + CATCH_UP_PER_WRITE)
    for _ in range(2):
        store.append_messages(session.id, [{"role": "user", "content": "one more"}])
    assert store.pending_index_rows() == 0
    fts_integrity(store.path)
    assert _indexed(store.path, "one more")


def test_small_write_with_nothing_waiting_indexes_its_rows_in_its_transaction(
    store: SQLiteStore,
) -> None:
    session = store.create_session()
    ids = store.append_messages(session.id, [{"role": "user", "content": "quasarflux here"}])
    assert store.pending_index_rows() == 0
    assert _indexed(store.path, "asarflu") == set(ids)


def test_updates_and_deletes_of_waiting_and_indexed_rows_keep_both_indexes_sound(
    store: SQLiteStore,
) -> None:
    session = store.create_session()
    small = store.append_messages(session.id, [{"role": "user", "content": "indexed alpha"}])
    waiting = store.append_messages(session.id, _bulk(DEFER_TRIGRAM_MIN))
    conn = sqlite3.connect(store.path)
    with conn:  # what a future maintenance command or a migration could do
        conn.execute("UPDATE messages SET content = 'rewritten gamma' WHERE id = ?", (small[0],))
        conn.execute("UPDATE messages SET content = 'rewritten delta' WHERE id = ?",
                     (waiting[1],))
        conn.execute("UPDATE messages SET role = 'tool' WHERE id = ?", (waiting[3],))
        conn.execute("DELETE FROM messages WHERE id IN (?, ?)", (waiting[5], waiting[7]))
    conn.close()
    fts_integrity(store.path)
    assert _found(store, "written gam") == {small[0]}
    assert _found(store, "written del") == {waiting[1]}
    store.index_pending()
    fts_integrity(store.path)
    assert _indexed(store.path, "written del") == {waiting[1]}
    assert not _indexed(store.path, "indexed alpha")


def test_a_reused_id_below_the_mark_is_indexed_at_once(store: SQLiteStore) -> None:
    session = store.create_session()
    ids = store.append_messages(session.id, [{"role": "user", "content": f"row {i}"}
                                             for i in range(3)])
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute("DELETE FROM messages WHERE id = ?", (ids[-1],))
    conn.close()
    (reused,) = store.append_messages(session.id, [{"role": "user", "content": "phoenixword"}])
    assert reused == ids[-1]  # SQLite hands out max(id) + 1 again
    assert _indexed(store.path, "oenixwor") == {reused}
    fts_integrity(store.path)


def test_a_version_1_store_migrates_with_its_index_complete(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path, MIGRATIONS[:1])
    conn.execute("INSERT INTO sessions (id, created_at, last_activity_at) VALUES ('s1', 0, 0)")
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', ?, ?, 0)",
        [(m["role"], m["content"]) for m in _bulk(40)],
    )
    conn.close()
    store = open_store(path)
    assert isinstance(store, SQLiteStore)
    try:
        assert list(tmp_path.glob("state.db.v1-*.bak"))  # backed up before migrating
        assert store.pending_index_rows() == 0
        fts_integrity(path)
        assert _indexed(path, "em00013") == _found(store, "em00013") == {14}
        session = store.create_session()
        store.append_messages(session.id, _bulk(DEFER_TRIGRAM_MIN))
        assert store.pending_index_rows() == DEFER_TRIGRAM_MIN
        fts_integrity(path)
    finally:
        store.close()


def test_catch_up_budget_is_read_at_call_time(store: SQLiteStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_mod, "CATCH_UP_PER_WRITE", 10)
    session = store.create_session()
    store.append_messages(session.id, _bulk(DEFER_TRIGRAM_MIN))
    store.append_messages(session.id, [{"role": "user", "content": "x"}])
    assert store.pending_index_rows() == DEFER_TRIGRAM_MIN + 1 - 11


_CATCH_UP_CHILD = textwrap.dedent("""
    import sys
    from hermes_host.store import open_store
    store = open_store(sys.argv[1])
    print("ready", flush=True)
    store.index_pending(batch=int(sys.argv[2]))
    print("done", flush=True)
""")


@pytest.mark.slow
def test_sigkill_during_catch_up_leaves_a_sound_index_R_1_2(tmp_path: Path) -> None:
    """A real process catching up is killed at random moments (a new bulk write before each
    run keeps work waiting); every time, both indexes pass FTS5's integrity check and search
    answers what it answered before the run."""
    path = tmp_path / "state.db"
    store = open_store(path)
    assert isinstance(store, SQLiteStore)
    session = store.create_session()
    store.close()
    rng = random.Random(99)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    midway = 0
    for run in range(12):
        with open_store(path) as writer:
            assert isinstance(writer, SQLiteStore)
            writer.append_messages(session.id, _bulk(5_000, seed=run))
            expected = _found(writer, "em01233")
            before = writer.pending_index_rows()
        assert len(expected) == run + 1  # one user row per bulk write
        child = subprocess.Popen([sys.executable, "-c", _CATCH_UP_CHILD, str(path), "200"],
                                 stdout=subprocess.PIPE, text=True, env=env)
        assert child.stdout is not None
        with child.stdout:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.03))  # a run takes ~50 ms
            child.send_signal(signal.SIGKILL)
            child.wait()
        fts_integrity(path)
        with open_store(path) as check:
            assert isinstance(check, SQLiteStore)
            midway += 0 < check.pending_index_rows() < before
            assert _found(check, "em01233") == expected
    assert midway >= 3, "the kills never landed in the middle of a catch-up"
