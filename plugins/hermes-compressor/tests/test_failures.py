"""Summary failures (R-10.3) through the real ``anthropic`` SDK against the loopback fake
Messages API server, and the engine-side guard semantics (R-5.1, R-6.5).

Decision under test (README "Failure semantics"): a transient failure commits the offline
fallback summary with outcome ``fallback`` and ``cooldown_seconds``; a permanent failure the
same without a cooldown; ``abort_on_summary_failure`` returns the input minus blank echoes.
In every case no message is lost: head and tail stay verbatim and the middle is represented
by exactly one summary block — or the window is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from compressor_helpers import (
    BrokenSummarizer,
    RecordingSummarizer,
    compress_request,
    conversation,
    guards,
)
from hermes_host.llm.base import PermanentSummaryError, TransientSummaryError
from hermes_host.messages import check_invariants, is_summary
from hermes_host.models import CompressionSettings, Message, SummarizerSettings
from hermes_host.testing.fake_anthropic import FakeAnthropic

from hermes_compressor import Compressor

API_KEY = "sk-ant-api03-test-" + "k" * 40


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield server


@pytest.fixture
def live() -> Iterator[Compressor]:
    """An engine that builds its summariser from the request settings (closed afterwards)."""
    engine = Compressor()
    yield engine
    engine.close()


def _settings(fake: FakeAnthropic, timeout: float = 5.0) -> SummarizerSettings:
    return SummarizerSettings(
        provider="anthropic", base_url=fake.base_url, timeout_seconds=timeout, max_retries=0
    )


def _assert_nothing_lost(before: list[Message], after: list[Message]) -> None:
    """Head and tail verbatim, the middle replaced by exactly one summary block."""
    assert check_invariants(after) == []
    summaries = [i for i, m in enumerate(after) if is_summary(m)]
    assert len(summaries) == 1
    at = summaries[0]
    assert after[:at] == before[:at]
    tail = after[at + 1 :]
    assert tail == before[len(before) - len(tail) :]
    assert len(tail) >= 3


CASES: list[tuple[Any, str, bool]] = [
    ({"kind": "slow", "seconds": 3}, "fallback", True),
    ("429", "fallback", True),
    ("500", "fallback", True),
    ("529", "fallback", True),
    ("malformed", "fallback", True),
    ("empty", "fallback", True),
    ("401", "fallback", False),
    ("402", "fallback", False),
    ("403", "fallback", False),
    ("credit", "fallback", False),
    ("disconnect", "fallback", True),
]


def test_r10_3_normal_answer_is_summarised(fake: FakeAnthropic, live: Compressor) -> None:
    """The happy path: one SDK call, the summary from the server, outcome summarised."""
    engine = live
    msgs = conversation(20)
    result = engine.compress(
        request=compress_request(msgs, engine=engine, summarizer=_settings(fake))
    )
    assert result.outcome == "summarised" and result.llm_calls == 1
    assert result.cooldown_seconds is None
    _assert_nothing_lost(msgs, result.messages)
    assert len(fake.requests) == 1
    body = fake.requests[0].body
    assert body["messages"][0]["content"].startswith("You are a summarization agent")
    assert "[tool: fake_anthropic]" in next(m for m in result.messages if is_summary(m))["content"]


@pytest.mark.parametrize(
    ("behaviour", "outcome", "transient"),
    CASES,
    ids=[str(c[0]) if isinstance(c[0], str) else "slow" for c in CASES],
)
def test_r10_3_failures_fall_back_offline_and_lose_nothing(
    fake: FakeAnthropic, live: Compressor, behaviour: Any, outcome: str, transient: bool
) -> None:
    """R-10.3: transient (timeout/429/5xx/529/malformed/empty) → offline fallback summary,
    outcome ``fallback`` with cooldown_seconds; permanent (401/402/403) → offline fallback,
    no cooldown.  The middle is summarised deterministically, no message is lost."""
    fake.script([behaviour])
    engine = live
    settings = CompressionSettings(cooldown_seconds=321.0)
    msgs = conversation(20)
    result = engine.compress(
        request=compress_request(
            msgs, engine=engine, compression=settings, summarizer=_settings(fake, timeout=1.0)
        )
    )
    assert result.outcome == outcome
    assert result.llm_calls == 1
    assert result.cooldown_seconds == (321.0 if transient else None)
    kind = "transient" if transient else "permanent"
    assert any(note.startswith(f"{kind} summariser failure") for note in result.notes)
    assert "offline fallback summary used" in result.notes
    _assert_nothing_lost(msgs, result.messages)
    block = next(m for m in result.messages if is_summary(m))
    assert "## Completed Actions" in block["content"]
    assert "please do step" in block["content"]  # the offline snapshot quotes the request
    assert all(API_KEY not in note for note in result.notes)


@pytest.mark.parametrize("behaviour", ["429", "401"])
def test_r10_3_abort_on_summary_failure_keeps_the_window(
    fake: FakeAnthropic, live: Compressor, behaviour: str
) -> None:
    """abort_on_summary_failure=True → outcome aborted, the input (minus blank echoes),
    nothing summarised; a transient failure still asks for the cooldown."""
    fake.script([behaviour])
    engine = live
    msgs = conversation(20)
    msgs.insert(7, {"role": "user", "content": ""})
    settings = CompressionSettings(abort_on_summary_failure=True)
    result = engine.compress(
        request=compress_request(
            msgs, engine=engine, compression=settings, summarizer=_settings(fake)
        )
    )
    assert result.outcome == "aborted"
    assert result.messages == msgs[:7] + msgs[8:]
    assert not any(is_summary(m) for m in result.messages)
    assert result.cooldown_seconds == (settings.cooldown_seconds if behaviour == "429" else None)


def test_r10_3_missing_api_key_is_permanent(monkeypatch: pytest.MonkeyPatch) -> None:
    """provider: anthropic without a key → permanent failure → offline fallback, no crash."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    engine = Compressor()
    msgs = conversation(20)
    result = engine.compress(
        request=compress_request(
            msgs, engine=engine, summarizer=SummarizerSettings(provider="anthropic")
        )
    )
    assert result.outcome == "fallback" and result.cooldown_seconds is None
    assert any("ANTHROPIC_API_KEY" in note for note in result.notes)
    _assert_nothing_lost(msgs, result.messages)


