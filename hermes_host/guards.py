"""Cooldown and anti-thrash guards (R-5), and the host's own trigger rule (R-4.1, R-4.2, R-4.4).

The guard counters live in the session's ``sessions`` row and are re-read from the store before
every decision (R-5.3), so every process serving a session agrees.  This module holds the pure
rules; the host reads and writes the counters through the store.

* Cooldown (R-5.1): a transient summariser failure suppresses *automatic* compression until a
  deadline (``compression.cooldown_seconds`` unless the engine asked for another length) —
  except for an engine that declares ``compresses_during_cooldown = True`` (the default
  compressor): it makes no LLM call during a cooldown but compresses with the offline
  summariser, so one 429 cannot let the window outgrow the model (issue 28); the cooldown
  then delays only its next LLM attempt.  A manual ``/compress`` (``force=True``) clears it.
* Anti-thrash (R-5.2): automatic compression stops after 2 consecutive ineffective
  compressions (each saved < 10 %, or was a no-op), or after the fallback summary was used 2
  times in a row.  A forced compression ignores both; an effective one resets the counters.
  It re-arms for one attempt once the window has grown by :data:`REARM_GROWTH` since the last
  ineffective attempt, or reached the request budget (:func:`rearmed`): two no-ops early in a
  short session must not block compression for the rest of it.  A fallback summary written
  *during* a cooldown is the plan, not a failure: it does not extend the fallback streak.
"""

from __future__ import annotations

import math

from hermes_host.models import CompressDecision, CompressionSettings, GuardState

__all__ = [
    "INEFFECTIVE_SAVING",
    "REARM_GROWTH",
    "STREAK_LIMIT",
    "after_compression",
    "blocked_reason",
    "cleared_for_force",
    "cooldown_left",
    "host_decision",
    "model_ratio",
    "rearmed",
    "threshold_tokens",
]

INEFFECTIVE_SAVING = 0.10
"""A compression that saves less than this fraction of the window is ineffective (R-5.2)."""

STREAK_LIMIT = 2
"""Consecutive ineffective compressions / fallbacks after which automatic compression stops."""


REARM_GROWTH = 1.25
"""Anti-thrash yields once the window holds this many times the tokens it held at the last
ineffective attempt (a materially larger window may well compress)."""


def rearmed(guards: GuardState, tokens: int, context_length: int | None = None) -> GuardState:
    """``guards`` as the next decision should see them: anti-thrash's streaks cleared for one
    attempt when the window reached ``context_length`` — pass the request budget
    (``context_length - max_output_tokens``): the next request would not fit — or grew by
    :data:`REARM_GROWTH` since the last ineffective attempt."""
    if guards.ineffective_count < STREAK_LIMIT and guards.fallback_streak < STREAK_LIMIT:
        return guards
    overflow = context_length is not None and tokens >= context_length
    grown = (
        guards.ineffective_tokens is not None
        and guards.ineffective_count >= STREAK_LIMIT
        and tokens >= guards.ineffective_tokens * REARM_GROWTH
    )
    if not (overflow or grown):
        return guards
    return guards.model_copy(update={"ineffective_count": 0, "fallback_streak": 0})


def blocked_reason(
    guards: GuardState,
    tokens: int | None = None,
    context_length: int | None = None,
    *,
    cooldown: bool = True,
) -> str | None:
    """Why automatic compression is suppressed now, or ``None`` when it may run.

    ``cooldown:<seconds>`` while a cooldown runs, unless ``cooldown`` is false — the engine
    declared ``compresses_during_cooldown = True``: it makes no LLM call then (the default
    compressor summarises offline), so the cooldown holds back only its summariser.
    Anti-thrash yields (:func:`rearmed`) when the window has reached ``context_length`` (pass
    the request budget: the next request would not fit, so one more attempt is worth it) or
    has grown materially since the last ineffective attempt."""
    left = cooldown_left(guards)
    if cooldown and left is not None:
        return f"cooldown:{left}"
    if tokens is not None:
        guards = rearmed(guards, tokens, context_length)
    if guards.ineffective_count >= STREAK_LIMIT:
        return "ineffective"
    if guards.fallback_streak >= STREAK_LIMIT:
        return "fallback_streak"
    return None


def cooldown_left(guards: GuardState) -> int | None:
    """Whole seconds until the LLM summariser may be called again, or ``None``."""
    if guards.cooldown_until is not None and guards.cooldown_until > guards.now:
        return math.ceil(guards.cooldown_until - guards.now)
    return None


def cleared_for_force(guards: GuardState) -> GuardState:
    """A manual ``/compress`` clears the cooldown and the anti-thrash counters (R-5.1, R-12.1)."""
    return guards.model_copy(
        update={"cooldown_until": None, "ineffective_count": 0, "fallback_streak": 0}
    )


