"""Micro-compaction (R-11.2): a rolling summary merged one exchange at a time."""

from __future__ import annotations

import pytest
from compressor_helpers import RecordingSummarizer, compress_request, conversation
from hermes_host.llm.base import SummaryJob, TransientSummaryError
from hermes_host.messages import check_invariants, is_summary
from hermes_host.models import CompressionSettings, SummarizerSettings

from hermes_compressor import Compressor
from hermes_compressor.micro import split_exchanges

MICRO = CompressionSettings(micro_compact=True)


def test_r11_2_off_by_default_one_batch_call(
    recorder: RecordingSummarizer, engine: Compressor
) -> None:
    """compression.micro_compact defaults to false: one batch summary call."""
    result = engine.compress(request=compress_request(conversation(20), engine=engine))
    assert result.llm_calls == 1 and len(recorder.jobs) == 1
    assert "ROLLING SUMMARY" not in recorder.jobs[0].prompt


def test_r11_2_one_call_per_exchange_rolling_summary() -> None:
    """One aux call per exchange, each seeded with the previous rolling summary, with
    max_tokens = min(1500, max_summary_tokens)."""
    seen: list[SummaryJob] = []

    def rolling(job: SummaryJob) -> str:
        seen.append(job)
        return f"## Completed Actions\n{len(seen)}. merged exchange {len(seen)} [tool: micro]"

    engine = Compressor(
        summarizer=RecordingSummarizer(text=rolling),
        options={"micro_max_exchanges": 5, "max_summary_tokens": 1000},
    )
    result = engine.compress(
        request=compress_request(
            conversation(20),
            engine=engine,
            compression=MICRO,
            context_length=100_000,
            keep_last_turns=3,
        )
    )
    assert result.outcome == "summarised"
    assert result.llm_calls == len(seen) == 5
    assert all(job.max_tokens == 1000 and job.budget_tokens == 1000 for job in seen)
    assert seen[0].previous_summary is None
    for n, job in enumerate(seen[1:], start=1):
        expected = f"## Completed Actions\n{n}. merged exchange {n} [tool: micro]"
        assert job.previous_summary == expected
        assert "ROLLING SUMMARY" in job.prompt and "NEW EXCHANGE" in job.prompt
    block = next(m for m in result.messages if is_summary(m))
    assert "merged exchange 5" in block["content"]
    assert check_invariants(result.messages) == []


def test_r11_2_three_consecutive_failures_trip_the_breaker() -> None:
    """A failed micro call ends the pass (the batch summary is used); after 3 consecutive
    failures micro-compaction is skipped for that session."""
    jobs: list[SummaryJob] = []

    def flaky(job: SummaryJob) -> str:
        jobs.append(job)
        if "ROLLING SUMMARY" in job.prompt:
            raise TransientSummaryError("anthropic: HTTP 529 overloaded_error")
        return "## Completed Actions\n1. batch"

    engine = Compressor(summarizer=RecordingSummarizer(text=flaky))
    for attempt in range(4):
        before = len(jobs)
        result = engine.compress(
            request=compress_request(
                conversation(20), engine=engine, compression=MICRO, session_id="sess-a"
            )
        )
        assert result.outcome == "summarised"
        micro_calls = sum(1 for j in jobs[before:] if "ROLLING SUMMARY" in j.prompt)
        assert micro_calls == (1 if attempt < 3 else 0)
        assert any("micro-compaction failed" in n for n in result.notes) == (attempt < 3)
    other = engine.compress(
        request=compress_request(
            conversation(20), engine=engine, compression=MICRO, session_id="sess-b"
        )
    )
    assert any("micro-compaction failed" in n for n in other.notes)  # per session


def test_r11_2_success_resets_the_failure_count() -> None:
    failures = iter([True, True, False, True, True, False])

    def sometimes(job: SummaryJob) -> str:
        if "ROLLING SUMMARY" in job.prompt and next(failures):
            raise TransientSummaryError("HTTP 500")
        return "## Completed Actions\n1. ok"

    engine = Compressor(
        summarizer=RecordingSummarizer(text=sometimes), options={"micro_max_exchanges": 1}
    )
    for _ in range(6):
        engine.compress(
            request=compress_request(conversation(20), engine=engine, compression=MICRO)
        )
    assert engine.breaker.open("s1") is False


def test_r11_2_micro_summariser_uses_low_temperature_and_capped_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The micro summariser is built from the user's settings with temperature 0.1 and
    max_tokens = min(1500, max_summary_tokens)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-micro-" + "m" * 40)
    engine = Compressor()
    settings = SummarizerSettings(provider="anthropic", base_url="http://127.0.0.1:9")
    micro = engine._summarizers(settings).micro(4000)
    assert micro.settings.temperature == 0.1  # type: ignore[attr-defined]
    assert micro.settings.max_tokens == 1500  # type: ignore[attr-defined]
    small = engine._summarizers(settings).micro(700)
    assert small.settings.max_tokens == 700  # type: ignore[attr-defined]
    engine.close()


def test_split_exchanges_by_user_turn_and_coalesce_oldest() -> None:
    msgs = conversation(6)[1:]
    groups = split_exchanges(msgs, 10)
    assert len(groups) == 6 and all(g[0]["role"] == "user" for g in groups)
    capped = split_exchanges(msgs, 3)
    assert len(capped) == 3 and len(capped[0]) == 16 and sum(map(len, capped)) == len(msgs)
