"""A provider's ``retry-after`` sets the cooldown (R-5.1, R-10.3; issue 17's "429 with
retry-after" and issue 13's "a failure the user cannot see is a bug").

A 429 or 503 that says how long to wait (``retry-after`` in seconds or as an HTTP date,
``retry-after-ms``) lengthens the compressor's cooldown to that wait, capped at
``MAX_RETRY_AFTER_SECONDS``, and plain output says "provider asked to retry after N s".
The real ``anthropic`` and ``openai`` SDKs talk to real loopback servers."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.llm.anthropic_summarizer import AnthropicSummarizer
from hermes_host.llm.base import (
    MAX_RETRY_AFTER_SECONDS,
    SummaryJob,
    TransientSummaryError,
    retry_after_seconds,
)
from hermes_host.llm.openai_summarizer import OpenAISummarizer
from hermes_host.models import SummarizerSettings
from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.testing.fake_openai import FakeOpenAI


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "120"}, 120.0),
    ({"retry-after": "2.5"}, 2.5),
    ({"retry-after-ms": "45000", "retry-after": "1"}, 45.0),  # the ms header is finer
    ({"retry-after": "86400000"}, MAX_RETRY_AFTER_SECONDS),   # capped
    ({"retry-after": "-5"}, 0.0),
    ({"retry-after": "soon"}, None),
    ({"retry-after-ms": "x"}, None),
    ({}, None),
])
def test_retry_after_header_forms_R_5_1(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_http_date_R_5_1() -> None:
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 300, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now) == 300.0


def _job() -> SummaryJob:
    return SummaryJob(prompt="summarise: the user asked about module_1.py", messages=[])


@pytest.mark.parametrize("step", [
    {"kind": "429", "retry_after": 120},
    {"kind": "error", "status": 503, "type": "overloaded_error",
     "headers": {"retry-after-ms": "120000"}},
])
def test_anthropic_sdk_error_carries_retry_after_R_10_3(step: dict[str, Any]) -> None:
    with FakeAnthropic() as fake:
        fake.script([step])
        summarizer = AnthropicSummarizer(
            SummarizerSettings(provider="anthropic", base_url=fake.base_url, max_retries=0),
            api_key="sk-ant-test-fake-key")
        with pytest.raises(TransientSummaryError) as caught:
            summarizer.summarize(_job())
        summarizer.close()
    assert caught.value.retry_after == 120.0
    assert "120" not in str(caught.value)  # the message stays "anthropic: HTTP …"


@pytest.mark.parametrize("step", [
    {"kind": "429", "retry_after": 120},
    {"kind": "error", "status": 503, "headers": {"Retry-After-Ms": "120000"}},  # any case
])
def test_openai_sdk_error_carries_retry_after_R_10_3(step: dict[str, Any]) -> None:
    with FakeOpenAI() as fake:
        fake.script([step])
        summarizer = OpenAISummarizer(
            SummarizerSettings(provider="openai", base_url=fake.base_url, max_retries=0),
            api_key="sk-test-fake-key")
        with pytest.raises(TransientSummaryError) as caught:
            summarizer.summarize(_job())
        summarizer.close()
    assert caught.value.retry_after == 120.0


def _config(provider: str, base_url: str) -> HermesConfig:
    return HermesConfig.model_validate({
        "model": {"context_length": 4000, "max_output_tokens": 0},
        "summarizer": {"provider": provider, "base_url": base_url, "max_retries": 0},
        "compression": {"cooldown_seconds": 5, "protect_first_n": 1},
        "memory": {"providers": []},
    })


def _compress_once(host: ContextHost) -> tuple[str, list[str], float]:
    """Turns until the first compression; its session id, plain events, cooldown left."""
    session = host.open_session(title="retry-after", system_prompt="You are terse.")
    events: list[str] = []
    for turn in range(40):
        session.add_user(f"Question {turn}: describe module_{turn}.py in detail. " * 8)
        session.add_assistant(f"Answer {turn}: module_{turn}.py does things. " * 12)
        outcome = session.end_turn()
        events.extend(outcome.events)
        if outcome.compression is not None:
            break
    else:
        raise AssertionError("never compressed")
    until = host.store.read_guards(session.id).cooldown_until
    assert until is not None, "no cooldown after a transient failure (R-5.1)"
    return session.id, events, until - time.time()


@pytest.mark.parametrize(
    ("provider", "fake_cls", "step", "asked"), [
        ("anthropic", FakeAnthropic, {"kind": "429", "retry_after": 600}, 600),
        ("openai", FakeOpenAI, {"kind": "error", "status": 503,
                                "headers": {"retry-after-ms": "600000"}}, 600),
        ("openai", FakeOpenAI, {"kind": "429", "retry_after": 10**8}, MAX_RETRY_AFTER_SECONDS),
    ])
def test_cooldown_honours_retry_after_end_to_end_R_5_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str, fake_cls: Any,
    step: dict[str, Any], asked: float,
) -> None:
    """Configured cooldown 5 s; the provider asks for 600 s (or absurdly long: capped at an
    hour).  The guards pause automatic compression for what it asked, and the turn's plain
    events say so."""
    pytest.importorskip("hermes_compressor")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-fake-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    with fake_cls() as fake:
        fake.script([step] * 10)
        with ContextHost.from_config(_config(provider, fake.base_url),
                                     store=tmp_path / "state.db") as host:
            _, events, left = _compress_once(host)
    assert asked - 60 < left <= asked, (left, events)
    said = [e for e in events if f"provider asked to retry after {asked:g} s" in e]
    assert said, events


def test_a_short_retry_after_does_not_shorten_the_configured_cooldown_R_5_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("hermes_compressor")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    with FakeOpenAI() as fake:
        config = _config("openai", fake.base_url)
        config.compression.cooldown_seconds = 900
        fake.script([{"kind": "429", "retry_after": 2}] * 10)
        with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
            _, events, left = _compress_once(host)
    assert 800 < left <= 900, left
    assert any("provider asked to retry after 2 s" in e for e in events), events
