"""Summariser fault sequences against the loopback fakes (issue 13; R-5.1, R-5.2, R-10.3).

The real compressor, the real ``anthropic`` and ``openai`` SDKs, and the real loopback
servers of ``hermes_host.testing`` scripted with sequences of failures:

* ``429 → 500 → ok``: the 429 commits the offline fallback and starts a cooldown, which is
  reported (the compression's notes, ``status()``) and blocks every automatic attempt with
  ``cooldown:<s>`` — the summariser is *not* called again turn after turn; a manual
  ``/compress`` clears it and retries at once (the 500: fallback and a new cooldown); once the
  cooldown has run out, the next automatic compression reaches the summariser again, gets a
  real summary and clears the guards.
* two fallbacks in a row (cooldowns that run out at once): anti-thrash stops automatic
  compression (``fallback_streak``, or ``ineffective`` when they also saved < 10 %), without
  calling the summariser.
* a summariser slower than ``summarizer.timeout_seconds``: transient, so fallback and a
  cooldown, and the turn is not held longer than the timeout plus the fallback.

``tests/test_host_cooldown_e2e.py`` (one 429, Anthropic) and
``tests/test_host_openai_failures.py`` (one failure per class, OpenAI) cover single
failures; this module covers the sequences, on both providers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from reliability_figures import record

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session, TurnOutcome
from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.testing.fake_openai import FakeOpenAI

pytest.importorskip("hermes_compressor")
pytestmark = pytest.mark.slow

PROVIDERS = ("anthropic", "openai")


@contextmanager
def summariser(provider: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    fake: Any = FakeAnthropic() if provider == "anthropic" else FakeOpenAI()
    monkeypatch.setenv("FAKE_SUMMARISER_KEY", "sk-test-reliability-key")
    with fake:
        yield fake


def _host(tmp_path: Path, provider: str, fake: Any, *, cooldown: float,
          timeout: float = 5.0) -> ContextHost:
    summarizer: dict[str, Any] = {"provider": provider, "base_url": fake.base_url,
                                  "api_key_env": "FAKE_SUMMARISER_KEY", "max_retries": 0,
                                  "timeout_seconds": timeout}
    if provider == "openai":
        summarizer["model"] = "gpt-4o-mini"
    config = HermesConfig.model_validate({
        "model": {"context_length": 4000, "max_output_tokens": 0},
        "summarizer": summarizer,
        "compression": {"cooldown_seconds": cooldown, "protect_first_n": 1,
                        "protect_last_n": 4},
        "memory": {"providers": []},
    })
    return ContextHost.from_config(config, store=tmp_path / f"{provider}.db")


class Turns:
    """Drives turns over the threshold; counts how often the summariser is asked."""

    def __init__(self, session: Session, fake: Any) -> None:
        self.session = session
        self.fake = fake
        self.n = 0

    def one(self) -> TurnOutcome:
        n = self.n = self.n + 1
        self.session.add_user(f"Question {n}: describe module_{n}.py in detail. " * 8)
        self.session.add_assistant(f"Answer {n}: module_{n}.py does things. " * 12)
        return self.session.end_turn()

    def until_compression(self, limit: int = 40) -> TurnOutcome:
        for _ in range(limit):
            outcome = self.one()
            if outcome.compression is not None:
                return outcome
        raise AssertionError("never compressed")


def _transient(outcome: TurnOutcome) -> None:
    report = outcome.compression
    assert report is not None and report.status == "committed", report
    assert report.outcome == "fallback", report
    assert any(note.startswith("transient summariser failure") for note in report.notes), (
        report.notes)


def _offline_during_cooldown(turns: Turns, wanted: int = 2) -> int:
    """Issue 28: a cooldown holds back only the LLM summariser — automatic compression goes
    on with the offline summariser (outcome ``fallback``, zero LLM calls, saying so), so the
    window stays bounded.  Returns how many such compressions ran."""
    done = 0
    for _ in range(60):
        report = turns.one().compression
        if report is None:
            continue
        assert report.status == "committed" and report.outcome == "fallback", report
        assert report.llm_calls == 0 and report.summary.requests == 0, report
        assert any("cooling down" in note for note in report.notes), report.notes
        done += 1
        if done == wanted:
            break
    assert done == wanted, "compression stopped during the cooldown"
    return done


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_then_500_then_ok_cools_down_and_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    with summariser(provider, monkeypatch) as fake:
        fake.script(["429", "500"])
        host = _host(tmp_path, provider, fake, cooldown=3)
        try:
            session = host.open_session("faults", "You are terse.")
            turns = Turns(session, fake)
            first = turns.until_compression()
            _transient(first)
            assert len(fake.requests) == 1
            cooldown = host.store.read_guards(session.id).cooldown_until
            assert cooldown is not None and cooldown > time.time()
            assert session.status()["guards"]["cooldown_until"] == cooldown  # reported

            offline = _offline_during_cooldown(turns)  # issue 28: compression goes on
            assert len(fake.requests) == 1, "the summariser was retried during the cooldown"

            forced = session.compress(force=True)  # /compress clears it and retries now
            assert len(fake.requests) == 2
            assert forced.status == "committed" and forced.outcome == "fallback", forced
            assert host.store.read_guards(session.id).cooldown_until is not None

            time.sleep(max(0.0, host.store.read_guards(session.id).cooldown_until
                           - time.time()) + 0.2)
            recovered = turns.until_compression()
            report = recovered.compression
            assert report is not None and report.outcome == "summarised", report
            assert len(fake.requests) == 3
            guards = host.store.read_guards(session.id)
            assert guards.fallback_streak == 0
            assert guards.cooldown_until is None or guards.cooldown_until <= time.time()
        finally:
            host.close()
    record("summariser", provider=provider, sequence="429 → 500 → ok",
           summariser_calls=3, turns=turns.n, blocked_turns=0, offline_in_cooldown=offline,
           retried_in_cooldown=0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_fallbacks_in_a_row_stop_automatic_compression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    with summariser(provider, monkeypatch) as fake:
        # the provider's retry-after is honoured (issue 17): ask for less than the cooldown
        fake.script([{"kind": "429", "retry_after": 0.1}] * 20)
        host = _host(tmp_path, provider, fake, cooldown=0.2)
        try:
            session = host.open_session("thrash", "You are terse.")
            turns = Turns(session, fake)
            _transient(turns.until_compression())
            time.sleep(0.3)  # the cooldown runs out; the next due point calls again
            _transient(turns.until_compression())
            assert len(fake.requests) == 2
            assert host.store.read_guards(session.id).fallback_streak == 2
            time.sleep(0.3)
            for _ in range(40):  # until the window is over the threshold again
                outcome = turns.one()
                assert outcome.compression is None, outcome.compression
                if outcome.decision.reason != "below_threshold":
                    break
            # anti-thrash (the two fallbacks may also have saved < 10 % each)
            assert outcome.decision.reason in ("fallback_streak", "ineffective"), outcome
            calls = len(fake.requests)
            assert calls == 2, "anti-thrash let the summariser be called again"
        finally:
            host.close()
    record("summariser", provider=provider, sequence="429, 429 (fallback streak)",
           summariser_calls=calls, turns=turns.n, blocked_turns=1, retried_in_cooldown=0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_summariser_timeout_is_transient_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    with summariser(provider, monkeypatch) as fake:
        fake.script([{"kind": "slow", "seconds": 30}] * 3)
        host = _host(tmp_path, provider, fake, cooldown=900, timeout=1.0)
        try:
            session = host.open_session("slow", "You are terse.")
            turns = Turns(session, fake)
            started = time.monotonic()
            outcome = turns.until_compression()
            took = outcome.compression.duration if outcome.compression else None
            _transient(outcome)
            assert took is not None and took < 1.0 + 10, took  # timeout, then the fallback
            assert time.monotonic() - started < 60
            assert host.store.read_guards(session.id).cooldown_until is not None
            offline = _offline_during_cooldown(turns)
            assert len(fake.requests) == 1
        finally:
            host.close()
    record("summariser", provider=provider, sequence="timeout (slow server, 1 s client "
           "timeout)", summariser_calls=1, turns=turns.n, blocked_turns=0,
           offline_in_cooldown=offline, retried_in_cooldown=0, compression_seconds=round(took, 2))
