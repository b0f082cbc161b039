"""Versioned migrations and failure modes of the store file (R-9, R-1.2).

The migration *mechanism* (ordered list, one transaction, backup first, refusal of a newer
version, rollback on failure) is tested here by appending a genuine extra step to the list;
the one real upgrade so far (version 1 → 2, the trigram catch-up) is tested with its
behaviour in ``test_store_trigram_catchup.py``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from store_helpers import conversation

from hermes_host.store import SchemaTooNewError, StoreError, open_store
from hermes_host.store import schema as schema_mod
from hermes_host.store.sqlite.schema import LATEST_VERSION, MIGRATIONS, Migration, split_statements

EXPECTED_OBJECTS = {
    ("table", "sessions"),
    ("table", "messages"),
    ("table", "messages_fts"),
    ("table", "messages_fts_trigram"),
    ("table", "compression_locks"),
    ("table", "trigram_progress"),
    ("table", "engine_state"),
    ("view", "messages_fts_trigram_source"),
    ("trigger", "messages_fts_insert"),
    ("trigger", "messages_fts_delete"),
    ("trigger", "messages_fts_update"),
}


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_empty_file_migrates_to_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.touch()  # an existing empty file, e.g. created by an installer
    open_store(path).close()
    assert _version(path) == LATEST_VERSION
    conn = sqlite3.connect(path)
    objects = set(conn.execute("SELECT type, name FROM sqlite_master").fetchall())
    columns = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    session_columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    conn.close()
    assert EXPECTED_OBJECTS <= objects
    assert {"role", "content", "tool_calls", "tool_name", "tool_call_id", "token_count",
            "timestamp", "finish_reason", "active", "compacted", "api_content", "reasoning",
            "reasoning_details", "platform_message_id", "observed", "extra"} <= columns
    assert {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
            "reasoning_tokens", "cooldown_until", "fallback_streak", "ineffective_count",
            "parent_session_id", "title", "archived", "pinned", "cost_usd", "model_config",
            "system_prompt", "last_activity_at"} <= session_columns
    assert not list(tmp_path.glob("*.bak"))  # nothing to back up in a fresh store


def test_reopening_a_current_store_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    session = store.create_session()
    store.append_messages(session.id, conversation(2))
    store.close()
    again = open_store(path)
    assert len(again.active_messages(session.id)) == 9
    again.close()
    assert not list(tmp_path.glob("*.bak"))


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(SchemaTooNewError) as info:
        open_store(path)
    message = str(info.value)
    assert f"schema version {LATEST_VERSION + 5}" in message
    assert f"up to {LATEST_VERSION}" in message and "upgrade hermes-host" in message
    assert path.read_bytes() == before


def _v2() -> Migration:
    return Migration(
        LATEST_VERSION + 1,
        "test step: a bookmarks table filled from existing rows",
        """
        CREATE TABLE bookmarks (message_id INTEGER PRIMARY KEY REFERENCES messages(id));
        INSERT INTO bookmarks SELECT id FROM messages WHERE role = 'user';
        """,
    )


def test_earlier_version_migrates_after_a_backup(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    session = store.create_session()
    store.append_messages(session.id, conversation(3))
    store.close()
    monkeypatch.setattr(schema_mod, "MIGRATIONS", [*MIGRATIONS, _v2()])
    store = open_store(path)
    assert _version(path) == LATEST_VERSION + 1
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM bookmarks").fetchone()[0] == 3
    conn.close()
    (backup,) = tmp_path.glob(f"state.db.v{LATEST_VERSION}-*.bak")
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert _version(backup) == LATEST_VERSION
    assert len(store.active_messages(session.id)) == 13
    store.close()


def test_failed_migration_rolls_back_entirely(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    session = store.create_session()
    store.append_messages(session.id, conversation(1))
    store.close()
    broken = Migration(LATEST_VERSION + 1, "breaks halfway",
                       "CREATE TABLE half (x);\nINSERT INTO no_such_table VALUES (1);")
    monkeypatch.setattr(schema_mod, "MIGRATIONS", [*MIGRATIONS, broken])
    with pytest.raises(StoreError, match=f"left at version {LATEST_VERSION}; a backup is at"):
        open_store(path)
    assert _version(path) == LATEST_VERSION
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "half" not in names  # the first statement was rolled back too
    monkeypatch.setattr(schema_mod, "MIGRATIONS", MIGRATIONS)
    assert len(open_store(path).active_messages(session.id)) == 5


def test_v2_store_gets_conversation_ids_and_window_order(tmp_path: Path) -> None:
    """A v2 store (before conversation ids): a rotation chain becomes one conversation, a
    branch stays its own, and every row gets its window order."""
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for step in MIGRATIONS[:2]:
        for statement in split_statements(step.sql):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    sessions = [  # id, parent, created, ended, end_reason
        ("root", None, 1.0, 5.0, "compression"),
        ("child", "root", 5.0, 9.0, "compression"),
        ("tip", "child", 9.0, None, None),
        ("fork", "root", 3.0, None, None),  # a /branch taken before the rotation
    ]
    for sid, parent, created, ended, reason in sessions:
        conn.execute(
            "INSERT INTO sessions (id, parent_session_id, created_at, ended_at, end_reason, "
            "last_activity_at) VALUES (?, ?, ?, ?, ?, ?)",
            (sid, parent, created, ended, reason, created),
        )
    for n, sid in enumerate(["root", "root", "child", "tip", "fork"]):
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            (sid, "user", f"message {n}", float(n)),
        )
    conn.close()
    store = open_store(db)
    try:
        assert _version(db) == LATEST_VERSION
        conversations = {s: store.get_session(s).conversation_id for s, *_ in sessions}
        assert conversations == {"root": "root", "child": "root", "tip": "root", "fork": "fork"}
        assert [m["content"] for m in store.active_messages("root")] == ["message 0",
                                                                          "message 1"]
        listed = {c.id: (c.tip.id, c.rotations) for c in store.list_conversations()}
        assert listed == {"root": ("tip", 2), "fork": ("fork", 0)}
        assert store.resume("root").id == "root" and store.window_marker("root").session_id == "tip"
    finally:
        store.close()


def test_split_statements_keeps_trigger_bodies_whole() -> None:
    statements = split_statements(MIGRATIONS[0].sql)
    triggers = [s for s in statements if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 3 and all(s.rstrip().endswith("END;") for s in triggers)
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("CREATE TABLE x (a")


def test_full_disk_is_a_clear_store_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    session = store.create_session()
    conn = store._conn()  # simulate a full disk: cap the file at its current size
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    big = [{"role": "user", "content": f"{i} " + "x" * 4000} for i in range(50)]
    with pytest.raises(StoreError, match="full; free some space") as info:
        store.append_messages(session.id, big)
    assert str(path) in str(info.value) and "nothing was changed" in str(info.value)
    assert store.active_messages(session.id) == []
    store.append_messages(session.id, [{"role": "user", "content": "small"}])  # still usable


def test_read_only_store_is_a_clear_store_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    session = store.create_session()
    store._conn().execute("PRAGMA query_only = ON")  # the same refusal a read-only file gives
    with pytest.raises(StoreError, match="read-only"):
        store.append_messages(session.id, [{"role": "user", "content": "x"}])
    store.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_store_in_read_only_directory_is_a_clear_store_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StoreError, match=str(locked)):
            open_store(locked / "state.db")
    finally:
        locked.chmod(0o700)


def test_unopenable_paths_are_clear_store_errors(tmp_path: Path) -> None:
    a_file = tmp_path / "plain.txt"
    a_file.write_text("not a directory")
    with pytest.raises(StoreError, match=r"plain\.txt is a file, not a directory"):  # issue 12
        open_store(a_file / "state.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is certainly not sqlite" * 100)
    with pytest.raises(StoreError, match="not a hermes-host store"):
        open_store(garbage)
    with pytest.raises(StoreError, match="cannot open"):
        open_store(tmp_path)  # a directory
