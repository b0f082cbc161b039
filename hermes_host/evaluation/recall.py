"""Needed-later recall at each compression point: of the artifacts seen before the point
and used again after it, the share the next request shows (in context, per 1,000 tokens,
with precision), and the ratios pooled over points.

Two rules say what "used again" means, reported side by side: ``"any"`` (the original
rule, the old keys) counts any later occurrence, a tool output or user message included;
``"agent"`` ("the agent names it again") counts only a later assistant message naming it
in its own text or tool-call arguments (:func:`~hermes_host.evaluation.artifacts.agent_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_host.evaluation.artifacts import (
    _in_context,
    _visible,
    agent_text,
    extract_artifacts,
    message_text,
)
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
    needed_agent: int = 0
    """Artifacts of the messages before the point that a later assistant message names again
    in its own text or tool-call arguments (system prompt's out): the "agent" rule."""
    visible_agent: int = 0
    """Of ``needed_agent``, those occurring anywhere in the request."""
    in_context_agent: int = 0
    """Of ``needed_agent``, those occurring in the request at least once outside a bare list."""

    @property
    def recall(self) -> float | None:
        return self.visible / self.needed if self.needed else None

    @property
    def in_context_recall(self) -> float | None:
        return self.in_context / self.needed if self.needed else None

    @property
    def recall_agent(self) -> float | None:
        """Needed-later recall under the agent rule."""
        return self.visible_agent / self.needed_agent if self.needed_agent else None

    @property
    def in_context_recall_agent(self) -> float | None:
        """In-context recall under the agent rule."""
        return self.in_context_agent / self.needed_agent if self.needed_agent else None

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
            "needed_agent": self.needed_agent,
            "visible_agent": self.visible_agent,
            "recall_agent": _round(self.recall_agent),
            "in_context_agent": self.in_context_agent,
            "in_context_recall_agent": _round(self.in_context_recall_agent),
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
    prompt's out) that occur in ``request``; tokens = the request's tokens.  needed_agent,
    visible_agent, in_context_agent: the same under the agent rule — an artifact of
    ``messages[:point]`` is needed only if an assistant message of ``messages[point:]``
    names it in its content or tool-call arguments (:func:`agent_text`).
    """
    pairs = list(points)
    sets = needed_later_sets(messages, [p for p, _ in pairs], system_prompt=system_prompt)
    results: list[PointRecall] = []
    for (point, request), (before, needed, needed_agent) in zip(pairs, sets, strict=True):
        point = max(0, min(point, len(messages)))
        text = "\n".join(message_text(m) for m in request)
        listed = _visible(before, text)
        visible = listed & needed
        visible_agent = listed & needed_agent
        in_context = _in_context(visible | visible_agent, text)
        missing = sorted(needed - visible)[:examples]
        results.append(PointRecall(
            point, point, len(needed), len(visible), missing,
            in_context=len(in_context & visible),
            listed=len(listed),
            tokens=count_messages(request),
            needed_agent=len(needed_agent),
            visible_agent=len(visible_agent),
            in_context_agent=len(in_context & visible_agent),
        ))
    return results


def needed_later_sets(
    messages: Sequence[Message], points: Iterable[int], *, system_prompt: str = ""
) -> list[tuple[set[str], set[str], set[str]]]:
    """For each point (messages before it, clamped to ``[0, len(messages)]``):
    ``(history, needed, needed_agent)`` — the artifacts of ``messages[:point]`` minus the
    system prompt's; those of them occurring again anywhere in ``messages[point:]`` (the
    "any" rule); and those of them that an assistant message of ``messages[point:]`` names
    in its content or tool-call arguments (the "agent" rule, :func:`agent_text`).

    The agent-rule set is computed on its own, not cut out of ``needed``: that it is a
    subset is checked by the tests on the real transcripts, not assumed."""
    # Artifacts come from the redacted text: a secret is not a fact a summary should keep
    # (it is redacted from it, R-7.1), and the report lists missing ones by name.
    per_message = [extract_artifacts(redact(message_text(m))) for m in messages]
    per_agent = [extract_artifacts(redact(t)) if (t := agent_text(m)) else set()
                 for m in messages]
    fixed = extract_artifacts(system_prompt)
    suffix = _suffix_unions(per_message)
    agent_suffix = _suffix_unions(per_agent)
    out: list[tuple[set[str], set[str], set[str]]] = []
    for point in points:
        point = max(0, min(point, len(per_message)))
        before: set[str] = set().union(*per_message[:point]) - fixed if point else set()
        out.append((before, before & suffix[point], before & agent_suffix[point]))
    return out


def _suffix_unions(per_message: Sequence[set[str]]) -> list[set[str]]:
    """``out[i]`` = the union of ``per_message[i:]`` (``out[len]`` is empty)."""
    suffix: list[set[str]] = [set() for _ in range(len(per_message) + 1)]
    for i in range(len(per_message) - 1, -1, -1):
        suffix[i] = suffix[i + 1] | per_message[i]
    return suffix


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


Rule = Literal["any", "agent"]
"""What makes an artifact needed later: ``"any"`` later occurrence, or the ``"agent"`` naming
it again in a later assistant message."""


def _counts(point: PointRecall, rule: Rule) -> tuple[int, int, int]:
    """``(needed, visible, in_context)`` of ``point`` under ``rule``."""
    if rule == "agent":
        return point.needed_agent, point.visible_agent, point.in_context_agent
    return point.needed, point.visible, point.in_context


def _ratio(points: Sequence[PointRecall], rule: Rule = "any") -> float | None:
    counts = [_counts(p, rule) for p in points]
    needed = sum(c[0] for c in counts)
    return sum(c[1] for c in counts) / needed if needed else None


def _in_context_ratio(points: Sequence[PointRecall], rule: Rule = "any") -> float | None:
    counts = [_counts(p, rule) for p in points]
    needed = sum(c[0] for c in counts)
    return sum(c[2] for c in counts) / needed if needed else None


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


def _nth(points: Sequence[PointRecall], n: int, rule: Rule = "any") -> PointRecall | None:
    """The point of the ``n``-th committed compression (1-based), if it needs anything under
    ``rule``."""
    if len(points) < n:
        return None
    point = points[n - 1]
    return point if _counts(point, rule)[0] else None
