"""The replay driver: feed a recorded transcript through a :class:`ContextHost` as if live.

Used by ``hermes-host replay`` (and reusable by ``eval``).  The transcript's leading system
message becomes the session's system prompt; every user message starts a turn; assistant and
tool messages follow.  The driver behaves like an agent loop:

* before each assistant message it builds the request the model would have received
  (``select_context`` applied, wire-sanitised) and checks the window invariants on it;
* it adds every message verbatim (the store keeps the originals);
* after every *step* — a message not followed by a tool result, i.e. an assistant message
  with all its results, or a user message — it calls ``end_turn``, which may compress.
  Checking after each step, not only after each user turn, is what a live agent does: agent
  transcripts often hold one user message and hundreds of model calls.

Token counts come from the host's own counter (a replay has no provider usage).

Every fenced call the replay makes is counted per engine and hook
(:meth:`hermes_host.fence.HookRunner.recording`): ``engine_problems`` lists each one that
raised, timed out, answered something invalid or was skipped by an open breaker, with the
last error message — a broken engine is never mistaken for a quiet one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_host.cost import CostLedger, uncompressed_cost
from hermes_host.fence import HookHealth
from hermes_host.host import CompressionReport, ContextHost, Session
from hermes_host.messages import check_invariants
from hermes_host.models import Message
from hermes_host.session.bound import request_budget
from hermes_host.transcripts import Transcript

__all__ = ["CompressionRecord", "ReplayResult", "replay_transcript", "sparkline"]

_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[int], width: int = 60) -> str:
    """``values`` as a one-line chart of at most ``width`` block characters (max per bucket)."""
    if not values:
        return ""
    if len(values) > width:
        size = len(values) / width
        values = [
            max(values[int(i * size) : max(int((i + 1) * size), int(i * size) + 1)])
            for i in range(width)
        ]
    top = max(values) or 1
    last = len(_BLOCKS) - 1
    return "".join(_BLOCKS[min(last, int(v / top * last))] for v in values)


@dataclass
class CompressionRecord:
    """One compression attempt during a replay."""

    turn: int
    step: int
    tokens_before: int
    tokens_after: int
    outcome: str
    status: str
    llm_calls: int
    engine: str | None
    session_id: str
    previous_session_id: str | None
    published_messages: int
    message: str | None = None
    summary: dict[str, int] = field(default_factory=dict)
    """The summary's cost as an LLM summariser bills it (requests, input, cached, output)."""
    decided_by: str | None = None
    """Who decided to compress: ``engine:NAME`` (its ``should_compress``) or ``host`` (the
    token threshold rule, also when an engine failed or declined to answer)."""
    reason: str | None = None
    """The reason that decision gave (``124 messages > 120``, ``threshold``…)."""

    @classmethod
    def from_report(
        cls, turn: int, step: int, report: CompressionReport,
        decided_by: str | None = None, reason: str | None = None,
    ) -> CompressionRecord:
        return cls(
            decided_by=decided_by,
            reason=reason,
            turn=turn,
            step=step,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            outcome=report.outcome,
            status=report.status,
            llm_calls=report.llm_calls,
            engine=report.engine,
            session_id=report.session_id,
            previous_session_id=report.previous_session_id,
            published_messages=report.published_messages,
            message=report.message,
            summary=report.summary.as_dict(),
        )

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReplayResult:
    """Everything ``replay --json`` prints (R-14.6)."""

    transcript: str
    session_id: str
    first_session_id: str
    lineage: list[str]
    turns: int
    steps: int
    messages: int
    context_length: int
    compressions: list[CompressionRecord]
    invariant_violations: int
    window_violations: int
    cache_violations: int
    violation_examples: list[str]
    final_window_tokens: int
    max_window_tokens_after_compression: int | None
    store: str
    final_request: list[Message]
    normalised: dict[str, int]
    select_decisions: list[dict[str, Any]]
    window_series: list[int] = field(default_factory=list)
    request_budget: int = 0
    """``context_length - max_output_tokens`` (reservation capped at half the window)."""
    request_series: list[int] = field(default_factory=list)
    """Host-counted tokens of every model call's request, in order."""
    requests_over_budget: int = 0
    cost: dict[str, Any] = field(default_factory=dict)
    """:class:`~hermes_host.cost.CostLedger` figures, plus ``uncompressed`` (the same calls
    with no compression, and whether the whole session fits the budget at all)."""
    events: list[str] = field(default_factory=list)
    engine_problems: list[HookHealth] = field(default_factory=list)
    """Per engine and hook that went wrong during the replay (see the module docstring)."""
    threshold_tokens: int | None = None
    """The trigger threshold of the last ``end_turn`` decision that stated one (the
    ``threshold_tokens`` of :meth:`Session.status`): a window above it starts a compression
    attempt."""

    @property
    def committed(self) -> list[CompressionRecord]:
        return [c for c in self.compressions if c.status == "committed"]

    @property
    def llm_calls(self) -> int:
        return sum(c.llm_calls for c in self.compressions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript,
            "session_id": self.session_id,
            "first_session_id": self.first_session_id,
            "lineage": self.lineage,
            "turns": self.turns,
            "steps": self.steps,
            "messages": self.messages,
            "context_length": self.context_length,
            "threshold_tokens": self.threshold_tokens,
            "compressions": [c.as_dict() for c in self.compressions],
            "committed_compressions": len(self.committed),
            "llm_calls": self.llm_calls,
            "invariant_violations": self.invariant_violations,
            "invariant_details": {
                "window": self.window_violations,
                "prompt_cache": self.cache_violations,
                "over_budget": self.requests_over_budget,
                "examples": self.violation_examples,
            },
            "request_budget": self.request_budget,
            "max_request_tokens": max(self.request_series, default=0),
            "requests_over_budget": self.requests_over_budget,
            "request_series": self.request_series,
            "cost": self.cost,
            "final_window_tokens": self.final_window_tokens,
            "max_window_tokens_after_compression": self.max_window_tokens_after_compression,
            "window_series": self.window_series,
            "store": self.store,
            "normalised": self.normalised,
            "select_decisions": self.select_decisions,
            "engine_problems": [row.as_dict() for row in self.engine_problems],
            "final_request": self.final_request,
        }


