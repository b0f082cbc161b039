"""The auxiliary LLM shared by all engines (see :mod:`hermes_host.llm.base`).

* :class:`AnthropicSummarizer` — the Messages API on the real ``anthropic`` SDK;
* :class:`OpenAISummarizer` — Chat Completions on the real ``openai`` SDK (any
  OpenAI-compatible server);
* :class:`OfflineSummarizer` — deterministic, extractive, no network;
* :func:`summarizer_from_settings` — the user's ``summarizer:`` section → a summariser, through
  the model-provider plugins of :mod:`hermes_host.llm.providers`;
* :class:`FallbackSummarizer` — try one, on failure use another, and *say so*.

Importing this package imports neither SDK: each is imported when its summariser first calls.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hermes_host.llm.anthropic_summarizer import API_KEY_ENV, AnthropicSummarizer
from hermes_host.llm.base import (
    SUMMARY_SECTIONS,
    MissingAPIKeyError,
    PermanentSummaryError,
    Summarizer,
    SummaryError,
    SummaryJob,
    TransientSummaryError,
)
from hermes_host.llm.offline import OfflineSummarizer
from hermes_host.llm.openai_summarizer import OpenAISummarizer
from hermes_host.llm.providers import ProviderError, load_provider
from hermes_host.models import SummarizerSettings

__all__ = [
    "API_KEY_ENV",
    "SUMMARY_SECTIONS",
    "AnthropicSummarizer",
    "FallbackSummarizer",
    "MissingAPIKeyError",
    "OfflineSummarizer",
    "OpenAISummarizer",
    "PermanentSummaryError",
    "ProviderError",
    "Summarizer",
    "SummaryError",
    "SummaryJob",
    "TransientSummaryError",
    "effective_provider",
    "summarizer_from_settings",
]


def effective_provider(
    settings: SummarizerSettings, environ: Mapping[str, str] | None = None
) -> str:
    """The provider name ``settings`` resolves to: ``auto`` → ``anthropic`` when the key
    variable (``api_key_env``, default ``ANTHROPIC_API_KEY``) is set, else ``offline``."""
    if settings.provider != "auto":
        return settings.provider
    env = os.environ if environ is None else environ
    return "anthropic" if env.get(settings.api_key_env or API_KEY_ENV) else "offline"


def summarizer_from_settings(
    settings: SummarizerSettings | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Summarizer:
    """Build the summariser the user's ``summarizer:`` section asks for (R-14.7).

    ``provider: auto`` → Anthropic when ``ANTHROPIC_API_KEY`` is set, else offline;
    ``provider: anthropic`` without a key → :class:`MissingAPIKeyError`, whose message names
    the variable to set; ``provider: offline`` → :class:`OfflineSummarizer`; any other name →
    that model provider's summariser (``openai``, or an installed plugin's), or
    :class:`ProviderError` when no such provider is installed.
    """
    settings = settings or SummarizerSettings()
    env = os.environ if environ is None else environ
    return load_provider(effective_provider(settings, env)).summarizer(settings, env)


class FallbackSummarizer:
    """Ask ``primary``; when it raises a :class:`SummaryError`, ask ``fallback`` instead.

    It never hides the failure: :attr:`last_error` holds the primary's error and
    :attr:`used_fallback` is true after a fallback answer, so an engine still counts the
    fallback streak (R-5.2) and starts a cooldown for a transient error (R-5.1).  Errors of
    the fallback itself propagate.  Not meant to be shared between concurrent calls.
    """

    calls_llm: bool

    def __init__(self, primary: Summarizer, fallback: Summarizer | None = None) -> None:
        self.primary = primary
        self.fallback = fallback or OfflineSummarizer()
        self.name = f"{primary.name}+{self.fallback.name}"
        self.calls_llm = primary.calls_llm or self.fallback.calls_llm
        self.last_error: SummaryError | None = None
        self.used_fallback = False

    def summarize(self, job: SummaryJob) -> str:
        self.last_error = None
        self.used_fallback = False
        try:
            return self.primary.summarize(job)
        except SummaryError as exc:
            self.last_error = exc
        self.used_fallback = True
        return self.fallback.summarize(job)
