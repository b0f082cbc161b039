"""The window's token count is kept incrementally and stays exact (R-4.1 input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.tokens import count_message
from tests.host_helpers import TailEngine, chat_turn, make_host


def test_incremental_window_tokens_equal_a_full_recount(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(keep=2, threshold=2500)) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(12):
            chat_turn(session, n)
            # adjacent user messages are merged in the window: the last message changes
            session.add_user(f"interrupted {n}")
            session.add_user(f"follow-up {n} " + "x" * n)
            expected = sum(count_message(m) for m in session.window())
            assert session.window_tokens == expected
            session.add_assistant(f"answer {n}")
            session.end_turn()
            assert session.window_tokens == sum(count_message(m) for m in session.window())
        assert session.compression_count >= 1  # the count also survived compressions


def test_each_added_message_is_tokenized_once_and_stored_with_its_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hermes_host.store.rules as sqlite_mod
    import hermes_host.tokens as tokens_mod

    calls: list[int] = []
    real = tokens_mod.count_message
    for module in (tokens_mod, sqlite_mod):  # the host's counter and the store's
        monkeypatch.setattr(module, "count_message",  # (message, model=None)
                            lambda m, *model: calls.append(1) or real(m, *model))
    with make_host(tmp_path, TailEngine(keep=2, threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(3):
            chat_turn(session, n)  # 4 messages, each followed by a window count
        assert session.window_tokens == sum(real(m) for m in session.window())
        # 12 messages and the system prompt: one tokenization each, whoever asks
        assert len(calls) == 13
        stored = host.store.all_messages(session.id)
        assert [r.token_count for r in stored] == [real(r.message) for r in stored]
