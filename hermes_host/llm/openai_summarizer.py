"""The OpenAI-compatible summariser: one Chat Completions call per summary, on the real
``openai`` SDK — OpenAI itself, OpenRouter, vLLM, Ollama, llama.cpp, LM Studio, Together…

Configuration (the ``summarizer:`` section, R-14.7): ``base_url`` (else ``OPENAI_BASE_URL``,
else the SDK's default ``https://api.openai.com/v1``), ``api_key_env`` — the *name* of the
variable holding the key (default ``OPENAI_API_KEY``) — ``model``, ``timeout_seconds``,
``max_retries`` (0: retrying is the host's decision, R-5.1) and ``headers``.  A local server
needs no key: with a ``base_url`` and the variable unset, a placeholder is sent.

``max_tokens`` (the smaller of the job's and the config's) and ``temperature`` are sent; for
the reasoning families that reject them (o1/o3/o4…, gpt-5) the cap goes as
``max_completion_tokens`` and the temperature is left out.

Failures are classified by :func:`hermes_host.llm.base.classify_status` exactly like the
Anthropic summariser's; in addition a reply cut off by the length limit
(``finish_reason: length``), an empty reply and a body that is not a chat completion are
transient failures, never a summary.  The SDK is imported on the first call, not before.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_host.llm.base import (
    MissingAPIKeyError,
    PermanentSummaryError,
    SummaryJob,
    TransientSummaryError,
    classify_status,
    summary_error,
    url_of_request,
)
from hermes_host.messages import sanitize_for_wire
from hermes_host.models import SummarizerSettings
from hermes_host.redact import redact

if TYPE_CHECKING:
    import openai

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "NO_KEY",
    "OpenAISummarizer",
    "completion_text",
    "is_reasoning_model",
    "resolve_key",
    "sdk_error",
]

API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
NO_KEY = "no-key-configured"
"""Sent to a ``base_url`` server when the key variable is unset (local servers need none)."""

_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """o1/o3/o4-mini…, gpt-5…: no ``temperature``, ``max_completion_tokens`` for the cap."""
    return bool(_REASONING.match(model))


def resolve_key(variable: str | None, base_url: str | None,
                environ: Mapping[str, str] | None = None) -> str:
    """The key from the variable named ``variable`` (default ``OPENAI_API_KEY``).

    Missing: :class:`MissingAPIKeyError` for the default endpoint, :data:`NO_KEY` when a
    ``base_url`` is configured (Ollama, vLLM and llama.cpp need no key)."""
    env = os.environ if environ is None else environ
    name = variable or API_KEY_ENV
    key = env.get(name)
    if key:
        return key
    if base_url:
        return NO_KEY
    raise MissingAPIKeyError("openai", name)


def sdk_error(exc: BaseException, timeout: float) -> TransientSummaryError | PermanentSummaryError:
    """Any exception of an SDK call → our failure classes; the message names only the status
    and the API's error type (never the key, headers, prompt or the server's text)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        err = summary_error(TransientSummaryError, f"openai: request{url_of_request(exc)} "
                            f"timed out after {timeout:g}s (APITimeoutError)")
    elif isinstance(exc, openai.APIConnectionError):
        err = summary_error(TransientSummaryError, "openai: connection failed"
                            f"{url_of_request(exc)} (APIConnectionError)")
    elif isinstance(exc, openai.APIStatusError):
        err = classify_status("openai", int(exc.status_code),
                              getattr(exc, "type", None) or getattr(exc, "code", None), exc.body,
                              getattr(exc.response, "headers", None))
    elif isinstance(exc, openai.APIResponseValidationError | ValueError | TypeError):
        err = summary_error(TransientSummaryError,
                            f"openai: malformed response ({type(exc).__name__})")
    else:
        err = summary_error(TransientSummaryError,
                            f"openai: request failed ({type(exc).__name__})")
    assert isinstance(err, TransientSummaryError | PermanentSummaryError)
    return err


def completion_text(response: Any, max_tokens: int) -> tuple[str, str | None]:
    """The reply text and finish reason of a chat completion.

    Raises :class:`TransientSummaryError` for a body without choices (a server that answered
    200 with something else), a reply cut off by the length limit, or an empty one."""
    try:
        choice = response.choices[0]
        text = choice.message.content
        finish = choice.finish_reason
    except (AttributeError, IndexError, TypeError):
        raise summary_error(TransientSummaryError,
                            "openai: malformed response (no choices)") from None
    if finish == "length":
        raise summary_error(TransientSummaryError,
                            f"openai: reply cut off at max_tokens={max_tokens} "
                            "(finish_reason=length)")
    if finish == "content_filter":
        raise summary_error(PermanentSummaryError,
                            "openai: reply withheld (finish_reason=content_filter)")
    if not isinstance(text, str) or not text.strip():
        raise summary_error(TransientSummaryError, "openai: empty summary text")
    return text, finish if isinstance(finish, str) else None


class OpenAISummarizer:
    """Writes summaries with the Chat Completions API (``name="openai"``)."""

    name = "openai"
    calls_llm = True

    def __init__(self, settings: SummarizerSettings | None = None,
                 api_key: str | None = None) -> None:
        self.settings = settings or SummarizerSettings(provider="openai")
        self.base_url = self.settings.base_url or os.environ.get(BASE_URL_ENV) or None
        self._api_key = api_key or resolve_key(self.settings.api_key_env, self.base_url)
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAISummarizer(model={self.settings.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> openai.OpenAI:
        import openai

        with self._client_lock:
            if self._client is None:
                self._client = openai.OpenAI(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.settings.timeout_seconds,
                    max_retries=self.settings.max_retries,
                    default_headers=dict(self.settings.headers) or None,
                )
            return self._client

    def request_params(self, job: SummaryJob) -> dict[str, Any]:
        """The Chat Completions parameters for ``job`` (already redacted).

        A continuation job (``summarizer.continuation``) sends its prefix — the chat request
        as it was sent, without the private ``_`` keys (R-7.5), not redacted again so that it
        stays the bytes the provider already holds — followed by the instruction as one user
        message."""
        messages: list[dict[str, Any]] = []
        if job.continuation:
            assert job.prefix is not None and job.instruction is not None
            messages.extend(sanitize_for_wire(job.prefix))
            messages.append({"role": "user", "content": redact(job.instruction)})
        else:
            if job.system:
                messages.append({"role": "system", "content": redact(job.system)})
            messages.append({"role": "user", "content": redact(job.prompt)})
        cap = max(1, min(job.max_tokens, self.settings.max_tokens))
        params: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if is_reasoning_model(self.settings.model):
            params["max_completion_tokens"] = cap
        else:
            params["max_tokens"] = cap
            params["temperature"] = self.settings.temperature
        return params

    def close(self) -> None:
        """Close the SDK client's connection pool (a later call opens a new one)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def summarize(self, job: SummaryJob) -> str:
        params = self.request_params(job)
        cap = int(params.get("max_tokens") or params["max_completion_tokens"])
        try:
            response = self._get_client().chat.completions.create(**params)
        except Exception as exc:  # every SDK failure is classified, none escapes raw
            raise sdk_error(exc, self.settings.timeout_seconds) from None
        text, _ = completion_text(response, cap)
        return redact(text.strip())
