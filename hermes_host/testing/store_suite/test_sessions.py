"""Store contract: sessions, guards, usage, lineage, resume, recap, history reader and engine
state (R-5.3, R-8.3, R-9.1), on every backend."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hermes_host.models import HistoryReader
from hermes_host.store import (
    Guards,
    Lease,
    SessionNotFoundError,
    StateStore,
    StoreError,
    TitleConflictError,
)
from hermes_host.testing.store_suite._kit import conversation, store
from hermes_host.testing.stores import StoreFactory

__all__ = ["store"]


def test_create_and_get_keep_every_routing_field_R_9_1(store: StateStore) -> None:
    session = store.create_session(
        source="telegram", user_id="u1", session_key="k", chat_id="c", chat_type="group",
        thread_id="t", model="claude-x", model_config={"temperature": 0.1},
        system_prompt="be brief", title="work", cwd="/srv/app", goal="ship v2",
    )
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", session.id)
    again = store.get_session(session.id)
    assert again == session
    assert (again.source, again.chat_type, again.model_config) == ("telegram", "group",
                                                                   {"temperature": 0.1})
    assert again.system_prompt == "be brief" and again.cwd == "/srv/app"


def test_titles_are_unique_R_9_1(store: StateStore) -> None:
    first = store.create_session(title="alpha")
    with pytest.raises(TitleConflictError, match=f"already used by session {first.id}"):
        store.create_session(title="alpha")
    other = store.create_session()
    with pytest.raises(TitleConflictError):
        store.update_session(other.id, title="alpha")
    assert store.update_session(first.id, title="alpha").title == "alpha"  # own title is fine


def test_unknown_session_is_a_clear_error(store: StateStore) -> None:
    with pytest.raises(SessionNotFoundError, match="no session with id 'nope'"):
        store.get_session("nope")
    with pytest.raises(SessionNotFoundError):
        store.append_messages("nope", [{"role": "user", "content": "x"}])
    with pytest.raises(SessionNotFoundError):
        store.create_session(parent_session_id="nope")
    with pytest.raises(SessionNotFoundError):
        store.read_guards("nope")


def test_list_is_most_recent_first_and_hides_archived(store: StateStore) -> None:
    a = store.create_session(title="a")
    b = store.create_session(title="b")
    store.append_messages(a.id, [{"role": "user", "content": "newer activity"}])
    assert [s.id for s in store.list_sessions()][:2] == [a.id, b.id]
    store.update_session(b.id, archived=True)
    assert b.id not in [s.id for s in store.list_sessions()]
    assert b.id in [s.id for s in store.list_sessions(include_archived=True)]
    listed = {s.id: s for s in store.list_sessions()}
    assert listed[a.id].message_count == 1 and listed[a.id].active_count == 1


def test_guards_are_durable_and_shared_between_store_instances_R_5_3(
    store_factory: StoreFactory,
) -> None:
    one = store_factory()
    two = store_factory()
    session = one.create_session()
    assert two.read_guards(session.id) == Guards()
    one.write_guards(session.id, Guards(cooldown_until=1234.5, fallback_streak=2,
                                        ineffective_count=1))
    assert two.read_guards(session.id) == Guards(1234.5, 2, 1)
    state = two.read_guards(session.id).as_guard_state(now=1000.0)
    assert (state.cooldown_until, state.fallback_streak, state.now) == (1234.5, 2, 1000.0)
    one.close()
    two.close()


def test_usage_counters_accumulate_R_9_1(store: StateStore) -> None:
    session = store.create_session()
    store.add_usage(session.id, input_tokens=100, output_tokens=20, cache_read_tokens=5,
                    cache_write_tokens=7, reasoning_tokens=3, cost_usd=0.25)
    store.add_usage(session.id, input_tokens=1, cost_usd=0.25)
    got = store.get_session(session.id)
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens,
            got.reasoning_tokens, got.cost_usd) == (101, 20, 5, 7, 3, 0.5)


def test_token_counts_are_stored_per_message(store: StateStore) -> None:
    from hermes_host.tokens import count_message

    session = store.create_session()
    window = conversation(3)
    store.append_messages(session.id, window)
    assert store.active_token_count(session.id) == sum(count_message(m) for m in window)


def test_lineage_root_to_child(store: StateStore) -> None:
    root = store.create_session()
    mid = store.create_session(parent_session_id=root.id)
    leaf = store.create_session(parent_session_id=mid.id)
    assert store.lineage(leaf.id) == [root.id, mid.id, leaf.id]
    assert store.lineage(root.id) == [root.id]


def _rotate(store: StateStore, session_id: str, tag: str) -> str:
    lease = store.acquire_lease(session_id)
    assert isinstance(lease, Lease)
    result = store.publish_compression(
        lease, session_id, [{"role": "user", "content": f"summary {tag}"}]
    )
    store.release_lease(lease)
    return result.session_id


def test_resume_by_id_last_and_title_picks_newest_in_lineage_R_8_3(store: StateStore) -> None:
    root = store.create_session(title="my project", cwd="/work/app")
    store.append_messages(root.id, conversation(1))
    child = _rotate(store, root.id, "one")
    grandchild = _rotate(store, child, "two")
    other = store.create_session(title="unrelated")
    assert store.get_session(grandchild).title == "my project #3"
    assert store.resume("my project").id == grandchild
    assert store.resume("my project #2").id == grandchild
    assert store.resume(root.id).id == root.id  # an explicit id is taken literally
    assert store.resume("last").id == other.id
    store.append_messages(grandchild, [{"role": "user", "content": "back again"}])
    assert store.resume("last").id == grandchild
    assert store.resume("last").cwd == "/work/app"  # the recorded working directory
    with pytest.raises(SessionNotFoundError, match="sessions list"):
        store.resume("no such thing")


def test_recap_is_compact_R_8_3(store: StateStore) -> None:
    session = store.create_session(title="recap", cwd="/srv")
    window: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(14):
        window += [
            {"role": "user", "content": f"question {i} " + "u" * 400},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"a{i}", "type": "function",
                 "function": {"name": "terminal", "arguments": "{}"}},
                {"id": f"b{i}", "type": "function",
                 "function": {"name": "read_file", "arguments": "{}"}},
            ]},
            {"role": "tool", "content": "SECRET-TOOL-OUTPUT", "tool_call_id": f"a{i}"},
            {"role": "tool", "content": "SECRET-TOOL-OUTPUT", "tool_call_id": f"b{i}"},
            {"role": "assistant", "content": "line one\nline two\nline three\nline four\n" +
             "a" * 300},
        ]
    store.append_messages(session.id, window)
    recap = store.recap(session.id)
    assert "Working directory: /srv" in recap
    assert "question 4 " in recap and "question 3 " not in recap  # last 10 turns only
    assert "4 earlier turns not shown" in recap
    assert "SECRET-TOOL-OUTPUT" not in recap and "line four" not in recap
    assert "[2 tool calls: terminal, read_file]" in recap
    user_lines = [ln for ln in recap.splitlines() if ln.strip().startswith("user:")]
    assert user_lines and all(len(ln.split("user: ", 1)[1]) <= 300 for ln in user_lines)
    assistant_block = recap.split("question 13", 1)[1]
    assert "line three" in assistant_block and "aaaa" not in assistant_block


def test_history_reader_is_read_only_and_sees_lineage(store: StateStore) -> None:
    root = store.create_session()
    store.append_messages(root.id, conversation(2, tag="rootword"))
    child = _rotate(store, root.id, "childword")
    reader = store.history_reader(child)
    assert isinstance(reader, HistoryReader)
    assert not any(hasattr(reader, name) for name in ("append_messages", "publish_compression"))
    everything = reader.messages()
    assert everything[0]["content"].endswith("rootword.")
    assert everything[-1] == {"role": "user", "content": "summary childword"}
    hits = reader.search("rootword")
    assert hits and {"message_id", "session_id", "role", "content", "score", "active"} <= set(
        hits[0]
    )
    assert hits[0]["session_id"] == root.id


def test_engine_state_round_trips_and_follows_rotation(store: StateStore) -> None:
    session = store.create_session()
    assert store.get_engine_state(session.id, "topic_router") == {}
    store.set_engine_state(session.id, "topic_router", {"branch": "b1", "n": [1, 2]})
    assert store.get_engine_state(session.id, "topic_router") == {"branch": "b1", "n": [1, 2]}
    child = _rotate(store, session.id, "x")
    assert store.get_engine_state(child, "topic_router") == {"branch": "b1", "n": [1, 2]}
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        store.set_engine_state(session.id, "bad", {"x": object()})


def test_store_usable_from_several_threads(store_factory: StoreFactory) -> None:
    import threading

    store = store_factory()
    session = store.create_session()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.append_messages(session.id, [{"role": "user", "content": f"t{n} m{i}"}])
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.active_messages(session.id)) == 80
    assert [m["content"] for m in store.active_messages(session.id)
            if m["content"].startswith("t2 ")] == [f"t2 m{i}" for i in range(20)]


def test_caller_supplied_token_counts_are_stored_and_checked(store: StateStore) -> None:
    session = store.create_session()
    window = conversation(1)
    store.append_messages(session.id, window, token_counts=[7] * len(window))
    assert store.active_token_count(session.id) == 7 * len(window)
    with pytest.raises(StoreError, match="got 1 token counts for 2 messages"):
        store.append_messages(session.id, window[:2], token_counts=[1])
    with pytest.raises(StoreError, match="message 0: token count must be an int"):
        store.append_messages(session.id, window[:1], token_counts=[-1])
    assert len(store.active_messages(session.id)) == len(window)
