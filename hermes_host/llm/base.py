"""The auxiliary LLM's contract: what a summariser receives, returns and raises.

Engines build a :class:`SummaryJob` and call :meth:`Summarizer.summarize`.  The job carries
both the rendered ``prompt`` (for an LLM) and the structured, already-redacted ``messages``
(for the offline extractive summariser, which reads structure rather than prose).

Failures are classified per R-10.3 so the engine (and through its result, the host) can
react: :class:`TransientSummaryError` (429, 5xx, 529, timeout, network) starts a cooldown;
:class:`PermanentSummaryError` (401, 402, 403, quota/billing) is never retried.
Error messages never contain request bodies, headers or keys.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hermes_host.models import Message

__all__ = [
    "SUMMARY_SECTIONS",
    "PermanentSummaryError",
    "Summarizer",
    "SummaryError",
    "SummaryJob",
    "TransientSummaryError",
]


SUMMARY_SECTIONS: tuple[str, ...] = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Relevant Files",
    "Critical Context",
    "Pruned Skills",
)
"""The eleven sections of a summary, in order (R-7.2); each is a ``## <name>`` heading.

Summarisers write them, engines check them: this tuple is the one definition both use."""


@dataclass
class SummaryJob:
    """Everything a summariser may use.  Every text field is already redacted."""

    prompt: str
    """The full rendered summarisation prompt (preamble, sections, source turns)."""
    messages: list[Message]
    """The middle being summarised (new turns only on an update round)."""
    previous_summary: str | None = None
    """The body of the previous summary on the 2nd+ compression (R-6.6)."""
    focus_topic: str | None = None
    memory_context: str | None = None
    today: _dt.date | None = None
    budget_tokens: int = 2000
    """Target size of the summary (``Target ~{budget_tokens} tokens``)."""
    max_tokens: int = 4096
    """Hard cap on the reply length."""
    system: str | None = None
    """Optional system prompt for an LLM summariser."""
    metadata: dict[str, str] = field(default_factory=dict)


class SummaryError(Exception):
    """The summariser could not produce a summary.  ``str()`` is safe to log."""

    transient: bool = False
    status_code: int | None = None
    """The provider's HTTP status when there was one (e.g. 429), else ``None``."""
    error_type: str | None = None
    """The provider's error type when there was one (e.g. ``"rate_limit_error"``)."""


class TransientSummaryError(SummaryError):
    """429 / 5xx / 529 / timeout / network: worth retrying after a cooldown (R-5.1)."""

    transient = True


class PermanentSummaryError(SummaryError):
    """401 / 402 / 403 / quota exhausted: retrying cannot help (R-10.3)."""


@runtime_checkable
class Summarizer(Protocol):
    """Writes the structured summary for a :class:`SummaryJob`."""

    name: str
    """``"anthropic"`` or ``"offline"`` (shown in reports)."""
    calls_llm: bool
    """Whether :meth:`summarize` makes a network LLM call (counted as ``llm_calls``)."""

    def summarize(self, job: SummaryJob) -> str:
        """Return the summary markdown (the eleven sections, without SUMMARY_PREFIX).

        Raise :class:`TransientSummaryError` or :class:`PermanentSummaryError` on failure.
        """
        ...