@pytest.mark.parametrize(
    ("exc", "outcome"),
    [
        (TransientSummaryError("HTTP 429"), "failed_transient"),
        (PermanentSummaryError("HTTP 401"), "failed_permanent"),
    ],
)
def test_r10_3_fallback_failing_too_keeps_the_window(exc: Exception, outcome: str) -> None:
    """Should even the fallback fail, nothing is summarised: failed_* and the input."""
    engine = Compressor(
        summarizer=BrokenSummarizer(exc), fallback=BrokenSummarizer(ValueError("boom"))
    )
    msgs = conversation(20)
    result = engine.compress(request=compress_request(msgs, engine=engine))
    assert result.outcome == outcome
    assert result.messages == msgs


def test_r10_3_summariser_bug_is_a_permanent_failure() -> None:
    """Any other exception from a summariser is treated as permanent, never a traceback."""
    fallback = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=BrokenSummarizer(KeyError("x")), fallback=fallback)
    result = engine.compress(request=compress_request(conversation(20), engine=engine))
    assert result.outcome == "fallback" and result.cooldown_seconds is None
    assert len(fallback.jobs) == 1


def test_r5_1_cooldown_active_summarises_offline_without_an_llm_call() -> None:
    """R-5.1 as issue 28 refines it: during an active cooldown (without force) the LLM
    summariser is not called, but the window is still compressed — by the offline
    summariser, outcome ``fallback``, no new cooldown asked for, zero LLM calls and zero
    summary requests billed.  ``force`` clears the cooldown and calls the LLM again."""
    llm = RecordingSummarizer()
    offline = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=llm, fallback=offline)
    msgs = conversation(20)
    cooling = guards(now=100.0, cooldown_until=500.0)
    result = engine.compress(request=compress_request(msgs, engine=engine, guards=cooling))
    assert result.outcome == "fallback" and result.cooldown_seconds is None
    assert len(result.messages) < len(msgs)
    assert llm.jobs == [] and len(offline.jobs) == 1
    assert result.llm_calls == 0 and result.summary_requests == 0
    assert any("cooling down" in note and "400 s left" in note for note in result.notes)
    forced = engine.compress(
        request=compress_request(msgs, engine=engine, guards=cooling, force=True)
    )
    assert forced.outcome == "summarised" and len(llm.jobs) == 1
    assert forced.summary_requests == 1 and forced.summary_input_tokens > 0


