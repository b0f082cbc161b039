"""Store contract: publishing a compression — rotate (R-8.1) and in-place (R-8.2), each in
one transaction, guarded by the lease (R-9.4) — on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_host.store import (
    Guards,
    Lease,
    LeaseLostError,
    PublishMode,
    StaleSessionError,
    StateStore,
    StoreError,
)
from hermes_host.testing.store_suite._kit import compressed_window, conversation, store

__all__ = ["store"]


def _lease(store: StateStore, session_id: str, ttl: float | None = None) -> Lease:
    lease = store.acquire_lease(session_id, ttl)
    assert isinstance(lease, Lease), lease
    return lease


def _snapshot(store: StateStore) -> list[Any]:
    """Everything the contract lets a caller read back: every session and every row."""
    sessions = store.list_sessions(limit=10_000, include_archived=True)
    rows: list[Any] = sorted(sessions, key=lambda s: s.id)
    for session in sessions:
        rows += store.all_messages(session.id)
        rows.append(store.read_guards(session.id))
    return rows


def test_rotate_creates_linked_child_in_one_transaction_R_8_1(store: StateStore) -> None:
    parent = store.create_session(title="my project", goal="ship v2", cwd="/srv", model="m",
                                  source="cli", user_id="u")
    store.append_messages(parent.id, conversation(5))
    store.write_guards(parent.id, Guards(cooldown_until=99.0, fallback_streak=1,
                                         ineffective_count=1))
    window = compressed_window("t")
    result = store.publish_compression(_lease(store, parent.id), parent.id, window)

    assert result.mode == "rotate" and result.parent_session_id == parent.id
    assert result.session_id != parent.id and result.title == "my project #2"
    assert result.flush_baseline == len(window) and len(result.message_ids) == len(window)
    child = store.get_session(result.session_id)
    assert child.parent_session_id == parent.id and child.compression_count == 1
    assert (child.goal, child.cwd, child.model, child.source, child.user_id) == (
        "ship v2", "/srv", "m", "cli", "u")
    assert child.guards == Guards(99.0, 1, 1)  # durable guards carried
    assert store.active_messages(child.id) == window
    ended = store.get_session(parent.id)
    assert ended.end_reason == "compression" and ended.ended_at is not None
    # Nothing of the old window was kept: the parent keeps all 21 rows, archived as
    # compacted (the old expectation, 21 *active* rows, counted a window nobody holds).
    rows = store.all_messages(parent.id)
    assert len(rows) == 21 and all(not r.active and r.compacted for r in rows)
    assert store.lineage(child.id) == [parent.id, child.id]


def test_rotate_title_numbering_skips_taken_numbers_R_8_1(store: StateStore) -> None:
    parent = store.create_session(title="proj")
    store.create_session(title="proj #2")  # e.g. a branch took #2
    result = store.publish_compression(_lease(store, parent.id), parent.id, compressed_window("a"))
    assert result.title == "proj #3"
    untitled = store.create_session()
    assert store.publish_compression(
        _lease(store, untitled.id), untitled.id, compressed_window("b")).title is None


def test_rotating_an_already_rotated_session_is_refused(store: StateStore) -> None:
    parent = store.create_session()
    lease = _lease(store, parent.id)
    child = store.publish_compression(lease, parent.id, compressed_window("a")).session_id
    with pytest.raises(StaleSessionError, match=child):
        store.publish_compression(lease, parent.id, compressed_window("b"))


def test_in_place_archives_and_keeps_history_searchable_R_8_2(store: StateStore) -> None:
    session = store.create_session()
    old = conversation(5, tag="archivedword")
    store.append_messages(session.id, old)
    window = compressed_window("fresh")
    result = store.publish_compression(_lease(store, session.id), session.id, window,
                                       mode="in_place")
    assert result.session_id == session.id and result.mode == "in_place"
    assert store.active_messages(session.id) == window
    rows = store.all_messages(session.id)
    archived = [r for r in rows if not r.active]
    assert [r.message for r in archived] == old and all(r.compacted for r in archived)
    assert store.get_session(session.id).compression_count == 1
    hits = store.session_search("archivedword", session_id=session.id)
    assert hits and not any(h.active for h in hits)


def test_flush_baseline_prevents_doubling_after_in_place_R_8_2(store: StateStore) -> None:
    """The host flushes ``window[baseline:]`` after a turn; right after an in-place publish
    the baseline covers the whole compressed window, so nothing is appended twice."""
    session = store.create_session()
    store.append_messages(session.id, conversation(4))
    window = compressed_window("w")
    result = store.publish_compression(_lease(store, session.id), session.id, window,
                                       mode="in_place")
    live = list(window)  # the host's in-memory window after adopting the compression
    store.append_messages(session.id, live[result.flush_baseline:])  # the later flush
    assert store.active_messages(session.id) == window
    live.append({"role": "assistant", "content": "next reply"})
    store.append_messages(session.id, live[result.flush_baseline:])
    assert store.active_messages(session.id) == live


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_lost_lease_aborts_publish_and_changes_nothing_R_9_4(store: StateStore,
                                                             mode: PublishMode) -> None:
    session = store.create_session(title="t")
    store.append_messages(session.id, conversation(3))
    stale = _lease(store, session.id, ttl=0.01)
    import time

    time.sleep(0.02)
    thief = _lease(store, session.id)  # the expired lease is reclaimed by someone else
    before = _snapshot(store)
    with pytest.raises(LeaseLostError, match=f"now held by {thief.holder}"):
        store.publish_compression(stale, session.id, compressed_window("x"), mode=mode)
    assert _snapshot(store) == before
    assert store.release_lease(thief) is True
    assert store.release_lease(thief) is False
    released = _snapshot(store)
    with pytest.raises(LeaseLostError, match="held by nobody"):
        store.publish_compression(thief, session.id, compressed_window("x"), mode=mode)
    assert _snapshot(store) == released


def test_publish_with_a_lease_for_another_session_is_refused(store: StateStore) -> None:
    a = store.create_session()
    b = store.create_session()
    lease_a = _lease(store, a.id)
    _lease(store, b.id)
    with pytest.raises(LeaseLostError):
        store.publish_compression(lease_a, b.id, compressed_window("x"))


def test_invalid_publish_input_changes_nothing(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, conversation(2))
    lease = _lease(store, session.id)
    before = _snapshot(store)
    with pytest.raises(StoreError, match="allowed: rotate, in_place"):
        store.publish_compression(lease, session.id, compressed_window("x"), mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="message 1"):
        store.publish_compression(lease, session.id, [{"role": "user"}, {"content": "no role"}],
                                  mode="in_place")
    assert _snapshot(store) == before


def test_goal_and_compression_count_accumulate_over_rotations(store: StateStore) -> None:
    sid = store.create_session(title="g", goal="persistent goal").id
    for i in range(3):
        lease = _lease(store, sid)
        sid = store.publish_compression(lease, sid, compressed_window(str(i))).session_id
    tip = store.get_session(sid)
    assert (tip.title, tip.goal, tip.compression_count) == ("g #4", "persistent goal", 3)
    assert len(store.lineage(sid)) == 4


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_published_tail_keeps_stored_token_counts(store: StateStore, mode: PublishMode) -> None:
    """Rows the window kept are not re-tokenized: their stored count is reused (here a
    sentinel the caller supplied); new rows (the summary) are counted."""
    from hermes_host.tokens import count_message

    session = store.create_session()
    history = conversation(3)
    store.append_messages(session.id, history, token_counts=[999] * len(history))
    summary = {"role": "user", "content": "[CONTEXT COMPACTION] s", "_compressed_summary": True}
    window = [history[0], summary, *history[-4:]]
    result = store.publish_compression(_lease(store, session.id), session.id, window, mode=mode)
    counts = [r.token_count for r in store.all_messages(result.session_id) if r.active]
    assert counts == [999, count_message(summary), 999, 999, 999, 999]
