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
    "MissingAPIKeyError",
    "PermanentSummaryError",
    "Summarizer",
    "SummaryError",
    "SummaryJob",
    "TransientSummaryError",
    "classify_status",
    "summary_error",
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


class MissingAPIKeyError(PermanentSummaryError):
    """A provider that needs an API key was chosen, but the variable naming it is unset.

    The message names the *variable* to set, never a value."""

    def __init__(self, provider: str = "anthropic", variable: str = "ANTHROPIC_API_KEY") -> None:
        label = {"anthropic": "Anthropic", "openai": "OpenAI"}.get(provider, provider)
        super().__init__(
            f"the {label} summariser needs an API key: set {variable} "
            "(or choose summarizer.provider: offline / auto)"
        )
        self.provider = provider
        self.variable = variable


# -- the failure classes every network provider shares (R-10.3) ---------------------------

_EXHAUSTED_WORDS = ("credit balance", "credits", "billing", "quota", "insufficient funds",
                    "purchase credits", "spend limit", "usage limit", "insufficient_quota")
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


def summary_error(cls: type[SummaryError], message: str, *, status: int | None = None,
                  error_type: str | None = None) -> SummaryError:
    """An instance of ``cls`` carrying the HTTP status and the API's error type."""
    err = cls(message)
    err.status_code = status
    err.error_type = error_type
    return err


def _body_says_exhausted(body: object) -> bool:
    text = ""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            text = f"{inner.get('type', '')} {inner.get('code', '')} {inner.get('message', '')}"
        else:
            text = f"{body.get('type', '')} {body.get('code', '')} {body.get('message', '')}"
    elif isinstance(body, str):
        text = body
    text = text.lower()
    return any(word in text for word in _EXHAUSTED_WORDS)


def classify_status(provider: str, status: int, error_type: object, body: object) -> SummaryError:
    """An HTTP error answer → :class:`TransientSummaryError` or :class:`PermanentSummaryError`.

    Permanent: credit, billing or quota exhausted (whatever the status: Anthropic sends a 400,
    OpenAI a 429 ``insufficient_quota``), 401, 402, 403, and any other 4xx retrying cannot
    fix (400 bad request, 404 unknown model…).  Transient: 408, 409, 425, 429 and every 5xx.
    The message is ``"<provider>: HTTP <status> [<type>]"``: never a body, header or key.
    """
    etype = error_type if isinstance(error_type, str) else None
    if etype is not None and not etype.replace("_", "").isalnum():
        etype = None
    label = f"{provider}: HTTP {status}" + (f" {etype}" if etype else "")
    if _body_says_exhausted(body) or status == 402 or etype in ("billing_error",
                                                              "insufficient_quota"):
        return summary_error(PermanentSummaryError,
                             f"{label} (credit, billing or quota exhausted)",
                             status=status, error_type=etype)
    if status >= 500 or status in _TRANSIENT_STATUSES:
        return summary_error(TransientSummaryError, label, status=status, error_type=etype)
    return summary_error(PermanentSummaryError, label, status=status, error_type=etype)