def replay_transcript(
    host: ContextHost,
    transcript: Transcript,
    *,
    title: str | None = None,
    on_step: Callable[[int, int], None] | None = None,
    on_compression: Callable[[CompressionRecord], None] | None = None,
    on_request: Callable[[int, list[Message], list[dict[str, Any]]], None] | None = None,
) -> ReplayResult:
    """Replay ``transcript`` into a new session of ``host``; see the module docstring.

    ``on_step(done, total)`` reports progress in messages; ``on_compression`` is called once
    per compression attempt (committed or not), for a live line; ``on_request(index,
    request, select_decisions)`` sees each request built before message ``index`` (an
    assistant reply) with what the ``select_context`` chain did (``evaluate`` measures it)."""
    with host.runner.recording() as seen:
        result = _replay(host, transcript, title, on_step, on_compression, on_request)
    result.engine_problems = host.runner.with_breakers(seen.problems())
    return result


def _replay(
    host: ContextHost,
    transcript: Transcript,
    title: str | None,
    on_step: Callable[[int, int], None] | None,
    on_compression: Callable[[CompressionRecord], None] | None,
    on_request: Callable[[int, list[Message], list[dict[str, Any]]], None] | None,
) -> ReplayResult:
    session: Session = host.open_session(
        title=title, system_prompt=transcript.system_prompt or ""
    )
    first_id = session.id
    turn_of: list[int] = []
    for turn in transcript.turns:
        turn_of.extend([turn.index] * len(turn.messages))

    messages = transcript.messages
    compressions: list[CompressionRecord] = []
    series: list[int] = []
    window_violations = 0
    examples: list[str] = []
    select_decisions: list[dict[str, Any]] = []
    final_request: list[Message] | None = None
    after_compression: int | None = None
    steps = 0
    model = host.config.model
    budget = request_budget(model.context_length, model.max_output_tokens)
    ledger = CostLedger()
    count = host.tokens.count
    history = count(
        {"role": "system", "content": transcript.system_prompt}
    ) if transcript.system_prompt else 0
    uncompressed: list[int] = []  # each request with no compression: the whole history
    over = 0
    threshold: int | None = None
    for i, message in enumerate(messages):
        if message.get("role") == "assistant":
            request = session.build_request()
            final_request = request
            tokens, _ = ledger.add_request(request, count)
            uncompressed.append(history)
            if tokens > budget:
                over += 1
                if len(examples) < 5:
                    examples.append(f"message {i}: request of {tokens:,} tokens over the "
                                    f"request budget of {budget:,}")
            if on_request is not None:
                on_request(i, request, session.last_select)
            violations = check_invariants(request)
            if violations:
                window_violations += len(violations)
                examples.extend(f"message {i}: {v}" for v in violations[: 5 - len(examples)])
            if session.last_select:
                select_decisions.append(
                    {"turn": turn_of[i], "message": i, "engines": session.last_select}
                )
        session.add_message(message)
        history += count(message)
        following = messages[i + 1] if i + 1 < len(messages) else None
        if following is None or following.get("role") != "tool":
            steps += 1
            outcome = session.end_turn()
            series.append(outcome.window_tokens)
            if outcome.decision.threshold_tokens is not None:
                threshold = outcome.decision.threshold_tokens
            if outcome.compression is not None:
                record = CompressionRecord.from_report(
                    turn_of[i], steps, outcome.compression, outcome.decided_by,
                    outcome.decision.reason)
                compressions.append(record)
                summary = outcome.compression.summary
                ledger.add_summary(summary.requests, summary.input_tokens,
                                   summary.output_tokens, summary.cached_tokens)
                if record.status == "committed":
                    after_compression = max(after_compression or 0, record.tokens_after)
                if on_compression is not None:
                    on_compression(record)
        if on_step is not None:
            on_step(i + 1, len(messages))

    if final_request is None:
        final_request = session.build_request()
    fits = max(uncompressed, default=0) <= budget
    cost = ledger.as_dict()
    cost["uncompressed"] = {
        "fits": fits,
        "max_request_tokens": max(uncompressed, default=0),
        "calls_cost": round(uncompressed_cost(uncompressed, ledger.prices), 1),
    }
    return ReplayResult(
        transcript=str(transcript.path),
        session_id=session.id,
        first_session_id=first_id,
        lineage=list(session.lineage),
        turns=len(transcript.turns),
        steps=steps,
        messages=transcript.message_count,
        context_length=host.config.model.context_length,
        compressions=compressions,
        invariant_violations=window_violations + session.cache_violations + over,
        window_violations=window_violations,
        cache_violations=session.cache_violations,
        violation_examples=examples,
        final_window_tokens=session.window_tokens,
        max_window_tokens_after_compression=after_compression,
        store=host.store.location,
        final_request=final_request,
        normalised=transcript.normalisation_counts(),
        select_decisions=select_decisions,
        window_series=series,
        request_budget=budget,
        request_series=list(ledger.request_tokens),
        requests_over_budget=over,
        cost=cost,
        events=list(session.events),
        threshold_tokens=threshold,
    )
