"""``Session.truncate`` and ``open_session(session_id=...)``: what the framework integrations'
"pop item" / "clear session" and their own session keys stand on (issue 18)."""

from __future__ import annotations

from pathlib import Path

import pytest
from host_helpers import TailEngine, chat_turn, make_host

from hermes_host.store import StoreError


def test_truncate_archives_the_tail_and_keeps_the_conversation(tmp_path: Path) -> None:
    """Issue 18: the removed rows leave the window, stay in the store (archived, searchable),
    and the session and conversation ids do not change."""
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(title="t")
        session.add_user("first question about walruses")
        session.add_assistant("first answer")
        session.add_user("second question about narwhals")
        sid, cid = session.id, session.conversation_id

        removed = session.truncate(len(session.raw_window) - 1)
        assert removed == [{"role": "user", "content": "second question about narwhals"}]
        assert [m["content"] for m in session.raw_window] == ["first question about walruses",
                                                              "first answer"]
        assert (session.id, session.conversation_id) == (sid, cid)
        assert host.store.active_messages(sid) == session.raw_window
        hits = host.store.session_search("narwhals", session_id=sid)
        assert hits, "an archived row must stay searchable"

        resumed = host.resume(sid)
        assert resumed.raw_window == session.raw_window

        assert len(session.truncate(0)) == 2
        assert session.raw_window == [] and host.store.active_messages(sid) == []
        assert session.truncate(0) == []  # nothing left: a no-op
        session.add_user("after clearing")
        assert host.resume(sid).raw_window == [{"role": "user", "content": "after clearing"}]
        with pytest.raises(ValueError, match="keep >= 0"):
            session.truncate(-1)


def test_truncate_after_a_rotation_stays_on_the_tip(tmp_path: Path) -> None:
    """Issue 18: after a compression rotated the session, truncate works on the new window."""
    with make_host(tmp_path, TailEngine(keep=1, threshold=300)) as host:
        session = host.open_session(title="rot")
        first = session.id
        for n in range(3):
            chat_turn(session, n)
            session.end_turn()
        assert session.id != first and session.conversation_id == first
        size = len(session.raw_window)
        session.truncate(size - 1)
        assert len(host.store.active_messages(session.id)) == size - 1


def test_open_session_with_a_chosen_id(tmp_path: Path) -> None:
    """Issue 18: a framework's own key becomes the session id and so the conversation id;
    the same id twice is a clear StoreError, nothing written."""
    with make_host(tmp_path, TailEngine()) as host:
        session = host.open_session(session_id="user-42-chat")
        assert session.id == session.conversation_id == "user-42-chat"
        session.add_user("hello")
        with pytest.raises(StoreError, match="already exists"):
            host.open_session(session_id="user-42-chat")
        assert host.resume("user-42-chat").raw_window == [{"role": "user", "content": "hello"}]
