"""The trigger (SPEC section 4) and the guards as the engine sees them (section 5).

``threshold_tokens`` is derived in four steps:

1. the ratio is ``compression.threshold_percent``, overridden by the longest
   ``model_thresholds`` key that is a substring of the model name (R-4.4);
2. small-window floor (R-4.3): a window under 512K tokens uses at least
   :data:`MIN_CTX_TRIGGER_RATIO` (0.75) of itself — a 200K model that compressed at half full
   would throw away context it can afford to keep, and a small model needs its window used;
3. the absolute cap ``compression.threshold_tokens`` wins over both (R-4.2): it is the user's
   explicit number;
4. output-token reservation: the prompt can never grow past ``context_length −
   max_output_tokens`` (the reply needs room).  When the threshold would lie at or beyond that
   effective window — a tiny window — it falls back to :data:`TINY_WINDOW_RATIO` (0.85) of the
   effective window so that compression can still trigger.  At most half of the window is
   reserved, so a misconfigured ``max_output_tokens`` cannot drive the threshold to zero.

The comparison is ``tokens >= threshold`` (R-4.1), with ``tokens = prompt_tokens or
current_tokens``.  The engine never changes guard counters: it reads them from the request
(R-5.3) and reports effects through ``CompressResult.outcome``.
"""

from __future__ import annotations

import math

from hermes_host.guards import STREAK_LIMIT, model_ratio
from hermes_host.models import (
    CompressDecision,
    CompressionSettings,
    CompressRequest,
    GuardState,
    ShouldCompressRequest,
)

__all__ = [
    "MIN_CTX_TRIGGER_RATIO",
    "SMALL_WINDOW_TOKENS",
    "STREAK_LIMIT",
    "TINY_WINDOW_RATIO",
    "blocked_reason",
    "decide",
    "resolve_ratio",
    "tail_budget",
    "threshold_rule",
    "threshold_tokens",
]

SMALL_WINDOW_TOKENS = 512_000
MIN_CTX_TRIGGER_RATIO = 0.75
TINY_WINDOW_RATIO = 0.85
# The host's own guard limit and ratio rule: the engine must agree with them.
resolve_ratio = model_ratio


def threshold_tokens(
    settings: CompressionSettings,
    context_length: int,
    model: str = "",
    max_output_tokens: int = 0,
) -> int:
    """Tokens at which the window is compressed (R-4.2–R-4.4); see the module docstring."""
    return threshold_rule(settings, context_length, model, max_output_tokens)[0]


def threshold_rule(
    settings: CompressionSettings,
    context_length: int,
    model: str = "",
    max_output_tokens: int = 0,
) -> tuple[int, dict[str, float | int | None]]:
    """:func:`threshold_tokens` and its parts (``CompressDecision.threshold_rule``, shown by
    the host's status): the configured ratio, the small-window floor when it applies, the
    cap, the tokens reserved for the reply, and the tiny-window ratio when it applies."""
    configured = resolve_ratio(settings, model)
    floor = MIN_CTX_TRIGGER_RATIO if context_length < SMALL_WINDOW_TOKENS else None
    ratio = max(configured, floor) if floor is not None else configured
    threshold = context_length * ratio
    if settings.threshold_tokens is not None:
        threshold = min(threshold, settings.threshold_tokens)
    reserve = min(max(0, max_output_tokens), context_length // 2)
    effective = context_length - reserve
    tiny = None
    if threshold >= effective:
        tiny = TINY_WINDOW_RATIO
        threshold = effective * TINY_WINDOW_RATIO
    return max(1, int(threshold)), {
        "configured_percent": configured,
        "floor_percent": floor,
        "cap_tokens": settings.threshold_tokens,
        "output_reservation": reserve,
        "tiny_window_percent": tiny,
    }


def tail_budget(settings: CompressionSettings, threshold: int) -> int:
    """Tokens the protected tail may hold: threshold × summary_target_ratio (0.10–0.80)."""
    ratio = min(0.80, max(0.10, settings.summary_target_ratio))
    return max(1, int(threshold * ratio))


def blocked_reason(guards: GuardState) -> str | None:
    """``cooldown:<seconds>`` while the cooldown runs (R-5.1); ``ineffective`` after two
    ineffective compressions or two fallbacks in a row (R-5.2); else ``None``."""
    if guards.cooldown_until is not None and guards.now < guards.cooldown_until:
        return f"cooldown:{math.ceil(guards.cooldown_until - guards.now)}"
    if guards.ineffective_count >= STREAK_LIMIT or guards.fallback_streak >= STREAK_LIMIT:
        return "ineffective"
    return None


def decide(request: ShouldCompressRequest) -> CompressDecision:
    """The answer to ``should_compress`` (R-4.1, R-5.1, R-5.2).

    Below the threshold → no (``below_threshold``).  Above it, the guards may block with a
    reason.  ``force`` (manual ``/compress``) says yes whatever the tokens and guards: the
    host clears the cooldown itself.
    """
    threshold, rule = threshold_rule(
        request.compression, request.context_length, request.model, request.max_output_tokens
    )

    def answer(compress: bool, reason: str | None = None) -> CompressDecision:
        return CompressDecision(
            compress=compress, reason=reason, threshold_tokens=threshold, threshold_rule=rule
        )

    if request.force:
        return answer(True)
    tokens = request.prompt_tokens or request.current_tokens
    if tokens < threshold:
        return answer(False, "below_threshold")
    reason = blocked_reason(request.guards)
    if reason is not None and not reason.startswith("cooldown:"):
        # a cooldown holds back only the LLM summariser: compress() summarises offline
        # meanwhile (issue 28)
        return answer(False, reason)
    return answer(True)


def _cooldown_active(request: CompressRequest) -> bool:
    until = request.guards.cooldown_until
    return not request.force and until is not None and request.guards.now < until
