"""After a turn (SPEC sections 4 and 5): usage, the ``should_compress`` decision (the host's own
threshold rule when the engine fails) and the durable guards it reads (R-5.3).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_host import guards as guard_rules
from hermes_host.models import (
    CompressDecision,
    GuardState,
    Message,
    SessionEvent,
    ShouldCompressRequest,
)
from hermes_host.session import intake
from hermes_host.session.bound import request_budget
from hermes_host.session.manifest import attach_usage
from hermes_host.session.reports import (
    TurnOutcome,
)
from hermes_host.store import StoreError

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")


def end_turn(session: Session, usage: Mapping[str, Any] | Any | None = None) -> TurnOutcome:
    """:meth:`Session.end_turn`."""
    host = session.host
    session._sync()
    events: list[str] = []
    try:
        prompt_tokens = session._record_usage(usage)
    except StoreError as exc:  # e.g. a full disk: the turn goes on, its decision included
        prompt_tokens = usage_counts(usage)["input_tokens"] or None
        session.last_prompt_tokens = prompt_tokens or session.last_prompt_tokens
        session._emit(events, f"usage not recorded: {exc}")
    config = host.config
    limit = intake.text_limit(config.model.context_length, config.model.max_output_tokens,
                              config.fence.max_result_bytes)
    # providers are plugins: they get texts as the window holds them (issue 31)
    turn_messages, _ = intake.clip_all(session._window[session._turn_start :], limit)
    session._turn_start = len(session._window)
    host._broadcast("on_turn_complete", SessionEvent(
        session_id=session.id, reason="turn", messages=turn_messages
    ))
    base = session.window()
    tokens = session.window_tokens
    guards = session._guards()
    decision, decided_by = session._decide(base, tokens, prompt_tokens, guards)
    session.last_decision = (decision, decided_by)
    session.turns_ended += 1
    outcome = TurnOutcome(
        session_id=session.id, decision=decision, decided_by=decided_by, window_tokens=tokens,
        events=events,
    )
    if decision.compress:
        report = session._compression_pass(force=False, events=outcome.events)
        outcome.compression = report
        outcome.session_id = session.id
        outcome.window_tokens = session.window_tokens
    session.events.extend(outcome.events)
    return outcome


def usage_counts(usage: Mapping[str, Any] | Any) -> dict[str, int]:
    """The store's usage counters from a provider's usage (a mapping or an SDK object)."""

    def field(source: Any, name: str) -> Any:
        return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)

    def get(name: str, within: str | None = None) -> int:
        value = field(usage, name) if within is None else field(field(usage, within), name)
        return int(value) if isinstance(value, int | float) else 0

    return {
        "input_tokens": get("prompt_tokens") or get("input_tokens"),
        "output_tokens": get("completion_tokens") or get("output_tokens"),
        # Anthropic's names, then OpenAI's cached prompt tokens (chat, then responses API)
        "cache_read_tokens": get("cache_read_tokens") or get("cache_read_input_tokens")
        or get("cached_tokens", "prompt_tokens_details")
        or get("cached_tokens", "input_tokens_details"),
        "cache_write_tokens": get("cache_write_tokens") or get("cache_creation_input_tokens"),
        "reasoning_tokens": get("reasoning_tokens"),
    }


def record_usage(session: Session, usage: Mapping[str, Any] | Any | None) -> int | None:
    if usage is None:
        return None
    counts = usage_counts(usage)
    reasoning = counts.pop("reasoning_tokens")
    session.host.store.add_usage(session.id, **counts, reasoning_tokens=reasoning)
    attach_usage(session, counts)
    prompt = counts["input_tokens"]
    if prompt:
        session.last_prompt_tokens = prompt
        return prompt
    return None


def guards(session: Session) -> GuardState:
    """The durable guards, re-read from the store before every decision (R-5.3)."""
    return session.host.store.read_guards(session.id).as_guard_state(time.time())


def decide(
    session: Session,
    base: list[Message],
    tokens: int,
    prompt_tokens: int | None,
    guards: GuardState,
) -> tuple[CompressDecision, str]:
    host = session.host
    model = host.config.model
    settings = host.config.compression
    chain = host.chain("should_compress")
    if prompt_tokens is not None and session.last_condensed is not None:
        # the provider counted a request the bound condensed: the window itself is what
        # must shrink, so it decides when larger (issue 28)
        prompt_tokens = max(prompt_tokens, tokens)
    # Overflow, or a window grown materially since the last ineffective attempt:
    # anti-thrash yields for one more attempt (the cooldown does not; guards.rearmed).
    budget = request_budget(model.context_length, model.max_output_tokens)
    guards = guard_rules.rearmed(guards, tokens, budget)
    if chain:
        request = ShouldCompressRequest(
            session_id=session.id,
            messages=base,
            prompt_tokens=prompt_tokens,
            current_tokens=tokens,
            context_length=model.context_length,
            max_output_tokens=model.max_output_tokens,
            model=model.name,
            compression_count=session.compression_count,
            guards=guards,
            compression=settings,
        )
        value, stamps = host.runner.first_result("should_compress", chain, request)
        if isinstance(value, CompressDecision):
            engine = next(s.plugin for s in stamps if s.adopted)
            blocked = guard_rules.blocked_reason(
                guards, tokens, budget, cooldown=cooldown_blocks(session)
            )
            if value.compress and blocked is not None:
                # The durable guards bind every engine: never thrash or ignore a
                # cooldown because an engine forgot to look.
                return (
                    value.model_copy(update={"compress": False, "reason": blocked}),
                    f"engine:{engine}+guards",
                )
            return value, f"engine:{engine}"
    effective = prompt_tokens or tokens
    return (
        guard_rules.host_decision(
            tokens=effective,
            context_length=model.context_length,
            budget=budget,
            cooldown=cooldown_blocks(session),
            settings=settings,
            guards=guards,
            model=model.name,
        ),
        "host",
    )


def cooldown_blocks(session: Session) -> bool:
    """Whether a cooldown suspends automatic compression: yes, unless the engine answering
    ``compress`` declares ``compresses_during_cooldown = True`` (it summarises without an
    LLM call while the cooldown runs, issue 28)."""
    host = session.host
    chain = host.chain("compress")
    engine = host.plugins.engines.get(chain[0]) if chain else None
    return getattr(engine, "compresses_during_cooldown", False) is not True
