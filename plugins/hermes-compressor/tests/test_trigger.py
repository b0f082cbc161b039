"""The trigger (R-4.1–R-4.5) and the guards as should_compress sees them (R-5.1, R-5.2)."""

from __future__ import annotations

import pytest
from compressor_helpers import guards, should_request
from hermes_host.models import CompressionSettings

from hermes_compressor import Compressor
from hermes_compressor.trigger import tail_budget, threshold_tokens

LARGE = 1_000_000  # >= 512K: no small-window floor


def test_r4_2_threshold_is_min_of_ratio_and_cap() -> None:
    """R-4.2: threshold = min(context_length × threshold_percent, threshold_tokens cap)."""
    assert threshold_tokens(CompressionSettings(), LARGE) == 500_000
    capped = CompressionSettings(threshold_tokens=120_000)
    assert threshold_tokens(capped, LARGE) == 120_000
    assert threshold_tokens(CompressionSettings(threshold_percent=0.3), LARGE) == 300_000


def test_r4_1_comparison_is_greater_or_equal() -> None:
    """R-4.1: tokens == threshold compresses, threshold − 1 does not."""
    engine = Compressor()
    at = engine.should_compress(request=should_request(500_000, context_length=LARGE))
    below = engine.should_compress(request=should_request(499_999, context_length=LARGE))
    assert at.compress is True and at.threshold_tokens == 500_000
    assert below.compress is False and below.reason == "below_threshold"


def test_r4_1_prompt_tokens_win_over_host_count() -> None:
    """R-4.1: tokens = prompt_tokens or current_tokens."""
    engine = Compressor()
    reported = should_request(10, prompt_tokens=600_000, context_length=LARGE)
    assert engine.should_compress(request=reported).compress is True
    counted = should_request(600_000, prompt_tokens=None, context_length=LARGE)
    assert engine.should_compress(request=counted).compress is True
    low_report = should_request(600_000, prompt_tokens=1_000, context_length=LARGE)
    assert engine.should_compress(request=low_report).compress is False


def test_r4_3_small_window_floor_in_both_directions_on_model_change() -> None:
    """R-4.3: a window under 512K uses at least 0.75 of itself; switching to a 1M model drops
    the floor again, switching back restores it."""
    settings = CompressionSettings()
    small = threshold_tokens(settings, 200_000, "claude-sonnet")
    large = threshold_tokens(settings, LARGE, "claude-sonnet-1m")
    back = threshold_tokens(settings, 200_000, "claude-sonnet")
    assert small == 150_000
    assert large == 500_000
    assert back == small
    # a ratio above the floor is kept as is
    assert threshold_tokens(CompressionSettings(threshold_percent=0.9), 200_000) == 180_000


def test_r4_3_tiny_window_falls_back_to_085_of_effective_window() -> None:
    """Output reservation: a floor beyond the effective window falls back to 0.85 × effective,
    so a tiny window can still trigger."""
    settings = CompressionSettings()
    assert threshold_tokens(settings, 8_000, max_output_tokens=4_000) == int(4_000 * 0.85)
    # a threshold inside the effective window is unchanged by the reservation
    assert threshold_tokens(settings, 200_000, max_output_tokens=8_192) == 150_000
    # the reservation never exceeds half the window
    assert threshold_tokens(settings, 8_000, max_output_tokens=50_000) == int(4_000 * 0.85)
    engine = Compressor()
    request = should_request(3_400, context_length=8_000, max_output_tokens=4_000)
    assert engine.should_compress(request=request).compress is True


def test_r4_4_model_thresholds_longest_substring_wins() -> None:
    """R-4.4: model_thresholds override the ratio by substring; the longest key wins."""
    settings = CompressionSettings(model_thresholds={"claude": 0.6, "claude-opus": 0.9})
    assert threshold_tokens(settings, LARGE, "anthropic/claude-opus-4") == 900_000
    assert threshold_tokens(settings, LARGE, "claude-haiku") == 600_000
    assert threshold_tokens(settings, LARGE, "gpt-4o") == 500_000


def test_r4_5_tail_budget_ratio_is_clamped() -> None:
    """R-4.5: tail budget = threshold × summary_target_ratio clamped to 0.10–0.80."""
    assert tail_budget(CompressionSettings(), 100_000) == 20_000
    assert tail_budget(CompressionSettings(summary_target_ratio=0.01), 100_000) == 10_000
    assert tail_budget(CompressionSettings(summary_target_ratio=0.95), 100_000) == 80_000


def test_r5_1_a_cooldown_does_not_stop_the_trigger() -> None:
    """R-5.1 as issue 28 refines it: a cooldown holds back only the LLM summariser —
    the compressor declares ``compresses_during_cooldown`` and still says yes above the
    threshold (compress() then summarises offline); below it, no."""
    engine = Compressor()
    assert Compressor.compresses_during_cooldown is True
    now = 1_000_000.0
    cooling = guards(now=now, cooldown_until=now + 42.2)
    above = engine.should_compress(
        request=should_request(600_000, context_length=LARGE, guards=cooling)
    )
    assert above.compress is True and above.reason is None
    below = engine.should_compress(
        request=should_request(1_000, context_length=LARGE, guards=cooling)
    )
    assert below.compress is False and below.reason == "below_threshold"
    forced = engine.should_compress(
        request=should_request(1_000, context_length=LARGE, guards=cooling, force=True)
    )
    assert forced.compress is True
    expired = guards(now=now + 43, cooldown_until=now + 42.2)
    later = engine.should_compress(
        request=should_request(600_000, context_length=LARGE, guards=expired)
    )
    assert later.compress is True

@pytest.mark.parametrize(
    ("ineffective", "fallbacks", "blocked"),
    [(0, 0, False), (1, 1, False), (2, 0, True), (0, 2, True), (3, 5, True)],
)
def test_r5_2_anti_thrash(ineffective: int, fallbacks: int, blocked: bool) -> None:
    """R-5.2: two ineffective compressions or two fallbacks in a row stop automatic
    compression (reason ``ineffective``); force overrides."""
    engine = Compressor()
    state = guards(ineffective_count=ineffective, fallback_streak=fallbacks)
    auto = engine.should_compress(
        request=should_request(600_000, context_length=LARGE, guards=state)
    )
    assert auto.compress is (not blocked)
    assert auto.reason == ("ineffective" if blocked else None)
    forced = engine.should_compress(
        request=should_request(600_000, context_length=LARGE, guards=state, force=True)
    )
    assert forced.compress is True


def test_below_threshold_reported_before_guards() -> None:
    """Below the threshold the reason is below_threshold even during a cooldown."""
    engine = Compressor()
    state = guards(now=10.0, cooldown_until=100.0)
    answer = engine.should_compress(request=should_request(10, context_length=LARGE, guards=state))
    assert answer.reason == "below_threshold"
