"""What a turn and a compression report (R-10.4 markers, outcomes, the normalisation done),
and the environment variable that exposes the session id (R-8.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_host.models import (
    CompressDecision,
    CompressResult,
    Message,
)

COMPACTING_MARKER = "🗜️ Compacting context — summarizing earlier conversation..."
"""Shown when a compression pass starts (R-10.4)."""
COMPACTED_MARKER = "✓ Context compaction complete — continuing turn..."
"""Shown when a compression was committed (R-10.4)."""

_COMMITTING_OUTCOMES = frozenset({"summarised", "fallback", "dropped"})


def not_kept_message(outcome: str, notes: list[str]) -> str:
    """Why a compression left the session as it was, without calling an outcome such as
    ``summarised`` "not committed" in one breath (issue 30): an engine that summarised
    produced a window the host did not keep; any other outcome changed nothing."""
    why = "; ".join(notes) if notes else "the window is unchanged"
    if outcome in _COMMITTING_OUTCOMES:
        return (f"compression discarded, session unchanged: the engine's {outcome} proposal "
                f"was not kept ({why})")
    return f"no compression ({outcome}): {why}"


SESSION_ENV = "HERMES_HOST_SESSION_ID"
"""The environment variable that exposes the live session id to the process and the tools
it starts (R-8.1).  Set by :meth:`Session.export_id`; a rotation moves it to the new id."""

ReportStatus = Literal["committed", "preview", "not_committed", "deferred", "rejected"]


@dataclass
class Normalisation:
    """What the host changed in the window it sends (the store keeps the originals)."""

    merged_adjacent: int = 0
    """Adjacent same-role messages merged into one (R-1.4)."""
    tool_pairs_repaired: int = 0
    """Dangling calls closed with a short note, or stray results dropped (R-6.9)."""

    def as_dict(self) -> dict[str, int]:
        return {
            "merged_adjacent": self.merged_adjacent,
            "tool_pairs_repaired": self.tool_pairs_repaired,
        }


@dataclass(frozen=True)
class SummaryCost:
    """What the summary of one compression costs, as an LLM summariser bills it (issue 28):
    ``requests`` it makes (or would make, when the offline summariser wrote the summary),
    their ``input_tokens`` (of which ``cached_tokens`` a prompt-caching provider reads from
    its cache) and the summary's ``output_tokens``."""

    requests: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, result: CompressResult) -> SummaryCost:
        return cls(
            requests=result.summary_requests,
            input_tokens=result.summary_input_tokens,
            cached_tokens=result.summary_cached_tokens,
            output_tokens=result.summary_output_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass
class CompressionReport:
    """One compression attempt, committed or not.

    ``status``: ``committed`` (published; the session may have a new id), ``preview``
    (``compress(preview=True)``: computed, not published), ``deferred`` (another path holds
    the lease, R-10.1), ``not_committed`` (the engine declined, failed transiently, aborted or
    no-op'd; guards updated), ``rejected`` (the fence or the host refused the proposal, or the
    pass ran out of time: the session is unchanged).
    """

    status: ReportStatus
    outcome: str
    """The engine's ``SummaryOutcome``, or ``compression_deferred`` / ``timeout`` /
    ``error`` / ``invalid`` / ``no_engine`` / ``lease_lost`` when the host decided."""
    tokens_before: int
    tokens_after: int
    llm_calls: int = 0
    engine: str | None = None
    session_id: str = ""
    previous_session_id: str | None = None
    holder: str | None = None
    message: str | None = None
    notes: list[str] = field(default_factory=list)
    published_messages: int = 0
    """How many messages the compressed window holds (rows written by the publish)."""
    proposed: list[Message] | None = None
    """The proposed window (``preview`` only)."""
    duration: float = 0.0
    summary: SummaryCost = field(default_factory=SummaryCost)
    """The summary's cost as an LLM summariser bills it (also for an offline summary)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "outcome": self.outcome,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "llm_calls": self.llm_calls,
            "engine": self.engine,
            "session_id": self.session_id,
            "previous_session_id": self.previous_session_id,
            "holder": self.holder,
            "message": self.message,
            "notes": list(self.notes),
            "published_messages": self.published_messages,
            "duration": round(self.duration, 4),
            "summary": self.summary.as_dict(),
        }


@dataclass
class TurnOutcome:
    """What :meth:`Session.end_turn` did.  ``events`` are user-facing lines, in order,
    including the R-10.4 status markers around a compression."""

    session_id: str
    decision: CompressDecision
    decided_by: str
    """``engine:<name>`` or ``host`` (no engine answered, or the engine failed)."""
    window_tokens: int
    compression: CompressionReport | None = None
    events: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``continued`` (no compression attempted), else the compression report's status."""
        return "continued" if self.compression is None else self.compression.status

    @property
    def deferred(self) -> bool:
        return self.compression is not None and self.compression.status == "deferred"

