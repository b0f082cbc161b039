"""What one replay measured (:class:`EvalRun`) and the summary over runs: medians over
transcripts and figures pooled over all their needed artifacts.  Recall is reported under
both rules of "needed later" (:data:`~hermes_host.evaluation.recall.Rule`): the original
keys count any later occurrence, the ``…_agent`` keys only a later assistant message naming
the artifact."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.evaluation.recall import (
    AFTER_NTH,
    PointRecall,
    Rule,
    _in_context_ratio,
    _nth,
    _per_1k,
    _precision,
    _ratio,
    _round,
)


@dataclass
class EvalRun:
    """One transcript replayed with one engine set."""

    transcript: str
    engines: str
    messages: int
    turns: int
    model_calls: int
    tokens_per_call: list[int]
    aux_llm_calls: int
    compressions: int
    compression_attempts: int
    invariant_violations: int
    points: list[PointRecall]
    seconds: float
    select_engines: dict[str, int] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    """The replay's :class:`~hermes_host.cost.CostLedger` figures (issue 28)."""
    requests_over_budget: int = 0
    compression_sizes: list[tuple[int, int]] = field(default_factory=list)
    """(tokens before, tokens after) of every committed compression."""

    @property
    def shares_freed(self) -> list[float]:
        return [(b - a) / b for b, a in self.compression_sizes if b > 0]

    @property
    def recall(self) -> float | None:
        return _ratio(self.points)

    @property
    def in_context_recall(self) -> float | None:
        return _in_context_ratio(self.points)

    @property
    def precision(self) -> float | None:
        return _precision(self.points)

    @property
    def recall_per_1k_tokens(self) -> float | None:
        return _per_1k(self.points)

    def recall_after(self, n: int) -> float | None:
        """Needed-later recall right after the ``n``-th committed compression (1-based)."""
        point = _nth(self.points, n)
        return None if point is None else point.recall

    @property
    def recall_agent(self) -> float | None:
        """Needed-later recall, pooled, under the agent rule."""
        return _ratio(self.points, "agent")

    @property
    def in_context_recall_agent(self) -> float | None:
        """In-context recall, pooled, under the agent rule."""
        return _in_context_ratio(self.points, "agent")

    def recall_after_agent(self, n: int) -> float | None:
        """Needed-later recall under the agent rule right after the ``n``-th compression."""
        point = _nth(self.points, n, "agent")
        return None if point is None else point.recall_agent

    @property
    def mean_tokens(self) -> float:
        return statistics.fmean(self.tokens_per_call) if self.tokens_per_call else 0.0

    def as_dict(self) -> dict[str, Any]:
        calls = self.tokens_per_call
        return {
            "transcript": self.transcript,
            "engines": self.engines,
            "messages": self.messages,
            "turns": self.turns,
            "model_calls": self.model_calls,
            "tokens_sent": {
                "total": sum(calls),
                "mean_per_call": round(self.mean_tokens, 1),
                "median_per_call": statistics.median(calls) if calls else 0,
                "max_per_call": max(calls) if calls else 0,
                "mean_per_turn": round(sum(calls) / self.turns, 1) if self.turns else 0.0,
            },
            "aux_llm_calls": self.aux_llm_calls,
            "compressions": self.compressions,
            "compression_attempts": self.compression_attempts,
            "invariant_violations": self.invariant_violations,
            "needed_later_recall": None if self.recall is None else round(self.recall, 4),
            "in_context_recall": _round(self.in_context_recall),
            "precision": _round(self.precision),
            "recall_per_1k_tokens": _round(self.recall_per_1k_tokens),
            "recall_after_compression": {
                str(n): _round(self.recall_after(n)) for n in AFTER_NTH
            },
            "in_context_recall_after_compression": {
                str(n): _round(None if (p := _nth(self.points, n)) is None
                               else p.in_context_recall)
                for n in AFTER_NTH
            },
            "needed_later_recall_agent": _round(self.recall_agent),
            "in_context_recall_agent": _round(self.in_context_recall_agent),
            "recall_after_compression_agent": {
                str(n): _round(self.recall_after_agent(n)) for n in AFTER_NTH
            },
            "in_context_recall_after_compression_agent": {
                str(n): _round(None if (p := _nth(self.points, n, "agent")) is None
                               else p.in_context_recall_agent)
                for n in AFTER_NTH
            },
            "recall_points": [p.as_dict() for p in self.points],
            "select_adopted": self.select_engines,
            "seconds": round(self.seconds, 2),
            "requests_over_budget": self.requests_over_budget,
            "median_share_freed": _median(self.shares_freed),
            "cost": self.cost,
        }


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _after_nth(runs: Sequence[EvalRun], n: int, rule: Rule = "any") -> dict[str, Any]:
    """Recall right after the ``n``-th compression, over the runs that reached it: pooled
    (all their needed artifacts at that compression together), median, and the same runs'
    pooled recall after their 1st compression (a like-for-like baseline for the decay).
    ``rule`` says what "needed later" means (a run "reached" the n-th compression when it
    needed something there under that rule)."""
    reached = [(r, p) for r in runs if (p := _nth(r.points, n, rule)) is not None]
    points = [p for _, p in reached]
    firsts = [f for r, _ in reached if (f := _nth(r.points, 1, rule)) is not None]
    return {
        "transcripts": len(reached),
        "pooled_recall": _round(_ratio(points, rule)),
        "median_recall": _median(p.recall_agent if rule == "agent" else p.recall
                                 for p in points),
        "pooled_in_context_recall": _round(_in_context_ratio(points, rule)),
        "pooled_recall_after_1st_same_transcripts": _round(_ratio(firsts, rule)),
    }


