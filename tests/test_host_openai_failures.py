"""The host's reaction to the openai summariser's failure classes (R-5.1, R-10.3): the real
compressor, the real ``openai`` SDK and the loopback OpenAI fake.  Transient (429, a reply
cut off by the length limit) → offline fallback *and* a cooldown in the store; permanent
(401, 404 unknown model) → offline fallback with the failure named, and no cooldown."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.testing.fake_openai import FakeOpenAI

pytest.importorskip("hermes_compressor")


def _compress_once(tmp_path: Path, fake: FakeOpenAI, failure: str) -> tuple[ContextHost, str,
                                                                               list[str], str]:
    fake.script([failure] * 5)
    config = HermesConfig.model_validate({
        "model": {"context_length": 4000, "max_output_tokens": 0},
        "summarizer": {"provider": "openai", "base_url": fake.base_url, "model": "gpt-4o-mini",
                       "api_key_env": "FAKE_OPENAI_KEY", "timeout_seconds": 5},
        "compression": {"cooldown_seconds": 900, "protect_first_n": 1, "protect_last_n": 4},
        "memory": {"providers": []},
    })
    host = ContextHost.from_config(config, store=tmp_path / f"{failure}.db")
    session = host.open_session(title=failure, system_prompt="You are terse.")
    for turn in range(40):
        session.add_user(f"Question {turn}: describe module_{turn}.py in detail. " * 8)
        session.add_assistant(f"Answer {turn}: module_{turn}.py does things. " * 12)
        outcome = session.end_turn()
        if outcome.compression is not None:
            report = outcome.compression
            return host, session.id, list(report.notes), report.outcome
    raise AssertionError("never compressed")


@pytest.mark.parametrize(("failure", "transient", "named"), [
    ("429", True, "openai: HTTP 429"),
    ("length", True, "finish_reason=length"),
    ("401", False, "openai: HTTP 401"),
    ("404", False, "openai: HTTP 404"),
])
def test_failure_class_decides_the_cooldown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str, transient: bool, named: str
) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test-host-key")
    with FakeOpenAI() as fake:
        host, sid, notes, outcome = _compress_once(tmp_path, fake, failure)
        try:
            assert fake.requests, "the summariser was never called"
            assert outcome == "fallback"
            kind = "transient" if transient else "permanent"
            assert any(note.startswith(f"{kind} summariser failure: ") and named in note
                       for note in notes), notes
            assert "offline fallback summary used" in notes
            cooldown = host.store.read_guards(sid).cooldown_until
            assert (cooldown is not None) is transient
        finally:
            host.close()
