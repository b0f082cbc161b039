"""Needed-later recall at each compression point: of the artifacts seen before the point
and used again after it, the share the next request shows (in context, per 1,000 tokens,
with precision), and the ratios pooled over points."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.evaluation.artifacts import _in_context, _visible, extract_artifacts, message_text
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.tokens import count_messages


@dataclass
class PointRecall:
    """Needed-later recall, precision and size of the request at one compression point."""

    point: int
    """Messages of the transcript (system prompt excluded) added before the compression."""
    request_at: int
    """Messages added when the request right after the compression was built."""
    needed: int
    """Artifacts of the messages before the point used again after it (system prompt's out)."""
    visible: int
    """Needed artifacts occurring anywhere in the request."""
    missing_examples: list[str] = field(default_factory=list)
    in_context: int = 0
    """Needed artifacts occurring in the request at least once outside a bare list."""
    listed: int = 0
    """History artifacts (of the messages before the point, system prompt's out) occurring
    anywhere in the request, needed later or not."""
    tokens: int = 0
    """Tokens of the request."""

    @property
    def recall(self) -> float | None:
        return self.visible / self.needed if self.needed else None

    @property
    def in_context_recall(self) -> float | None:
        return self.in_context / self.needed if self.needed else None

    @property
    def precision(self) -> float | None:
        return self.visible / self.listed if self.listed else None

    @property
    def recall_per_1k_tokens(self) -> float | None:
        return _per_1k([self])

    def as_dict(self) -> dict[str, Any]:
        return {
            "point": self.point,
            "request_at": self.request_at,
            "needed": self.needed,
            "visible": self.visible,
            "recall": _round(self.recall),
            "missing_examples": self.missing_examples,
            "in_context": self.in_context,
            "in_context_recall": _round(self.in_context_recall),
            "listed": self.listed,
            "precision": _round(self.precision),
            "tokens": self.tokens,
            "recall_per_1k_tokens": _round(self.recall_per_1k_tokens),
        }


def needed_later_recall(
    messages: Sequence[Message],
    points: Iterable[tuple[int, Sequence[Message]]],
    *,
    system_prompt: str = "",
    examples: int = 5,
) -> list[PointRecall]:
    """Recall at each ``(point, request)``: ``point`` messages of ``messages`` came before
    the compression; ``request`` is the message list the model received right after it.

    needed = artifacts of ``messages[:point]`` that occur again in ``messages[point:]``,
    minus the system prompt's; visible = those that occur in ``request``; in_context = those
    that occur there outside a bare list; listed = artifacts of ``messages[:point]`` (system
    prompt's out) that occur in ``request``; tokens = the request's tokens.
    """
    # Artifacts come from the redacted text: a secret is not a fact a summary should keep
    # (it is redacted from it, R-7.1), and the report lists missing ones by name.
    per_message = [extract_artifacts(redact(message_text(m))) for m in messages]
    fixed = extract_artifacts(system_prompt)
    suffix: list[set[str]] = [set() for _ in range(len(per_message) + 1)]
    for i in range(len(per_message) - 1, -1, -1):
        suffix[i] = suffix[i + 1] | per_message[i]
    results: list[PointRecall] = []
    for point, request in points:
        point = max(0, min(point, len(per_message)))
        before: set[str] = set().union(*per_message[:point]) - fixed if point else set()
        needed = before & suffix[point]
        text = "\n".join(message_text(m) for m in request)
        listed = _visible(before, text)
        visible = listed & needed
        missing = sorted(needed - visible)[:examples]
        results.append(PointRecall(
            point, point, len(needed), len(visible), missing,
            in_context=len(_in_context(visible, text)),
            listed=len(listed),
            tokens=count_messages(request),
        ))
    return results


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _ratio(points: Sequence[PointRecall]) -> float | None:
    needed = sum(p.needed for p in points)
    return sum(p.visible for p in points) / needed if needed else None


def _in_context_ratio(points: Sequence[PointRecall]) -> float | None:
    needed = sum(p.needed for p in points)
    return sum(p.in_context for p in points) / needed if needed else None


def _precision(points: Sequence[PointRecall]) -> float | None:
    listed = sum(p.listed for p in points)
    return sum(p.visible for p in points) / listed if listed else None


def _per_1k(points: Sequence[PointRecall]) -> float | None:
    """In-context recall of ``points`` (pooled) per 1,000 tokens of their mean request;
    points that need nothing are left out."""
    needy = [p for p in points if p.needed]
    recall = _in_context_ratio(needy)
    tokens = sum(p.tokens for p in needy) / len(needy) if needy else 0
    return None if recall is None or not tokens else recall * 1000 / tokens


AFTER_NTH = (1, 5, 10, 25)
"""The compressions after which recall is reported on its own (1st, 5th, 10th, 25th)."""


def _nth(points: Sequence[PointRecall], n: int) -> PointRecall | None:
    """The point of the ``n``-th committed compression (1-based), if it needs anything."""
    return points[n - 1] if len(points) >= n and points[n - 1].needed else None
