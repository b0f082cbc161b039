"""A resumed window is not tokenised again (issue 32): the store hands each row's stored
``token_count`` with the window (``CountedWindowStore``), and the session's first count
reuses it for every message it holds unchanged; a message the window changed (merged,
clipped) is counted afresh."""

from __future__ import annotations

from pathlib import Path

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.store.base import CountedWindowStore
from hermes_host.tokens import TokenCounter


def _host(tmp_path: Path, model: str | None = None) -> ContextHost:
    data: dict[str, object] = {"memory": {"providers": []}}
    if model is not None:
        data["model"] = {"name": model}
    return ContextHost.from_config(HermesConfig.model_validate(data),
                                   store=tmp_path / "state.db")


def _turns(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 7}
            for i in range(n)]


def test_a_resumed_window_keeps_the_stored_counts(tmp_path: Path) -> None:
    host = _host(tmp_path)
    try:
        assert isinstance(host.store, CountedWindowStore)
        session = host.open_session(system_prompt="You are terse.")
        messages = _turns(200)
        host.store.append_messages(session.id, messages)  # the store counts them
        resumed = host.resume(session.id)
        misses = host.tokens.misses
        expected = TokenCounter().count_all(resumed.window())
        assert resumed.window_tokens == expected
        assert host.tokens.misses - misses <= 1  # the system prompt alone was tokenised
    finally:
        host.close()


def test_the_stored_count_is_what_is_reused(tmp_path: Path) -> None:
    """Counts the writer passed are the counts the window starts from (the store's word)."""
    host = _host(tmp_path)
    try:
        session = host.open_session(system_prompt="")
        messages = _turns(10)
        host.store.append_messages(session.id, messages, token_counts=[7] * len(messages))
        assert host.resume(session.id).window_tokens == 70
    finally:
        host.close()


def test_a_message_the_window_changed_is_counted_afresh(tmp_path: Path) -> None:
    host = _host(tmp_path)
    try:
        session = host.open_session(system_prompt="sys")
        messages = [*_turns(4), {"role": "assistant", "content": "a second answer in a row"},
                    {"role": "user", "content": "next"}]
        host.store.append_messages(session.id, messages, token_counts=[1000] * len(messages))
        resumed = host.resume(session.id)
        window = resumed.window()
        assert resumed.normalised.merged_adjacent == 1  # two answers merged into one
        fresh = TokenCounter().count_all(window)
        # kept at their place: the first three turns (1,000 each, the store's word); the
        # system prompt, the merged answer and the message after it (moved up by the merge)
        # are counted by the host
        assert [m["content"] for m in window[1:4]] == [m["content"] for m in messages[:3]]
        counter = TokenCounter()
        assert resumed.window_tokens == 3000 + sum(counter.count(m) for m in
                                                   (window[0], window[4], window[5]))
        assert resumed.window_tokens != fresh
    finally:
        host.close()


def test_another_encoding_counts_the_window_itself(tmp_path: Path) -> None:
    """A host whose model wants another encoding than the store's default does not trust
    the stored counts (when that encoding is available here; else both are the same)."""
    host = _host(tmp_path, model="gpt-4o")
    try:
        session = host.open_session(system_prompt="")
        messages = _turns(10)
        host.store.append_messages(session.id, messages, token_counts=[7] * len(messages))
        resumed = host.resume(session.id)
        if host._counts_fit():
            assert resumed.window_tokens == 70
        else:
            assert resumed.window_tokens == host.tokens.count_all(resumed.window())
    finally:
        host.close()
