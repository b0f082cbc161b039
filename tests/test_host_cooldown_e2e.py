"""A transient summariser failure pauses the LLM summariser end to end (R-5.1, R-10.3, as
issue 28 refines them).

The real compressor, the real ``anthropic`` SDK and a real loopback server answering 429:
the compressor commits an offline fallback summary and asks for a cooldown; the host must
start it in the store.  During the cooldown automatic compression goes on — offline, with
no request to the server — so the window never outgrows the model.  An engine that does not
declare ``compresses_during_cooldown`` is still suppressed (``cooldown:<s>``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.testing.fake_anthropic import FakeAnthropic

pytest.importorskip("hermes_compressor")


def _config(base_url: str) -> HermesConfig:
    return HermesConfig.model_validate(
        {
            "model": {"context_length": 4000, "max_output_tokens": 0},
            "summarizer": {"provider": "anthropic", "base_url": base_url, "max_retries": 0},
            "compression": {"cooldown_seconds": 900, "protect_first_n": 1},
            "memory": {"providers": []},
        }
    )


def test_transient_429_commits_fallback_and_starts_cooldown_R_5_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-fake-key")
        fake.script(["429"] * 10)
        host = ContextHost.from_config(_config(fake.base_url), store=tmp_path / "state.db")
        session = host.open_session(title="cooldown", system_prompt="You are terse.")
        outcome = None
        for turn in range(40):
            session.add_user(f"Question {turn}: describe module_{turn}.py in detail. " * 8)
            session.add_assistant(f"Answer {turn}: module_{turn}.py does things. " * 12)
            outcome = session.end_turn()
            if outcome.compression is not None:
                break
        assert outcome is not None and outcome.compression is not None, "never compressed"
        assert fake.requests, "the summariser was never called"
        guards = host.store.read_guards(session.id)
        assert guards.cooldown_until is not None, "no cooldown after a 429 (R-5.1)"
        calls = len(fake.requests)
        # Over the threshold again: compressed offline, no summariser request, bounded.
        offline = []
        budget = session.status()["request_budget"]
        for turn in range(40, 120):
            session.add_user(f"Question {turn}: describe module_{turn}.py in detail. " * 8)
            session.add_assistant(f"Answer {turn}: module_{turn}.py does things. " * 12)
            result = session.end_turn()
            assert session.window_tokens <= budget
            if result.compression is not None:
                assert result.compression.outcome == "fallback", result.compression
                assert result.compression.llm_calls == 0
                offline.append(result)
                if len(offline) == 3:
                    break
        assert len(offline) == 3, "automatic compression stopped during the cooldown"
        assert len(fake.requests) == calls, "the summariser was called during the cooldown"
        assert session.status()["summarizer_cooldown"] is not None
        host.close()


def test_an_engine_without_offline_summaries_is_still_suppressed(tmp_path: Path) -> None:
    """R-5.1 for engines that do not declare ``compresses_during_cooldown``: the host keeps
    automatic compression off until the deadline (their next call could hit the failing
    summariser again)."""
    from host_helpers import OutcomeEngine, chat_turn, make_host

    engine = OutcomeEngine("failed_transient", cooldown=120.0, keep=1, threshold=100)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        assert session.end_turn().compression is not None
        chat_turn(session, 2)
        blocked = session.end_turn()
        assert blocked.compression is None
        assert blocked.decision.reason is not None
        assert blocked.decision.reason.startswith("cooldown:")
