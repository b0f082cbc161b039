"""Appending costs O(new messages), not O(window) (issue 15), and stays correct.

Not a timed test: it proves the bookkeeping is incremental by what an append *does* (which
SQL statements it runs, how many messages the running token total counts), and proves it
correct against a full recount after appends, repairs, undo, compression and resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_host.host import Session
from hermes_host.messages import normalize_alternation, repair_tool_pairs
from hermes_host.store.sqlite import SQLiteStore
from hermes_host.tokens import TokenCounter
from tests.host_helpers import TailEngine, chat_turn, make_host


def _reference_window(session: Session) -> list[dict[str, Any]]:
    """The normalised window computed from scratch, the way it was before issue 15."""
    merged, _ = repair_tool_pairs(session.raw_window)
    merged, _ = normalize_alternation(merged)
    head = [{"role": "system", "content": session.system_prompt}] if session.system_prompt else []
    return head + merged


def _assert_consistent(session: Session) -> None:
    window = session.window()
    assert window == _reference_window(session)
    assert session.window_tokens == TokenCounter().count_all(window)  # a full recount


def _statements_of(store: SQLiteStore, action: Any) -> list[str]:
    conn = store._conn()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        conn.set_trace_callback(None)
    return seen


@pytest.mark.parametrize("size", [10, 400])
def test_an_append_does_not_count_the_window(tmp_path: Path, size: int) -> None:
    """Issue 15: `add_user` runs the same statements at any window size — none that counts
    the session's rows — and the running token total counts only the new message."""
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        host.store.append_messages(session.id, [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
            for i in range(size)
        ])
        session = host.resume(session.id)
        session.window()
        session.add_user("warm")  # the first append after a resume computes the marker
        session.add_assistant("ok")
        session.window()
        assert isinstance(host.store, SQLiteStore)
        statements = _statements_of(host.store, lambda: session.add_user("hello"))
        counting = [s for s in statements if "count(" in s.lower() and "session_id" in s]
        assert counting == [], statements
        counted: list[object] = []
        running = session._running
        original = running.append
        running.append = lambda m: counted.append(m) or original(m)  # type: ignore[method-assign]
        session.window()
        assert counted == [{"role": "user", "content": "hello"}]
        _assert_consistent(session)


def test_running_total_equals_a_full_recount_throughout(tmp_path: Path) -> None:
    """Issue 15, R-1.4, R-6.9: after appends (clean turns, a dangling call, two neighbours
    of one role), undo, compressions and a resume, the incremental window and token total
    equal the window normalised from scratch and a full recount."""
    engine = TailEngine(keep=2, threshold=10**9)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(title="t", system_prompt="You are terse.")
        for n in range(8):
            chat_turn(session, n, size=5)
            _assert_consistent(session)
        session.add_assistant("a call left open", [{
            "id": "open_1", "type": "function",
            "function": {"name": "grep", "arguments": "{}"}}])
        _assert_consistent(session)  # repaired: a dangling result is shown
        session.add_tool_result("open_1", "found it", name="grep")
        _assert_consistent(session)
        session.add_user("first of two")
        session.add_user("second of two")  # merged for the wire
        _assert_consistent(session)
        # the two users, and the open call's assistant right after the last answer
        assert session.normalised.merged_adjacent == 2
        for n in range(8, 12):
            chat_turn(session, n, size=5)
            _assert_consistent(session)
        assert session.undo(2) > 0
        _assert_consistent(session)
        chat_turn(session, 12, size=5)
        _assert_consistent(session)
        report = session.compress()
        assert report.status == "committed", report
        _assert_consistent(session)
        for n in range(13, 16):
            chat_turn(session, n, size=5)
            _assert_consistent(session)
        assert session.compress().status == "committed"
        chat_turn(session, 16, size=5)
        _assert_consistent(session)
        resumed = host.resume(session.id)
        _assert_consistent(resumed)
        chat_turn(resumed, 17, size=5)
        _assert_consistent(resumed)


def test_the_window_marker_sees_every_other_writer(tmp_path: Path) -> None:
    """R-5.3 / several processes: the marker an append keeps without recounting equals a
    fresh count, and a write through another connection (another process's store) or
    through another path of the same store is seen at the next check."""
    path = tmp_path / "state.db"
    mine, theirs = SQLiteStore(path), SQLiteStore(path)
    try:
        sid = mine.create_session(title="s").id

        def fresh() -> object:
            other = SQLiteStore(path)
            try:
                return other.window_marker(sid)
            finally:
                other.close()

        mine.window_marker(sid)
        mine.append_messages(sid, [{"role": "user", "content": "a"}])
        mine.append_messages(sid, [{"role": "assistant", "content": "b"}] * 3)
        assert mine.window_marker(sid) == fresh()
        assert mine.window_marker(sid).active_count == 4
        theirs.append_messages(sid, [{"role": "user", "content": "c"}])
        assert mine.window_marker(sid) == fresh()
        assert mine.window_marker(sid).active_count == 5
        mine.append_messages(sid, [{"role": "assistant", "content": "d"}])
        assert mine.window_marker(sid) == fresh()
        # an in-place publish by the other connection (an undo elsewhere): fewer active rows
        lease = theirs.acquire_lease(sid)
        kept = theirs.active_messages(sid)[:2]
        theirs.publish_compression(lease, sid, kept, mode="in_place", reason="undo")  # type: ignore[arg-type]
        theirs.release_lease(lease)  # type: ignore[arg-type]
        assert mine.window_marker(sid) == fresh()
        assert mine.window_marker(sid).active_count == 2
    finally:
        mine.close()
        theirs.close()


def test_markers_of_several_sessions_in_one_store_stay_right(tmp_path: Path) -> None:
    """Issue 15: one process serving several sessions keeps each one's marker across the
    others' appends without recounting, and each equals a fresh count."""
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    try:
        ids = [store.create_session(title=f"s{i}").id for i in range(3)]
        for sid in ids:
            store.window_marker(sid)
        for n in range(5):
            for k, sid in enumerate(ids):
                store.append_messages(sid, [{"role": "user", "content": f"{n}.{k}"}] * (k + 1))
        statements = _statements_of(store, lambda: [store.window_marker(s) for s in ids])
        assert [s for s in statements if "count(" in s.lower()] == []
        fresh = SQLiteStore(path)
        try:
            for k, sid in enumerate(ids):
                assert store.window_marker(sid) == fresh.window_marker(sid)
                assert store.window_marker(sid).active_count == 5 * (k + 1)
        finally:
            fresh.close()
    finally:
        store.close()

