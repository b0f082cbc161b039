"""Issue 16 (search at 1M messages): the PostgreSQL search paths the benchmark drove —
file-name chunks as words, a frequent term's newest hits by a bounded walk, a small
scope tested row by row — give the answers the contract asks for."""

from __future__ import annotations

import pytest

from hermes_host.store import query
from hermes_store_postgres import PostgresStore
from hermes_store_postgres import search as pg_search


def test_a_file_name_is_found_as_a_word_not_only_as_a_substring(
    pg_store: PostgresStore,
) -> None:
    """``parser.py`` is one token to PostgreSQL's parser (not ``parser`` and ``py``): the
    query chunk matches it as a word (ranked, score < 1000), like a row with both words —
    before, the row with the file name was missed whenever another row had both words
    (the words matched, so no substring scan ran)."""
    sid = pg_store.create_session().id
    pg_store.append_messages(sid, [
        {"role": "user", "content": "the bug is in parser.py near the lexer"},
        {"role": "assistant", "content": "parser and py are separate words here"},
        {"role": "user", "content": "nothing to see"}])
    hits = pg_store.session_search("parser.py")
    assert {h.content for h in hits} == {"the bug is in parser.py near the lexer",
                                         "parser and py are separate words here"}
    assert all(h.score < 1000 for h in hits)  # word hits, not the substring fallback
    assert {h.content for h in pg_store.session_search("lexer parser.py")} == {
        "the bug is in parser.py near the lexer"}
    # plain text only: tsquery operators in a chunk are not syntax, the words stay
    hostile = pg_store.session_search("parser.py&!(|'\":*")
    assert {h.content for h in hostile} == {h.content for h in hits}


@pytest.mark.parametrize("walk", [100_000, 1])
def test_a_frequent_term_returns_its_newest_hits_walked_or_sorted(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch, walk: int
) -> None:
    """Above RANK_CAP matches the newest hits win, whether the backward walk finds them
    (``RECENT_WALK`` large) or gives up and every match is sorted (``RECENT_WALK`` 1)."""
    monkeypatch.setattr(query, "RANK_CAP", 5)
    monkeypatch.setattr(pg_search, "RECENT_WALK", walk)
    sid = pg_store.create_session().id
    rows = []
    for i in range(40):
        rows.append({"role": "user", "content": f"walrus note {i}"})
        rows.append({"role": "assistant", "content": f"unrelated {i}"})
    pg_store.append_messages(sid, rows)
    hits = pg_store.session_search("walrus", limit=3)
    assert [h.content for h in hits] == ["walrus note 39", "walrus note 38", "walrus note 37"]
    few = pg_store.session_search("walrus 7")  # all words: few matches, ranked
    assert [h.content for h in few] == ["walrus note 7"]


@pytest.mark.parametrize("scan_max", [0, 20_000])
def test_a_scope_is_searched_the_same_by_index_or_by_its_rows(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch, scan_max: int
) -> None:
    monkeypatch.setattr(pg_search, "SCOPE_SCAN_MAX", scan_max)
    monkeypatch.setattr(pg_search, "SUBSTRING_SCAN_MAX", scan_max)
    a, b = pg_store.create_session().id, pg_store.create_session().id
    for sid, tag in ((a, "alpha"), (b, "beta")):
        pg_store.append_messages(sid, [
            {"role": "user", "content": f"{tag} walrus config.yaml"},
            {"role": "tool", "content": f"{tag} walrus in a tool row", "tool_call_id": "c"},
            {"role": "assistant", "content": f"{tag} done"}])
    words = pg_store.session_search("walrus", session_id=a)
    assert {h.content for h in words} == {"alpha walrus config.yaml", "alpha walrus in a tool row"}
    assert [h.content for h in pg_store.session_search("config.yaml", session_id=b)] == [
        "beta walrus config.yaml"]
    substring = pg_store.session_search("lrus in", session_id=a)
    assert substring == []  # substring search skips tool rows (SPEC)
    assert [h.content for h in pg_store.session_search("pha wal", session_id=a)] == [
        "alpha walrus config.yaml"]
    assert [len(h.before) + len(h.after) for h in words] == [2, 2]
