"""SQLite's own FTS5 index checks (R-9.3); the search behaviour itself is the contract
suite's (hermes_host/testing/store_suite/test_search.py, run on every backend)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_helpers import conversation, fts_integrity

from hermes_host.store import StateStore


def test_tool_rows_are_absent_from_trigram_index_R_9_3(store: StateStore,
                                                       tmp_path: Path) -> None:
    session = store.create_session()
    store.append_messages(session.id, conversation(2))
    conn = sqlite3.connect(tmp_path / "state.db")
    tool_ids = {r[0] for r in conn.execute("SELECT id FROM messages WHERE role = 'tool'")}
    assert tool_ids
    tri = {r[0] for r in conn.execute(
        "SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '\"toolonly\"'")}
    porter = {r[0] for r in conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'toolonlyoutput0'")}
    conn.close()
    assert tri == set()
    assert porter and porter <= tool_ids  # tool output is still searchable by word
    assert [h.role for h in store.session_search("toolonlyoutput1")] == ["tool"]
    fts_integrity(tmp_path / "state.db")


def test_fts_triggers_follow_content_edits_not_flag_changes(store: StateStore,
                                                            tmp_path: Path) -> None:
    session = store.create_session()
    store.append_messages(session.id, [{"role": "user", "content": "original wording"}])
    conn = sqlite3.connect(tmp_path / "state.db")
    conn.execute("UPDATE messages SET content = 'rewritten phrasing'")
    conn.execute("UPDATE messages SET role = 'tool'")
    conn.commit()
    conn.close()
    assert store.session_search("original") == []
    assert [h.content for h in store.session_search("phrasing")] == ["rewritten phrasing"]
    assert store.session_search("ritten phras") == []  # now a tool row: out of trigram
    fts_integrity(tmp_path / "state.db")
    conn = sqlite3.connect(tmp_path / "state.db")
    conn.execute("DELETE FROM messages")
    conn.commit()
    conn.close()
    assert store.session_search("phrasing") == []
    fts_integrity(tmp_path / "state.db")
