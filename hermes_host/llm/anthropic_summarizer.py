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
from typing import TYPE_CHECKING, Any

from hermes_host.llm.base import (
    MissingAPIKeyError,
    SummaryError,
    SummaryJob,
    TransientSummaryError,
    classify_status,
    summary_error,
    url_of_request,
)
from hermes_host.messages import sanitize_for_wire
from hermes_host.models import SummarizerSettings
from hermes_host.redact import redact

if TYPE_CHECKING:  # the SDK is imported when a summary is asked for, not before
    import anthropic

__all__ = ["API_KEY_ENV", "BASE_URL_ENV", "AnthropicSummarizer", "MissingAPIKeyError"]

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"

_error = summary_error


def classify_status_error(exc: anthropic.APIStatusError) -> SummaryError:
    """Map an SDK status error to our transient/permanent classes (R-10.3)."""
    return classify_status("anthropic", int(exc.status_code), getattr(exc, "type", None),
                           exc.body, getattr(exc.response, "headers", None))


class AnthropicSummarizer:
    """Writes summaries with the Anthropic Messages API (``name="anthropic"``)."""

    name = "anthropic"
    calls_llm = True

    def __init__(self, settings: SummarizerSettings | None = None,
                 api_key: str | None = None) -> None:
        self.settings = settings or SummarizerSettings()
        variable = self.settings.api_key_env or API_KEY_ENV
        key = api_key if api_key is not None else os.environ.get(variable)
        if not key:
            raise MissingAPIKeyError("anthropic", variable)
        self._api_key = key
        self.base_url = self.settings.base_url or os.environ.get(BASE_URL_ENV) or None
        self._client: anthropic.Anthropic | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicSummarizer(model={self.settings.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> anthropic.Anthropic:
        import anthropic

        with self._client_lock:
            if self._client is None:
                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.settings.timeout_seconds,
                    max_retries=self.settings.max_retries,
                    default_headers=dict(self.settings.headers) or None,
                )
            return self._client

    def request_params(self, job: SummaryJob) -> dict[str, Any]:
        """The Messages API parameters for ``job`` (already redacted).

        A continuation job (``summarizer.continuation``) is sent as the chat sends its own
        requests (:func:`hermes_host.llm.anthropic_wire.to_anthropic`: system messages as
        ``system``, tool calls and results as text, strict alternation), the instruction as
        the last user turn; the prefix is not redacted again, so that it stays the bytes the
        provider already holds."""
        params: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": max(1, min(job.max_tokens, self.settings.max_tokens)),
        }
        if job.continuation:
            from hermes_host.llm.anthropic_wire import to_anthropic

            assert job.prefix is not None and job.instruction is not None
            system, messages = to_anthropic(
                [*sanitize_for_wire(job.prefix),
                 {"role": "user", "content": redact(job.instruction)}]
            )
            params["messages"] = messages
            if system:
                params["system"] = system
            return params
        params["messages"] = [{"role": "user", "content": redact(job.prompt)}]
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
        import anthropic

        params = self.request_params(job)
        try:
            response = self._get_client().messages.create(**params)
        except anthropic.APITimeoutError as exc:
            raise _error(TransientSummaryError, f"anthropic: request{url_of_request(exc)} "
                         f"timed out after {self.settings.timeout_seconds:g}s "
                         "(APITimeoutError)") from None
        except anthropic.APIConnectionError as exc:
            raise _error(TransientSummaryError, "anthropic: connection failed"
                         f"{url_of_request(exc)} (APIConnectionError)") from None
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
