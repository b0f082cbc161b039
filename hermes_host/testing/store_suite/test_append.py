"""Store contract: bulk ``append_messages`` (R-9.2 ``token_count``, R-9.3 index sync) — a large
batch is stored with each message's own count, in order, and is searchable at once — on
every backend."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_host.store import SessionNotFoundError, StateStore
from hermes_host.testing.store_suite._kit import conversation, store
from hermes_host.tokens import count_message

__all__ = ["store"]


def _big_window() -> list[dict[str, Any]]:
    window = conversation(40, tag="bulk")
    # Distinct lengths, so a count written to the wrong row cannot go unnoticed.
    for i, message in enumerate(window):
        if message["role"] == "user":
            message["content"] += " word" * (i % 17)
    assert len(window) >= 64  # SQLite counts a batch this long on a worker thread
    return window


def test_bulk_append_stores_each_message_its_own_count_R_9_2(store: StateStore) -> None:
    window = _big_window()
    big = store.create_session()
    ids = store.append_messages(big.id, window)
    small = store.create_session()
    for i in range(0, len(window), 10):  # below the threshold: counted inline
        store.append_messages(small.id, window[i : i + 10])

    stored = store.all_messages(big.id)
    assert [row.id for row in stored] == ids
    expected = [count_message(m) for m in window]
    assert len(set(expected)) > 10
    assert [row.token_count for row in stored] == expected
    assert [row.token_count for row in store.all_messages(small.id)] == expected
    assert [row.message for row in stored] == window


def test_bulk_append_rows_are_searchable_in_both_indexes_R_9_3(store: StateStore) -> None:
    session = store.create_session()
    store.append_messages(session.id, _big_window())
    assert store.session_search("flaky", session_id=session.id)  # porter word index
    assert store.session_search("laky pars", session_id=session.id)  # trigram substring


def test_bulk_append_to_missing_session_stores_nothing_R_9_2(store: StateStore) -> None:
    keep = store.create_session()
    with pytest.raises(SessionNotFoundError):
        store.append_messages("no-such-session", _big_window())
    assert store.all_messages(keep.id) == []
    window = _big_window()
    store.append_messages(keep.id, window)  # the connection is usable afterwards
    assert store.active_token_count(keep.id) == sum(count_message(m) for m in window)
