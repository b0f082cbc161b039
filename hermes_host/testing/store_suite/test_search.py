"""Store contract: ``session_search`` — words (stemmed, ranked), substrings (tool rows
excluded), hostile input, bookends, scope (R-9.3, R-13.3) — on every backend."""

from __future__ import annotations

import pytest

from hermes_host.store import Lease, StateStore
from hermes_host.testing.store_suite._kit import compressed_window, conversation, store

__all__ = ["store"]

HOSTILE = [
    '"',
    '""',
    '"unterminated',
    "*",
    "fix*",
    "NEAR(",
    "NEAR(a b",
    "NEAR(parser test, 2)",
    "OR",
    "parser OR",
    "AND NOT",
    "-parser",
    "parser -test",
    "(((",
    "parser)",
    "^parser",
    "content:parser",
    "{content tool_name}: x",
    "a\x00b",
    "\x00",
    "lone \udc80 surrogate",
    "\ud800",
    "x" * 10_000,
    "parser " * 2_000,
    "",
    "   ",
    "🙂🙂🙂",
    "'; DROP TABLE messages; --",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_raise_R_13_3(store: StateStore, query: str) -> None:
    session = store.create_session()
    store.append_messages(session.id, conversation(3))
    hits = store.session_search(query)
    scoped = store.session_search(query, session_id=session.id, lineage=False)
    assert isinstance(hits, list) and {h.session_id for h in scoped} <= {session.id}
    if "parser" in query:  # the words still count, the syntax does not
        assert any("parser" in h.content for h in hits)
    assert len(store.active_messages(session.id)) == 13  # nothing was dropped or injected


def test_operators_are_literal_not_syntax_R_13_3(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, [
        {"role": "user", "content": "how does NEAR work in sqlite"},
        {"role": "assistant", "content": "cats and dogs"},
    ])
    near = store.session_search("NEAR")
    assert [h.content for h in near] == ["how does NEAR work in sqlite"]
    # "cats OR nothing": OR is a word, not an operator; fallback to any-term still finds cats
    assert [h.content for h in store.session_search("cats OR zebra")] == ["cats and dogs"]


def test_hit_has_bookends_goal_and_conclusion_R_13_3(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Goal: migrate the billing service"},
        {"role": "assistant", "content": "I found the kafkaconsumer lag issue"},
        {"role": "assistant", "content": "Conclusion: raised partitions to 12"},
        {"role": "user", "content": "thanks"},
    ])
    (hit,) = store.session_search("kafkaconsumer")
    before = [m.message["content"] for m in hit.before]
    assert before == ["sys", "Goal: migrate the billing service"]
    assert hit.after[0].message["content"] == "Conclusion: raised partitions to 12"
    as_dict = hit.to_dict()
    assert as_dict["before"][1]["content"].startswith("Goal") and as_dict["score"] == hit.score


def test_archived_messages_are_found_R_8_2(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, conversation(3, tag="zanzibar"))
    lease = store.acquire_lease(session.id)
    assert isinstance(lease, Lease)
    store.publish_compression(lease, session.id, compressed_window("after"), mode="in_place")
    hits = store.session_search("zanzibar", session_id=session.id)
    assert hits and all(not h.active for h in hits)
    substring = store.session_search("nzibar")  # trigram: a substring, not a word
    assert substring and all(not h.active for h in substring)


def test_tool_rows_are_word_searchable_but_not_substring_searchable_R_9_3(
    store: StateStore,
) -> None:
    session = store.create_session()
    store.append_messages(session.id, conversation(2))
    assert store.session_search("toolonly") == []  # a substring of tool output only
    assert [h.role for h in store.session_search("toolonlyoutput1")] == ["tool"]
    assert [h.role for h in store.session_search("laky pars")] == ["user", "user"]


def test_search_scope_session_and_lineage(store: StateStore) -> None:
    root = store.create_session()
    store.append_messages(root.id, [{"role": "user", "content": "ancestral quokka"}])
    lease = store.acquire_lease(root.id)
    assert isinstance(lease, Lease)
    child = store.publish_compression(
        lease, root.id, [{"role": "user", "content": "child quokka"}]).session_id
    stranger = store.create_session()
    store.append_messages(stranger.id, [{"role": "user", "content": "foreign quokka"}])
    everywhere = {h.session_id for h in store.session_search("quokka")}
    assert everywhere == {root.id, child, stranger.id}
    lineage = {h.session_id for h in store.session_search("quokka", session_id=child)}
    assert lineage == {root.id, child}
    only = {h.session_id for h in store.session_search("quokka", child, lineage=False)}
    assert only == {child}
    assert len(store.session_search("quokka", limit=1)) == 1


def test_porter_stemming_and_ranking(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, [
        {"role": "user", "content": "the migration is running"},
        {"role": "user", "content": "migrations migrations migrated"},
        {"role": "user", "content": "unrelated"},
    ])
    hits = store.session_search("migrate")
    assert {h.content for h in hits} == {"the migration is running",
                                         "migrations migrations migrated"}
    assert hits[0].score <= hits[1].score


def test_scoped_search_with_interleaved_sessions(store: StateStore) -> None:
    """Sessions written alternately share one id range; scoping still filters exactly."""
    a = store.create_session()
    b = store.create_session()
    for i in range(5):
        store.append_messages(a.id, [{"role": "user", "content": f"walrus from a {i}"}])
        store.append_messages(b.id, [{"role": "user", "content": f"walrus from b {i}"}])
    hits = store.session_search("walrus", session_id=a.id, limit=50)
    assert len(hits) == 5 and {h.session_id for h in hits} == {a.id}


def test_very_common_terms_return_most_recent_hits(store: StateStore,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Above RANK_CAP matches, ranking every row would be slow: the newest hits win."""
    from hermes_host.store import query

    monkeypatch.setattr(query, "RANK_CAP", 3)
    session = store.create_session()
    store.append_messages(session.id, [
        {"role": "user", "content": f"common word number{i}"} for i in range(10)])
    hits = store.session_search("common", limit=2)
    assert sorted(h.content for h in hits) == ["common word number8", "common word number9"]
    rare = store.session_search("number4")
    assert [h.content for h in rare] == ["common word number4"]


def test_a_rotated_lineage_holds_each_message_once_so_search_finds_it_once(
    store: StateStore,
) -> None:
    """Rotation copied the kept tail into the child: the same tool output was then found
    twice, once per session (and stored twice).  The kept rows now move, ids unchanged."""
    root = store.create_session()
    history = conversation(4, tag="ibex")[1:]
    store.append_messages(root.id, history)
    kept = history[-4:]  # the last turn, tool output included
    kept_ids = [r.id for r in store.all_messages(root.id)][-4:]
    sid = root.id
    for n in range(3):  # three rotations, each keeping the same last turn
        lease = store.acquire_lease(sid)
        assert isinstance(lease, Lease)
        summary = {"role": "user", "content": f"summary {n}", "_compressed_summary": True}
        result = store.publish_compression(lease, sid, [summary, *kept])
        assert result.message_ids[1:] == kept_ids
        sid = result.session_id
    hits = store.session_search("toolonlyoutput3", session_id=sid)
    assert [(h.message_id, h.session_id, h.active) for h in hits] == [(kept_ids[2], sid, True)]
    rows = [r for s in store.lineage(sid) for r in store.all_messages(s)]
    assert len(rows) == len(history) + 3  # every message once, plus one row per summary
    assert [r.message for r in store.all_messages(sid) if r.active][1:] == kept