def _decay(after: dict[str, dict[str, Any]], n: int = 10) -> dict[str, float | None]:
    """Pooled recall after the ``n``-th compression ÷ after the 1st: over all transcripts
    (``all_transcripts``: each figure over the runs that reached it, as ``benchmarks/
    bench_eval.py`` reports it) and over only the runs that reached the ``n``-th
    (``same_transcripts``: like for like).  From the rounded figures of ``after``."""
    nth, first = after[str(n)], after["1"]
    at_n, at_1 = nth["pooled_recall"], first["pooled_recall"]
    same = nth["pooled_recall_after_1st_same_transcripts"]
    return {
        "all_transcripts": _round(at_n / at_1) if at_n is not None and at_1 else None,
        "same_transcripts": _round(at_n / same) if at_n is not None and same else None,
    }


def summarise_runs(runs: Sequence[EvalRun]) -> dict[str, dict[str, Any]]:
    """Per engine set, over all transcripts: median and mean of the per-transcript recall
    (transcripts without a compression point that needs anything are left out), the pooled
    recall (all needed artifacts of all transcripts together), the same for in-context
    recall, precision and recall per 1,000 tokens, recall after the 1st/5th/10th/25th
    compression and the 10th ÷ 1st ratio, mean tokens per model call, and totals.  The
    ``…_agent`` keys give recall, in-context recall, recall after the n-th compression and
    the ratio under the agent rule ("needed later" = named again by a later assistant
    message)."""
    out: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(r.engines for r in runs):
        mine = [r for r in runs if r.engines == label]
        recalls = [r.recall for r in mine if r.recall is not None]
        calls = [t for r in mine for t in r.tokens_per_call]
        points = [p for r in mine for p in r.points]
        out[label] = {
            "transcripts": len(mine),
            "transcripts_with_recall": len(recalls),
            "median_needed_later_recall": round(statistics.median(recalls), 4) if recalls else None,
            "mean_needed_later_recall": round(statistics.fmean(recalls), 4) if recalls else None,
            "pooled_needed_later_recall": _round(_ratio(points)),
            "median_in_context_recall": _median(r.in_context_recall for r in mine),
            "pooled_in_context_recall": _round(_in_context_ratio(points)),
            "median_precision": _median(r.precision for r in mine),
            "pooled_precision": _round(_precision(points)),
            "median_recall_per_1k_tokens": _median(r.recall_per_1k_tokens for r in mine),
            "pooled_recall_per_1k_tokens": _round(_per_1k(points)),
            "recall_after_compression": (after := {
                str(n): _after_nth(mine, n) for n in AFTER_NTH
            }),
            "recall_10th_over_1st": _decay(after),
            "transcripts_with_recall_agent": sum(r.recall_agent is not None for r in mine),
            "median_needed_later_recall_agent": _median(r.recall_agent for r in mine),
            "pooled_needed_later_recall_agent": _round(_ratio(points, "agent")),
            "median_in_context_recall_agent": _median(r.in_context_recall_agent for r in mine),
            "pooled_in_context_recall_agent": _round(_in_context_ratio(points, "agent")),
            "recall_after_compression_agent": (after_agent := {
                str(n): _after_nth(mine, n, "agent") for n in AFTER_NTH
            }),
            "recall_10th_over_1st_agent": _decay(after_agent),
            "model_calls": sum(r.model_calls for r in mine),
            "mean_tokens_per_call": round(statistics.fmean(calls), 1) if calls else 0.0,
            "mean_tokens_per_turn": (
                round(sum(calls) / turns, 1) if (turns := sum(r.turns for r in mine)) else 0.0
            ),
            "total_tokens_sent": sum(calls),
            "aux_llm_calls": sum(r.aux_llm_calls for r in mine),
            "compressions": sum(r.compressions for r in mine),
            "invariant_violations": sum(r.invariant_violations for r in mine),
            "requests_over_budget": sum(r.requests_over_budget for r in mine),
            "median_share_freed": _median(f for r in mine for f in r.shares_freed),
            "cost": _pooled_cost(mine),
        }
    return out


_COST_SUMS = ("model_calls", "request_tokens", "cached_tokens", "summary_requests",
              "summary_input_tokens", "summary_cached_tokens", "summary_output_tokens",
              "calls_cost", "summary_cost", "input_side_cost")


def _pooled_cost(runs: Sequence[EvalRun]) -> dict[str, Any]:
    """The runs' cost figures summed; ``cache_hit_rate`` pooled; ``uncompressed`` over the
    runs whose whole session fits the request budget, beside their compressed cost."""
    costed = [r.cost for r in runs if r.cost]
    out: dict[str, Any] = {key: round(sum(c[key] for c in costed), 1) for key in _COST_SUMS}
    out["cache_hit_rate"] = (
        round(out["cached_tokens"] / out["request_tokens"], 4) if out["request_tokens"] else None
    )
    fitting = [c for c in costed if c.get("uncompressed", {}).get("fits")]
    out["sessions_that_fit"] = len(fitting)
    out["fitting_calls_cost"] = round(sum(c["calls_cost"] for c in fitting), 1)
    out["fitting_input_side_cost"] = round(sum(c["input_side_cost"] for c in fitting), 1)
    out["fitting_uncompressed_cost"] = round(
        sum(c["uncompressed"]["calls_cost"] for c in fitting), 1
    )
    return out