def test_r6_5_feasibility_skip_after_ineffective_record_and_force_skips_it() -> None:
    """R-6.5: a middle that is a tiny fraction of the threshold, with a prior ineffective
    record, is summarised offline without an LLM call (outcome dropped); force skips the
    skip; without an ineffective record the LLM is used."""
    llm = RecordingSummarizer()
    offline = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=llm, fallback=offline)
    msgs = conversation(6, output_chars=2000)  # a middle far below 5 % of the threshold
    big_window = 200_000  # threshold 150K: the middle is far below 5 %
    after_ineffective = guards(ineffective_count=1)
    kw: dict[str, Any] = {"context_length": big_window, "keep_last_turns": 2}
    skipped = engine.compress(
        request=compress_request(msgs, engine=engine, guards=after_ineffective, **kw)
    )
    assert skipped.outcome == "dropped" and skipped.llm_calls == 0
    assert llm.jobs == [] and len(offline.jobs) == 1
    assert sum(1 for m in skipped.messages if is_summary(m)) == 1
    forced = engine.compress(
        request=compress_request(msgs, engine=engine, guards=after_ineffective, force=True, **kw)
    )
    assert forced.outcome == "summarised" and len(llm.jobs) == 1
    fresh = engine.compress(request=compress_request(msgs, engine=engine, **kw))
    assert fresh.outcome == "summarised" and len(llm.jobs) == 2


def test_r5_2_noop_twice_then_anti_thrash_blocks() -> None:
    """R-6.7 + R-5.2: the no-op outcome is what the host counts; after two ineffective
    records should_compress answers ``ineffective``."""
    from compressor_helpers import should_request

    engine = Compressor(summarizer=RecordingSummarizer())
    tiny = [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}]
    state = guards()
    for _ in range(2):
        decision = engine.should_compress(
            request=should_request(200_000, context_length=200_000, guards=state)
        )
        assert decision.compress is True
        result = engine.compress(request=compress_request(tiny, engine=engine, guards=state))
        assert result.outcome == "noop"
        state = state.model_copy(update={"ineffective_count": state.ineffective_count + 1})
    blocked = engine.should_compress(
        request=should_request(200_000, context_length=200_000, guards=state)
    )
    assert blocked.compress is False and blocked.reason == "ineffective"


def test_r10_3_blank_answer_without_error_is_a_permanent_failure() -> None:
    """A summariser that returns blank text without raising never blanks the middle: the
    offline fallback is used (no cooldown: the same summariser would answer the same)."""
    fallback = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=RecordingSummarizer(text=lambda job: "  \n"), fallback=fallback)
    msgs = conversation(20)
    result = engine.compress(request=compress_request(msgs, engine=engine))
    assert result.outcome == "fallback" and result.cooldown_seconds is None
    assert result.llm_calls == 1 and len(fallback.jobs) == 1
    _assert_nothing_lost(msgs, result.messages)