def model_ratio(settings: CompressionSettings, model: str) -> float:
    """``threshold_percent``, or the longest ``model_thresholds`` key that is a substring of
    ``model`` (R-4.4) — engines that derive their own threshold start from the same ratio."""
    matches = [key for key in settings.model_thresholds if key and key in model]
    if matches:
        return float(settings.model_thresholds[max(matches, key=len)])
    return float(settings.threshold_percent)


def threshold_tokens(settings: CompressionSettings, context_length: int, model: str = "") -> int:
    """``min(context_length × ratio, threshold_tokens)`` (R-4.2), the ratio from
    :func:`model_ratio`."""
    threshold = int(context_length * model_ratio(settings, model))
    if settings.threshold_tokens is not None:
        threshold = min(threshold, settings.threshold_tokens)
    return max(1, threshold)


def threshold_rule(
    settings: CompressionSettings, context_length: int, model: str = ""
) -> dict[str, float | int | None]:
    """The parts of :func:`threshold_tokens` (``CompressDecision.threshold_rule``): the host's
    own rule has no small-window floor and reserves nothing for the reply."""
    return {
        "configured_percent": model_ratio(settings, model),
        "floor_percent": None,
        "cap_tokens": settings.threshold_tokens,
        "output_reservation": 0,
        "tiny_window_percent": None,
    }


def host_decision(
    *,
    tokens: int,
    context_length: int,
    settings: CompressionSettings,
    guards: GuardState,
    model: str = "",
    budget: int | None = None,
    cooldown: bool = True,
) -> CompressDecision:
    """The host's own rule, used when no engine answers ``should_compress`` or the engine
    failed (the hook's fail policy): guards first, then the threshold (R-4.1).  ``budget``
    is the request budget anti-thrash yields at (default: the context length); ``cooldown``
    as in :func:`blocked_reason`."""
    threshold = threshold_tokens(settings, context_length, model)
    rule = threshold_rule(settings, context_length, model)
    blocked = blocked_reason(guards, tokens, budget or context_length, cooldown=cooldown)
    if blocked is not None:
        return CompressDecision(
            compress=False, reason=blocked, threshold_tokens=threshold, threshold_rule=rule
        )
    if tokens < threshold:
        return CompressDecision(
            compress=False, reason="below_threshold", threshold_tokens=threshold,
            threshold_rule=rule,
        )
    return CompressDecision(
        compress=True, reason=None, threshold_tokens=threshold, threshold_rule=rule
    )


def after_compression(
    guards: GuardState,
    *,
    outcome: str,
    tokens_before: int,
    tokens_after: int,
    cooldown_seconds: float,
    requested_cooldown: float | None = None,
) -> GuardState:
    """The guard counters after a compression attempt with ``outcome`` (R-5.1, R-5.2).

    ``failed_transient`` starts a cooldown; ``fallback`` extends the fallback streak;
    ``noop`` or a saving under 10 % counts as ineffective; an effective, non-fallback
    compression resets both streaks.  ``failed_permanent`` / ``aborted`` count as ineffective
    (retrying cannot help, R-10.3); a manual ``/compress`` clears the counters.
    ``requested_cooldown`` (the engine's ``CompressResult.cooldown_seconds``) starts a
    cooldown whatever the outcome: an engine that committed a fallback summary after a
    transient failure still wants automatic compression to pause (R-5.1).
    """
    update: dict[str, object] = {}
    if outcome == "failed_transient":
        update["cooldown_until"] = guards.now + cooldown_seconds
        return guards.model_copy(update=update)
    if outcome in ("failed_permanent", "aborted"):
        # Retrying cannot help: count it as an ineffective attempt, so automatic
        # compression stops after two instead of failing again every turn.
        update["ineffective_count"] = guards.ineffective_count + 1
        update["ineffective_tokens"] = tokens_before
        return guards.model_copy(update=update)
    saved = (tokens_before - tokens_after) / tokens_before if tokens_before > 0 else 0.0
    ineffective = outcome == "noop" or saved < INEFFECTIVE_SAVING
    update["ineffective_count"] = guards.ineffective_count + 1 if ineffective else 0
    update["ineffective_tokens"] = tokens_before if ineffective else None
    if outcome != "fallback":
        update["fallback_streak"] = 0
    elif cooldown_left(guards) is None:  # during a cooldown the fallback is planned
        update["fallback_streak"] = guards.fallback_streak + 1
    if requested_cooldown:
        update["cooldown_until"] = guards.now + requested_cooldown
    elif not ineffective and outcome == "summarised":
        # only a summary the summariser wrote shows it works again: an offline one
        # (fallback, or the feasibility skip's "dropped") leaves the cooldown running
        update["cooldown_until"] = None
    return guards.model_copy(update=update)
