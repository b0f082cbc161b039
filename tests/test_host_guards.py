"""The host's guard rules and fallback trigger (R-4.1, R-4.2, R-4.4, R-5.1, R-5.2)."""

from __future__ import annotations

import math

from hermes_host.guards import (
    REARM_GROWTH,
    after_compression,
    blocked_reason,
    host_decision,
    rearmed,
    threshold_tokens,
)
from hermes_host.models import CompressionSettings, GuardState


def _g(**kw: object) -> GuardState:
    return GuardState(now=1000.0, **kw)  # type: ignore[arg-type]


def test_threshold_ratio_cap_and_longest_model_match_R_4_2_R_4_4() -> None:
    s = CompressionSettings()
    assert threshold_tokens(s, 200_000) == 100_000
    s = CompressionSettings(threshold_tokens=40_000)
    assert threshold_tokens(s, 200_000) == 40_000
    s = CompressionSettings(model_thresholds={"claude": 0.6, "claude-3-5-haiku": 0.3})
    assert threshold_tokens(s, 100_000, "claude-3-5-haiku-latest") == 30_000
    assert threshold_tokens(s, 100_000, "claude-sonnet") == 60_000
    assert threshold_tokens(s, 100_000, "gpt-4o") == 50_000


def test_host_decision_below_and_above_threshold_R_4_1() -> None:
    s = CompressionSettings()
    below = host_decision(tokens=499, context_length=1000, settings=s, guards=_g())
    assert (below.compress, below.reason) == (False, "below_threshold")
    above = host_decision(tokens=500, context_length=1000, settings=s, guards=_g())
    assert above.compress and above.threshold_tokens == 500


def test_cooldown_blocks_until_deadline_even_at_overflow_R_5_1() -> None:
    g = _g(cooldown_until=1042.0)
    assert blocked_reason(g) == "cooldown:42"
    assert blocked_reason(g, tokens=5000, context_length=1000) == "cooldown:42"
    assert blocked_reason(_g(cooldown_until=999.0)) is None


def test_anti_thrash_counts_and_overflow_exception_R_5_2() -> None:
    g = _g()
    g = after_compression(g, outcome="summarised", tokens_before=1000, tokens_after=950,
                          cooldown_seconds=60)
    assert g.ineffective_count == 1  # saved 5 % < 10 %
    g = after_compression(g, outcome="noop", tokens_before=1000, tokens_after=1000,
                          cooldown_seconds=60)
    assert g.ineffective_count == 2 and blocked_reason(g) == "ineffective"
    assert blocked_reason(g, tokens=1000, context_length=1000) is None  # overflow: one more try
    g = after_compression(g, outcome="summarised", tokens_before=1000, tokens_after=400,
                          cooldown_seconds=60)
    assert g.ineffective_count == 0 and blocked_reason(g) is None
    f = _g()
    for _ in range(2):
        f = after_compression(f, outcome="fallback", tokens_before=1000, tokens_after=300,
                              cooldown_seconds=60)
    assert f.fallback_streak == 2 and blocked_reason(f) == "fallback_streak"
    t = after_compression(_g(), outcome="failed_transient", tokens_before=1, tokens_after=1,
                          cooldown_seconds=60)
    assert t.cooldown_until == 1060.0
    p = after_compression(_g(), outcome="failed_permanent", tokens_before=1, tokens_after=1,
                          cooldown_seconds=60)
    assert p.ineffective_count == 1 and p.cooldown_until is None


def test_anti_thrash_re_arms_when_the_window_has_grown_R_5_2() -> None:
    """Issue 14: two no-ops early in a short session blocked automatic compression for the
    rest of it (it yielded only at 100 %).  The window's size at the last ineffective attempt
    is kept; at REARM_GROWTH times that size one more attempt is allowed."""
    g = _g()
    for tokens in (7_000, 7_055):
        g = after_compression(g, outcome="noop", tokens_before=tokens, tokens_after=tokens,
                              cooldown_seconds=60)
    assert (g.ineffective_count, g.ineffective_tokens) == (2, 7_055)
    grown = math.ceil(7_055 * REARM_GROWTH)
    assert blocked_reason(g, tokens=grown - 1, context_length=16_000) == "ineffective"
    assert blocked_reason(g, tokens=grown, context_length=16_000) is None
    assert rearmed(g, grown, 16_000).ineffective_count == 0
    assert rearmed(g, grown - 1, 16_000) is g
    # a cooldown never yields to growth; an effective compression forgets the size
    cooling = g.model_copy(update={"cooldown_until": 2_000.0})
    assert blocked_reason(cooling, tokens=grown * 2, context_length=16_000).startswith("cool")
    done = after_compression(g, outcome="summarised", tokens_before=9_000, tokens_after=3_000,
                             cooldown_seconds=60)
    assert (done.ineffective_count, done.ineffective_tokens) == (0, None)


def test_re_arm_threshold_is_durable_in_the_store_R_5_3(tmp_path: object) -> None:
    from pathlib import Path

    from hermes_host.store import open_store
    from hermes_host.store.base import Guards

    path = Path(str(tmp_path)) / "state.db"
    with open_store(path) as store:
        sid = store.create_session(title="t").id
        store.write_guards(sid, Guards(None, 0, 2, 7_055))
    with open_store(path) as store:
        assert store.read_guards(sid) == Guards(None, 0, 2, 7_055)
        assert store.get_session(sid).guards.ineffective_tokens == 7_055
