"""Store contract: short non-ASCII queries (two-character CJK, one accented letter) are found
(issue 12, R-13.3), on every backend."""

from __future__ import annotations

import pytest

from hermes_host.store import StateStore, query
from hermes_host.testing.store_suite._kit import store

__all__ = ["store"]


def _ids(hits: list) -> list[int]:  # type: ignore[type-arg]
    return [h.message_id for h in hits]


def test_two_character_cjk_query_finds_its_messages_R_13_3(store: StateStore) -> None:
    a = store.create_session().id
    b = store.create_session().id
    call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    ids_a = store.append_messages(a, [
        {"role": "user", "content": "私は日本に行きます"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "日本 in a tool output"},
        {"role": "assistant", "content": "いいですね、東京はどうですか"},
    ])
    (id_b,) = store.append_messages(b, [{"role": "user", "content": "日本語を勉強しています"}])

    hits = store.session_search("日本")
    # The word index finds 日本 where it stands alone (in the tool output); the scan adds
    # the messages where it sits inside a run of text, newest first, tool rows excluded
    # as in the substring index.
    assert _ids(hits) == [ids_a[2], id_b, ids_a[0]]
    assert hits[2].content == "私は日本に行きます" and hits[2].after  # bookends come along
    assert _ids(store.session_search("日本", a)) == [ids_a[2], ids_a[0]]  # scope respected
    assert _ids(store.session_search("東京")) == [ids_a[3]]
    assert _ids(store.session_search("日", limit=1)) == [id_b]  # the limit holds
    assert store.session_search("韓国") == []


def test_short_non_ascii_query_folds_case_like_the_trigram_index(store: StateStore) -> None:
    sid = store.create_session().id
    (found,) = store.append_messages(sid, [{"role": "user", "content": "CAFÉ au lait"}])
    assert _ids(store.session_search("é")) == [found]
    assert _ids(store.session_search("fé")) == [found]


def test_short_scan_is_bounded_to_the_newest_rows(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = store.create_session().id
    (old,) = store.append_messages(sid, [{"role": "user", "content": "古い日本の話"}])
    store.append_messages(sid, [{"role": "user", "content": f"filler {i}"} for i in range(30)])
    assert _ids(store.session_search("日本")) == [old]
    monkeypatch.setattr(query, "SHORT_SCAN_ROWS", 20)  # the old row is now out of reach
    assert store.session_search("日本") == []
