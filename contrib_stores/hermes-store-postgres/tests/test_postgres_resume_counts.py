"""Issue 32 on PostgreSQL: a resumed window is not tokenised again.  The store hands each
row's stored ``token_count`` with the window, in the window's own query
(``CountedWindowStore``), and the session's first count reuses it for every message it holds
unchanged; a message the window changed is counted afresh - the same as on SQLite
(``tests/test_session_resume_counts.py``), on a real server started by the suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.store import SessionNotFoundError
from hermes_host.store.base import CountedWindowStore
from hermes_host.tokens import TokenCounter
from hermes_store_postgres import PostgresStore
from hermes_store_postgres.testing import TestServer


def _config(**extra: object) -> HermesConfig:
    data: dict[str, object] = {"memory": {"providers": []}, **extra}
    return HermesConfig.model_validate(data)


@pytest.fixture
def host(hermes_postgres: TestServer) -> Iterator[ContextHost]:
    with ContextHost.from_config(_config(), store=hermes_postgres.fresh_url()) as host:
        yield host


def _turns(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 7}
            for i in range(n)]


def test_the_postgres_store_hands_the_window_with_its_counts(pg_store: PostgresStore) -> None:
    assert isinstance(pg_store, CountedWindowStore)
    session = pg_store.create_session()
    assert pg_store.active_messages_counted(session.id) == ([], [])
    messages = _turns(70)  # past the COPY threshold: both append paths store the counts
    pg_store.append_messages(session.id, messages[:3], token_counts=[5, 6, 7])
    pg_store.append_messages(session.id, messages[3:])
    window, counts = pg_store.active_messages_counted(session.id)
    assert window == pg_store.active_messages(session.id) == messages
    counter = TokenCounter()
    assert counts == [5, 6, 7, *(counter.count(m) for m in messages[3:])]
    assert sum(counts) == pg_store.active_token_count(session.id)
    with pytest.raises(SessionNotFoundError):
        pg_store.active_messages_counted("no-such-session")


def test_a_resumed_window_keeps_the_stored_counts(host: ContextHost) -> None:
    session = host.open_session(system_prompt="You are terse.")
    host.store.append_messages(session.id, _turns(200))  # the store counts them
    resumed = host.resume(session.id)
    misses = host.tokens.misses
    expected = TokenCounter().count_all(resumed.window())
    assert resumed.window_tokens == expected
    assert host.tokens.misses - misses <= 1  # the system prompt alone was tokenised


def test_the_stored_count_is_what_is_reused(host: ContextHost) -> None:
    """Counts the writer passed are the counts the window starts from (the store's word)."""
    session = host.open_session(system_prompt="")
    messages = _turns(10)
    host.store.append_messages(session.id, messages, token_counts=[7] * len(messages))
    assert host.resume(session.id).window_tokens == 70


def test_a_message_the_window_changed_is_counted_afresh(host: ContextHost) -> None:
    session = host.open_session(system_prompt="sys")
    messages = [*_turns(4), {"role": "assistant", "content": "a second answer in a row"},
                {"role": "user", "content": "next"}]
    host.store.append_messages(session.id, messages, token_counts=[1000] * len(messages))
    resumed = host.resume(session.id)
    window = resumed.window()
    assert resumed.normalised.merged_adjacent == 1  # two answers merged into one
    assert [m["content"] for m in window[1:4]] == [m["content"] for m in messages[:3]]
    counter = TokenCounter()  # the store's word for the three kept, a fresh count for the rest
    assert resumed.window_tokens == 3000 + sum(counter.count(m) for m in
                                               (window[0], window[4], window[5]))
    assert resumed.window_tokens != counter.count_all(window)


def test_a_compressed_session_resumes_with_counts_equal_to_a_fresh_count(
    hermes_postgres: TestServer,
) -> None:
    """After compressions (a rotated session, its summary row written by the host) the
    stored counts a resume reuses are what counting the window afresh gives."""
    config = _config(summarizer={"provider": "offline"},
                     model={"context_length": 3000, "max_output_tokens": 300})
    url = hermes_postgres.fresh_url()
    with ContextHost.from_config(config, store=url) as host:
        session = host.open_session(system_prompt="You fix parsers.")
        for n in range(30):
            session.add_user(f"step {n}: what does the parser do with input {n}? " + "x " * 60)
            session.build_request()
            session.add_assistant(f"it reads token {n} " + "y " * 60)
            session.end_turn({"input_tokens": 100 + n, "output_tokens": 9})
        assert session.compression_count >= 1
        window = session.window()
    with ContextHost.from_config(config, store=url) as other:  # its counter has seen nothing
        resumed = other.resume(session.id)
        misses = other.tokens.misses
        assert resumed.window() == window
        assert resumed.window_tokens == TokenCounter().count_all(window)
        assert other.tokens.misses - misses <= 1  # the system prompt alone was tokenised


def test_another_encoding_counts_the_window_itself(hermes_postgres: TestServer) -> None:
    """A host whose model wants another encoding than the store's default does not trust
    the stored counts (when that encoding is available here; else both are the same)."""
    config = _config(model={"name": "gpt-4o"})
    with ContextHost.from_config(config, store=hermes_postgres.fresh_url()) as host:
        session = host.open_session(system_prompt="")
        messages = _turns(10)
        host.store.append_messages(session.id, messages, token_counts=[7] * len(messages))
        resumed = host.resume(session.id)
        if host._counts_fit():
            assert resumed.window_tokens == 70
        else:
            assert resumed.window_tokens == host.tokens.count_all(resumed.window())
