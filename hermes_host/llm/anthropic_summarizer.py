"""The Anthropic summariser: one Messages API call per summary, on the real ``anthropic`` SDK.

Configuration (R-14.7): the key comes from the constructor or ``ANTHROPIC_API_KEY``; the
endpoint from ``summarizer.base_url`` in config, else ``ANTHROPIC_BASE_URL``, else the SDK's
default.  ``max_retries`` defaults to 0 because retrying is the *host's* decision (cooldown,
R-5.1): an SDK retry loop inside a fenced call would only eat the hook's time budget.

``summarizer.temperature`` is not sent: the SDK (≥ 1.0) removed sampling parameters from
``messages.create`` and API version 2026-10-21 rejects them with a 400.

Failure classes (R-10.3):

* transient (:class:`TransientSummaryError`, starts a cooldown): 429, 5xx, 529 overloaded,
  timeouts, connection failures, a 200 whose body is not valid JSON, and an **empty** summary
  (a blank text would replace the middle with nothing; treating it as transient keeps the
  original messages and lets a later attempt succeed);
* permanent (:class:`PermanentSummaryError`, never retried): 401, 402, 403, any other 4xx
  that retrying cannot fix, and any error whose body says the credit balance, billing or
  quota is exhausted (Anthropic sends that as a 400).

Error messages carry only the HTTP status and the API's error *type*
(``anthropic: HTTP 429 rate_limit_error``) — never the key, the headers, the prompt or the
server's free-text message.  The prompt is redacted again just before it is sent and the
reply is redacted before it is returned (defence in depth, R-7.1).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import anthropic

from hermes_host.llm.base import (
    PermanentSummaryError,
    SummaryError,
    SummaryJob,
    TransientSummaryError,
)
from hermes_host.models import SummarizerSettings
from hermes_host.redact import redact

__all__ = ["API_KEY_ENV", "BASE_URL_ENV", "AnthropicSummarizer", "MissingAPIKeyError"]

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"

_EXHAUSTED_WORDS = ("credit balance", "credits", "billing", "quota", "insufficient funds",
                    "purchase credits", "spend limit", "usage limit")
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


class MissingAPIKeyError(PermanentSummaryError):
    """``provider: anthropic`` was chosen but no API key is available."""

    def __init__(self) -> None:
        super().__init__(
            f"the Anthropic summariser needs an API key: set {API_KEY_ENV} "
            "(or choose summarizer.provider: offline / auto)"
        )


def _error(cls: type[SummaryError], message: str, *, status: int | None = None,
           error_type: str | None = None) -> SummaryError:
    err = cls(message)
    err.status_code = status
    err.error_type = error_type
    return err


def _body_says_exhausted(body: object) -> bool:
    text = ""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            text = f"{inner.get('type', '')} {inner.get('message', '')}"
        else:
            text = str(body.get("message", ""))
    elif isinstance(body, str):
        text = body
    text = text.lower()
    return any(word in text for word in _EXHAUSTED_WORDS)


def classify_status_error(exc: anthropic.APIStatusError) -> SummaryError:
    """Map an SDK status error to our transient/permanent classes (R-10.3)."""
    status = int(exc.status_code)
    etype = getattr(exc, "type", None)
    if not isinstance(etype, str) or not etype.replace("_", "").isalnum():
        etype = None
    label = f"anthropic: HTTP {status}" + (f" {etype}" if etype else "")
    if _body_says_exhausted(exc.body) or status == 402 or etype == "billing_error":
        return _error(PermanentSummaryError, f"{label} (credit, billing or quota exhausted)",
                      status=status, error_type=etype)
    if status in (401, 403):
        return _error(PermanentSummaryError, label, status=status, error_type=etype)
    if status >= 500 or status in _TRANSIENT_STATUSES:
        return _error(TransientSummaryError, label, status=status, error_type=etype)
    return _error(PermanentSummaryError, label, status=status, error_type=etype)


class AnthropicSummarizer:
    """Writes summaries with the Anthropic Messages API (``name="anthropic"``)."""

    name = "anthropic"
    calls_llm = True

    def __init__(self, settings: SummarizerSettings | None = None,
                 api_key: str | None = None) -> None:
        self.settings = settings or SummarizerSettings()
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key:
            raise MissingAPIKeyError()
        self._api_key = key
        self.base_url = self.settings.base_url or os.environ.get(BASE_URL_ENV) or None
        self._client: anthropic.Anthropic | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicSummarizer(model={self.settings.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> anthropic.Anthropic:
        with self._client_lock:
            if self._client is None:
                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.settings.timeout_seconds,
                    max_retries=self.settings.max_retries,
                )
            return self._client

    def request_params(self, job: SummaryJob) -> dict[str, Any]:
        """The Messages API parameters for ``job`` (already redacted)."""
        params: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": max(1, min(job.max_tokens, self.settings.max_tokens)),
            "messages": [{"role": "user", "content": redact(job.prompt)}],
        }
        if job.system:
            params["system"] = redact(job.system)
        return params

    def close(self) -> None:
        """Close the SDK client's connection pool (a later call opens a new one)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def summarize(self, job: SummaryJob) -> str:
        params = self.request_params(job)
        try:
            response = self._get_client().messages.create(**params)
        except anthropic.APITimeoutError:
            raise _error(TransientSummaryError, "anthropic: request timed out "
                         f"after {self.settings.timeout_seconds:g}s (APITimeoutError)") from None
        except anthropic.APIConnectionError:
            raise _error(TransientSummaryError,
                         "anthropic: connection failed (APIConnectionError)") from None
        except anthropic.APIStatusError as exc:
            raise classify_status_error(exc) from None
        except anthropic.APIResponseValidationError:
            raise _error(TransientSummaryError,
                         "anthropic: malformed response (APIResponseValidationError)") from None
        except ValueError as exc:  # json.JSONDecodeError from a 200 with a broken body
            raise _error(TransientSummaryError,
                         f"anthropic: malformed response ({type(exc).__name__})") from None
        except anthropic.AnthropicError as exc:
            raise _error(TransientSummaryError,
                         f"anthropic: request failed ({type(exc).__name__})") from None
        try:
            blocks = list(response.content or [])
        except (AttributeError, TypeError):
            raise _error(TransientSummaryError, "anthropic: malformed response (no content)") \
                from None
        text = "".join(
            getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text"
        )
        if not text.strip():
            raise _error(TransientSummaryError, "anthropic: empty summary text")
        return redact(text.strip())
