"""Micro-compaction (R-11.2): a rolling summary merged one exchange at a time.

Enabled by ``compression.micro_compact: true`` (off by default).  It runs *inside*
``compress`` in place of the single batch summary call: the middle is split into exchanges
(a user turn and what answered it; in sessions without user turns, an assistant step and its
tool results), at most ``micro_max_exchanges`` of them (older ones are coalesced), and the
rolling summary — seeded with the previous summary — is updated by one auxiliary LLM call per
exchange with ``max_tokens = min(1500, max_summary_tokens)`` and ``temperature = 0.1``.

Each call keeps the structure, drops resolved detail, appends decisions, paths and open
questions, and redacts credentials.  A failed call ends the micro pass (the engine then writes
the batch summary instead, with the usual failure semantics); three consecutive failures in a
session trip a breaker and micro-compaction is skipped for that session from then on.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

from hermes_host.llm.base import Summarizer, SummaryJob
from hermes_host.models import Message
from hermes_host.redact import redact, redact_messages

from hermes_compressor.prompt import PREAMBLE, SECTIONS, render_turns

__all__ = [
    "MICRO_MAX_TOKENS",
    "MICRO_TEMPERATURE",
    "MicroBreaker",
    "micro_summarize",
    "split_exchanges",
]

MICRO_MAX_TOKENS = 1500
MICRO_TEMPERATURE = 0.1

_MICRO_RULES = (
    "You maintain a ROLLING SUMMARY of a conversation, merged one exchange at a time. Update "
    "the rolling summary with the NEW EXCHANGE below: keep its structure and section "
    "headings, drop detail that is resolved, append new decisions, file paths, commands, "
    "results and open questions, and replace any credential with [REDACTED]. Output only the "
    "updated rolling summary."
)


def split_exchanges(messages: Sequence[Message], limit: int) -> list[list[Message]]:
    """Exchanges of ``messages`` (see the module docstring), at most ``limit`` of them."""
    starts_user = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if len(starts_user) >= 2:
        starts = starts_user
    else:
        starts = [i for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(messages)]
    groups = [list(messages[a:b]) for a, b in itertools.pairwise(bounds) if b > a]
    if len(groups) > limit:  # coalesce the oldest exchanges into the first one
        k = len(groups) - limit + 1
        groups = [[m for g in groups[:k] for m in g], *groups[k:]]
    return groups


class MicroBreaker:
    """Consecutive micro-compaction failures per session; trips at ``limit``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, session_id: str) -> bool:
        with self._lock:
            return self._failures.get(session_id, 0) >= self._limit

    def record(self, session_id: str, ok: bool) -> None:
        with self._lock:
            self._failures[session_id] = 0 if ok else self._failures.get(session_id, 0) + 1


def micro_summarize(
    summarizer: Summarizer,
    middle: Sequence[Message],
    *,
    previous_summary: str | None,
    max_summary_tokens: int,
    max_exchanges: int,
    max_turn_chars: int,
    make_job: Callable[[str, list[Message], str | None, int], SummaryJob],
) -> str:
    """Fold ``middle`` into the rolling summary and return it.

    Raises whatever the summariser raises on the first failed exchange.
    """
    budget = min(MICRO_MAX_TOKENS, max_summary_tokens)
    rolling = redact(previous_summary) if previous_summary else None
    skeleton = "\n".join(title for title, _ in SECTIONS)
    for exchange in split_exchanges(list(middle), max_exchanges):
        clean = redact_messages(exchange)
        prompt = redact(
            f"{PREAMBLE}\n\n{_MICRO_RULES}\n\nSections (keep this order):\n{skeleton}\n\n"
            f"ROLLING SUMMARY:\n{rolling or '(empty — this is the first exchange)'}\n\n"
            "NEW EXCHANGE:\n"
            f"{render_turns(clean, max_turn_chars=max_turn_chars, max_total=60_000)}\n\n"
            f"Target ~{budget} tokens."
        )
        text = summarizer.summarize(make_job(prompt, clean, rolling, budget))
        if not text or not text.strip():
            raise ValueError("empty micro-compaction summary")
        rolling = text
    return rolling or ""
