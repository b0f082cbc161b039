"""A small host loop for the transcript tests: grow the window message by message, ask
``should_compress`` at every turn boundary and run ``compress`` — both through a real
:class:`hermes_host.fence.HookRunner` — and mirror the host's guard bookkeeping with
:func:`hermes_host.guards.after_compression`.

After every committed compression the window is validated (invariants, one summary block,
head decay, tail within 1.5 × its budget unless the pressure pass has nothing left to
demote)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes_host.fence import HookRunner
from hermes_host.guards import after_compression
from hermes_host.messages import check_invariants, is_summary
from hermes_host.models import (
    CompressionSettings,
    CompressRequest,
    CompressResult,
    GuardState,
    Message,
    ShouldCompressRequest,
    SummarizerSettings,
)
from hermes_host.plugins import new_plugin_manager

from hermes_compressor import Compressor
from hermes_compressor.prune import PruneStats, pressure_pass
from hermes_compressor.trigger import tail_budget, threshold_tokens

COMMITTING = ("summarised", "fallback", "dropped")


@dataclass
class ReplayReport:
    compressions: list[CompressResult] = field(default_factory=list)
    declined: list[CompressResult] = field(default_factory=list)
    """Attempts that did not commit (noop, aborted, failed)."""
    problems: list[str] = field(default_factory=list)
    window: list[Message] = field(default_factory=list)
    max_tokens: int = 0


def runner_for(engine: Compressor) -> HookRunner:
    pm = new_plugin_manager()
    pm.register(engine, name="compressor")
    return HookRunner(pm)


def _validate(
    engine: Compressor,
    window: list[Message],
    round_no: int,
    settings: CompressionSettings,
    context_length: int,
) -> list[str]:
    problems = [str(v) for v in check_invariants(window)]
    summaries = [i for i, m in enumerate(window) if is_summary(m)]
    if len(summaries) != 1:
        return [*problems, f"{len(summaries)} summary blocks"]
    at = summaries[0]
    has_system = bool(window) and window[0].get("role") == "system"
    if round_no >= 2 and at != (1 if has_system else 0):
        problems.append(f"head did not decay: summary at {at} in round {round_no}")
    tail = window[at + 1 :]
    budget = tail_budget(settings, threshold_tokens(settings, context_length))
    tail_tokens = sum(engine.count(m) for m in tail)
    if tail_tokens > budget * 1.5:
        # over the soft ceiling is allowed only when the pressure pass has nothing left to
        # demote (unfinished outputs, user/assistant text, aligned tool groups)
        stats = PruneStats()
        pressure_pass(
            window,
            engine.count,
            tail_start=at + 1,
            budget=budget,
            excerpt_chars=engine.options.pressure_excerpt_chars,
            stats=stats,
        )
        if stats.pruned:
            problems.append(
                f"tail {tail_tokens} tokens > 1.5 × {budget} and the pressure "
                f"pass could still demote {stats.pruned} output(s)"
            )
    return problems


def replay(
    engine: Compressor,
    messages: list[Message],
    *,
    context_length: int,
    summarizer: SummarizerSettings,
    settings: CompressionSettings | None = None,
    **request_extra: Any,
) -> ReplayReport:
    settings = settings or CompressionSettings()
    runner = runner_for(engine)
    report = ReplayReport()
    guards = GuardState(now=1_000.0)
    window: list[Message] = []
    count = 0
    for i, message in enumerate(messages):
        window.append(message)
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if nxt is not None and nxt.get("role") == "tool":
            continue  # inside a tool-call group: not a turn boundary
        tokens = sum(engine.count(m) for m in window)
        report.max_tokens = max(report.max_tokens, tokens)
        guards = guards.model_copy(update={"now": guards.now + 30})
        decision = runner.call(
            "compressor",
            "should_compress",
            ShouldCompressRequest(
                session_id="replay",
                messages=window,
                current_tokens=tokens,
                context_length=context_length,
                compression=settings,
                guards=guards,
                compression_count=count,
            ),
        )
        if not decision.adopted:
            report.problems.append(f"should_compress not adopted: {decision.error}")
            break
        if not decision.value.compress:
            continue
        fenced = runner.call(
            "compressor",
            "compress",
            CompressRequest(
                session_id="replay",
                messages=window,
                current_tokens=tokens,
                context_length=context_length,
                compression=settings,
                summarizer=summarizer,
                guards=guards,
                compression_count=count,
                **request_extra,
            ),
        )
        if not fenced.adopted:
            report.problems.append(f"compress not adopted ({fenced.provenance}): {fenced.error}")
            break
        result: CompressResult = fenced.value
        after = tokens
        if result.outcome in COMMITTING:
            window = list(result.messages)
            after = sum(engine.count(m) for m in window)
            count += 1
            report.compressions.append(result)
            report.problems += [
                f"round {count}: {p}"
                for p in _validate(engine, window, count, settings, context_length)
            ]
        else:
            report.declined.append(result)
        guards = after_compression(
            guards,
            outcome=result.outcome,
            tokens_before=tokens,
            tokens_after=after,
            cooldown_seconds=result.cooldown_seconds or 600.0,
        )
    report.window = window
    return report


def small_window(engine: Compressor, messages: list[Message], factor: float) -> int:
    """A context length whose threshold (0.75 × window, the small-window floor) is the system
    prompt plus ``factor`` × the largest of: a sixth of the rest, the biggest message, the
    first twelve messages (so the first round has a middle at all)."""
    system = engine.count(messages[0]) if messages[0].get("role") == "system" else 0
    rest = [engine.count(m) for m in messages[1 if system else 0 :]]
    base = max(400, sum(rest) // 6, max(rest), sum(rest[:12]))
    return int((system + factor * base) / 0.75) + 1
