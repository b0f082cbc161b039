"""The window's token count is kept incrementally and stays exact (R-4.1 input)."""

from __future__ import annotations

from pathlib import Path

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
