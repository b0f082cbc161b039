"""A transient summariser failure pauses automatic compression end to end (R-5.1, R-10.3).

The real compressor, the real ``anthropic`` SDK and a real loopback server answering 429:
the compressor commits an offline fallback summary and asks for a cooldown; the host must
start it in the store, and the next turn must be blocked with ``cooldown:<s>``.
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
        # The next turn is over the threshold again soon, but stays blocked by the cooldown.
        blocked = None
        for turn in range(40, 80):
            session.add_user(f"Question {turn}: describe module_{turn}.py in detail. " * 8)
            session.add_assistant(f"Answer {turn}: module_{turn}.py does things. " * 12)
            result = session.end_turn()
            assert result.compression is None or result.decision.compress, result
            if result.decision.reason and result.decision.reason.startswith("cooldown:"):
                blocked = result
                break
        assert blocked is not None, "automatic compression was not suppressed"
        host.close()
