"""Every real transcript, replayed with a small window so that it compresses three or more
times, with both summarisers: Anthropic (the real SDK against the loopback fake server) and
offline.  Calls go through a real HookRunner (fence: snapshot, timeout, validation).

After every compression: invariants hold (R-1.4, R-6.9), one summary block (R-6.6), the head
decayed to the system prompt (R-6.2), the tail is within 1.5 × its budget or minimal (R-6.3).
Transcripts are normalised first as a host would (repair_tool_pairs, normalize_alternation).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from compressor_helpers import load_normalised, transcript_paths, transcripts_dir
from hermes_host.messages import is_summary
from hermes_host.models import CompressionSettings, SummarizerSettings
from hermes_host.testing.fake_anthropic import FakeAnthropic
from replay_driver import replay, small_window

from hermes_compressor import Compressor

PATHS = transcript_paths()
pytestmark = pytest.mark.skipif(
    not PATHS, reason=f"no transcripts in {transcripts_dir()} (set HERMES_HOST_TRANSCRIPTS)"
)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeAnthropic]:
    with pytest.MonkeyPatch.context() as mp, FakeAnthropic() as server:
        mp.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-replay-" + "r" * 40)
        mp.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield server


LADDER = (0.7, 0.5, 1.0, 0.6, 0.85, 0.4, 0.35, 1.2, 1.5, 2.0)
"""Window factors tried in order; the first that compresses three times is used."""
MIN_MESSAGES_FOR_THREE = 28
"""Shorter transcripts cannot hold head + 3 tail + 1 middle three times over (R-6.7)."""


@pytest.mark.parametrize("provider", ["offline", "anthropic"])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_transcript_compresses_three_times_and_stays_valid(
    path: Path, provider: str, request: pytest.FixtureRequest
) -> None:
    """R-4, R-6, R-10.3 on real data: ≥ 3 compressions (≥ 2 for transcripts under 28
    messages, none for the 2-message one — R-6.7 no-ops), each adopted by the fence, each
    leaving a valid window; with Anthropic every summary came from the fake server."""
    messages = load_normalised(path)
    if provider == "anthropic":
        fake: FakeAnthropic = request.getfixturevalue("fake_server")
        summarizer = SummarizerSettings(
            provider="anthropic", base_url=fake.base_url, max_retries=0, timeout_seconds=10
        )
    else:
        summarizer = SummarizerSettings(provider="offline")
    needed = 3 if len(messages) >= MIN_MESSAGES_FOR_THREE else (2 if len(messages) >= 8 else 0)
    best = None
    for factor in LADDER:
        engine = Compressor()
        if provider == "anthropic":
            fake.clear()
        try:
            report = replay(
                engine,
                messages,
                context_length=small_window(engine, messages, factor),
                summarizer=summarizer,
                settings=CompressionSettings(),
            )
        finally:
            engine.close()
        assert report.problems == [], (factor, report.problems)
        if best is None or len(report.compressions) > len(best.compressions):
            best = report
        if len(report.compressions) >= max(needed, 1):
            break
    assert best is not None
    if len(best.compressions) < needed:
        # issue 28: each compression now frees more (fewer are needed), and a small session
        # on a tiny window may not be worth a summariser call — then every declined attempt
        # says so, and spends none
        assert best.compressions or best.declined, "neither compressed nor declined"
        assert all(
            r.outcome == "noop" and r.llm_calls == 0
            and any(n.startswith(("not worth a summariser call", "too few messages"))
                    for n in r.notes)
            for r in best.declined
        ), [r.notes for r in best.declined]
        if not best.compressions:
            return
        if provider == "anthropic" and best is not report:
            return  # the fake server's log is the last run's
    if needed == 0:
        return
    outcomes = {r.outcome for r in best.compressions}
    assert outcomes <= {"summarised", "dropped"}, outcomes
    if provider == "anthropic":
        summarised = sum(1 for r in best.compressions if r.outcome == "summarised")
        assert len(fake.requests) == summarised >= 1
        assert all(r.llm_calls == 1 for r in best.compressions if r.outcome == "summarised")
    else:
        assert all(r.llm_calls == 0 for r in best.compressions)
    assert sum(1 for m in best.window if is_summary(m)) == 1
