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
import email.utils as _email_utils
import time as _time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hermes_host.models import Message

__all__ = [
    "MAX_RETRY_AFTER_SECONDS",
    "SUMMARY_SECTIONS",
    "MissingAPIKeyError",
    "PermanentSummaryError",
    "Summarizer",
    "SummaryError",
    "SummaryJob",
    "TransientSummaryError",
    "classify_status",
    "retry_after_seconds",
    "shown_url",
    "summary_error",
    "url_of_request",
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
    """The middle being summarised (new turns only on an update round), redacted.  Read it,
    do not change it: a message with nothing to redact is the engine's own object."""
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
    prefix: list[Message] | None = None
    """``summarizer.continuation``: the chat model's own request — the session window as it
    was sent, system prompt included, wire-ready — to send again with :attr:`instruction`
    appended, so that a prompt-caching provider bills it as a cache read.  When set (and
    :attr:`instruction` too) an LLM summariser sends ``prefix + [instruction]`` instead of
    :attr:`prompt`; the prefix goes out as the chat sent it (it is the same text the provider
    already holds), the instruction redacted."""
    instruction: str | None = None
    """The user message appended to :attr:`prefix`: which messages above to summarise, the
    sections, the target size (``build_continuation_instruction`` of the compressor)."""

    @property
    def continuation(self) -> bool:
        """Whether the job is sent as a continuation of the chat request."""
        return bool(self.prefix) and bool(self.instruction)


class SummaryError(Exception):
    """The summariser could not produce a summary.  ``str()`` is safe to log."""

    transient: bool = False
    status_code: int | None = None
    """The provider's HTTP status when there was one (e.g. 429), else ``None``."""
    error_type: str | None = None
    """The provider's error type when there was one (e.g. ``"rate_limit_error"``)."""
    retry_after: float | None = None
    """Seconds the provider asked us to wait (its ``retry-after-ms`` / ``retry-after``
    header), at most :data:`MAX_RETRY_AFTER_SECONDS`; ``None`` when it did not say."""


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


MAX_RETRY_AFTER_SECONDS = 3600.0
"""The longest wait a provider's ``retry-after`` can impose (an hour): a larger or broken
value must not switch compression off for days."""


def retry_after_seconds(headers: object, *, now: float | None = None) -> float | None:
    """The wait a ``429``/``503`` answer asks for, in seconds, from its headers.

    ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic) wins over
    ``retry-after`` (seconds, or an HTTP date, RFC 9110 §10.2.3).  The result is clamped to
    ``0 … MAX_RETRY_AFTER_SECONDS``; a missing, negative-only or unparsable value is ``None``.
    ``headers`` is any mapping with ``get`` (``httpx.Headers`` is case-insensitive)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    value: float | None = None
    ms = get("retry-after-ms")
    if ms is not None:
        try:
            value = float(str(ms).strip()) / 1000.0
        except ValueError:
            value = None
    if value is None:
        raw = get("retry-after")
        if raw is None:
            return None
        text = str(raw).strip()
        try:
            value = float(text)
        except ValueError:
            try:
                when = _email_utils.parsedate_to_datetime(text)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=_dt.UTC)
            value = when.timestamp() - (_time.time() if now is None else now)
    if value != value:  # NaN
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER_SECONDS)


def summary_error(cls: type[SummaryError], message: str, *, status: int | None = None,
                  error_type: str | None = None, headers: object = None) -> SummaryError:
    """An instance of ``cls`` carrying the HTTP status, the API's error type and the wait
    the provider asked for (from ``headers``, see :func:`retry_after_seconds`)."""
    err = cls(message)
    err.status_code = status
    err.error_type = error_type
    err.retry_after = retry_after_seconds(headers)
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


def classify_status(provider: str, status: int, error_type: object, body: object,
                    headers: object = None) -> SummaryError:
    """An HTTP error answer → :class:`TransientSummaryError` or :class:`PermanentSummaryError`.

    Permanent: credit, billing or quota exhausted (whatever the status: Anthropic sends a 400,
    OpenAI a 429 ``insufficient_quota``), 401, 402, 403, and any other 4xx retrying cannot
    fix (400 bad request, 404 unknown model…).  Transient: 408, 409, 425, 429 and every 5xx.
    The message is ``"<provider>: HTTP <status> [<type>]"``: never a body, header or key.
    A transient error carries the provider's ``retry-after`` as ``retry_after``.
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
        return summary_error(TransientSummaryError, label, status=status, error_type=etype,
                             headers=headers)
    return summary_error(PermanentSummaryError, label, status=status, error_type=etype)


def shown_url(url: object) -> str:
    """``url`` safe to print in an error: scheme, host, port and path only — no user or
    password, no query or fragment (a key may ride in any of them) — and a key-shaped path
    segment redacted."""
    from urllib.parse import urlsplit, urlunsplit

    from hermes_host.redact import redact

    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    return redact(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


def url_of_request(exc: BaseException) -> str:
    """`` to URL`` — the URL an SDK's connection or timeout error was about, as
    :func:`shown_url` shows it — or ``""`` when the error carries no request."""
    url = getattr(getattr(exc, "request", None), "url", None)
    return f" to {shown_url(url)}" if url else ""
