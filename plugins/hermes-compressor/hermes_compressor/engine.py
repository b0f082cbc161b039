"""The hook implementations of the default engine (entry point ``compressor``).

``Compressor`` answers three lifecycle hooks: ``should_compress`` (the trigger and the
guards), ``compress`` (the five steps) and ``prune_tool_results_only`` (proactive pruning,
R-11.1).  It never touches the store: every fact it needs is in the request, and guard effects
go back through ``CompressResult.outcome`` / ``cooldown_seconds`` for the host to commit.

One instance serves every session of a host process and may be called from several fenced
worker threads at once; the only shared state is the token-count cache, the summariser cache
and the micro-compaction breaker, each behind a lock.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

from hermes_host import hookimpl
from hermes_host.llm import summarizer_from_settings
from hermes_host.llm.anthropic_summarizer import API_KEY_ENV, BASE_URL_ENV
from hermes_host.llm.base import Summarizer
from hermes_host.llm.openai_summarizer import API_KEY_ENV as OPENAI_KEY_ENV
from hermes_host.llm.openai_summarizer import BASE_URL_ENV as OPENAI_URL_ENV
from hermes_host.models import (
    CompressDecision,
    CompressRequest,
    CompressResult,
    Message,
    PruneRequest,
    PruneResult,
    ShouldCompressRequest,
    SummarizerSettings,
)
from hermes_host.tokens import TokenCounter

from hermes_compressor.boundaries import find_cut, head_size
from hermes_compressor.compaction import Summarizers, compress_window
from hermes_compressor.micro import MICRO_MAX_TOKENS, MICRO_TEMPERATURE, MicroBreaker
from hermes_compressor.options import EngineOptions, parse_options
from hermes_compressor.prune import PruneStats, dedup_results, prune_results
from hermes_compressor.summary import extract_previous
from hermes_compressor.trigger import decide, tail_budget, threshold_tokens

__all__ = ["Compressor"]

_ENV_KEYS = (API_KEY_ENV, BASE_URL_ENV, OPENAI_KEY_ENV, OPENAI_URL_ENV)


class Compressor:
    """Prune, protect the head, cut the tail by tokens, summarise the middle (SPEC section 6).

    ``options`` is the ``engines.compressor`` block of ``config.yaml``
    (:class:`~hermes_compressor.options.EngineOptions`).  ``summarizer`` / ``fallback`` let
    tests and embedders inject summarisers; otherwise the summariser is built per call from
    ``request.summarizer`` with :func:`hermes_host.llm.summarizer_from_settings` (cached by
    settings), and the fallback is the offline extractive summariser.
    """

    # never writes into a request's messages, so the fence shares them (issue 15)
    read_only_messages = True
    # during a summariser cooldown compress() summarises offline, no LLM call (issue 28)
    compresses_during_cooldown = True

    def __init__(
        self,
        options: dict[str, Any] | None = None,
        *,
        summarizer: Summarizer | None = None,
        fallback: Summarizer | None = None,
    ) -> None:
        self.options: EngineOptions = parse_options(options)
        self._summarizer = summarizer
        self._fallback = fallback
        self._counter = TokenCounter()
        self._cache: dict[str, Summarizer] = {}
        self._cache_lock = threading.Lock()
        self.breaker = MicroBreaker(self.options.micro_breaker_failures)

    # -- helpers ---------------------------------------------------------------------------

    def count(self, message: Message) -> int:
        """Tokens of one message (cached; TokenCounter is thread-safe)."""
        return self._counter.count(message)

    def _from_settings(self, settings: SummarizerSettings) -> Summarizer:
        # the environment decides provider "auto" and supplies the key: part of the cache key
        names = (*_ENV_KEYS, *((settings.api_key_env,) if settings.api_key_env else ()))
        env = "\0".join(os.environ.get(name, "") for name in names)
        key = settings.model_dump_json() + hashlib.sha256(env.encode()).hexdigest()
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        built: Summarizer = summarizer_from_settings(settings)
        with self._cache_lock:
            self._cache.setdefault(key, built)
            return self._cache[key]

    def _offline(self) -> Summarizer:
        if self._fallback is not None:
            return self._fallback
        return self._from_settings(SummarizerSettings(provider="offline"))

    def _summarizers(self, settings: SummarizerSettings) -> Summarizers:
        def primary() -> Summarizer:
            return self._summarizer or self._from_settings(settings)

        def micro(max_summary_tokens: int) -> Summarizer:
            if self._summarizer is not None:
                return self._summarizer
            tuned = settings.model_copy(
                update={
                    "temperature": MICRO_TEMPERATURE,
                    "max_tokens": min(MICRO_MAX_TOKENS, max_summary_tokens),
                }
            )
            return self._from_settings(tuned)

        return Summarizers(primary=primary, micro=micro, fallback=self._offline)

    def close(self) -> None:
        """Release the network clients of cached summarisers (sockets are not left to GC)."""
        with self._cache_lock:
            cached = list(self._cache.values())
            self._cache.clear()
        for summarizer in cached:
            closer = getattr(summarizer, "close", None)
            if callable(closer):
                closer()

    # -- hooks -----------------------------------------------------------------------------

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision | None:
        """Threshold rule (R-4) and guards (R-5), and a futility guard (issue 28): when the
        system prompt alone meets the trigger, no compression of the conversation can bring
        the window under it — say so instead of trying (the request bound keeps each
        request within the window meanwhile)."""
        decision = decide(request)
        messages = request.messages
        if decision.compress and not request.force and messages and (
            messages[0].get("role") == "system"
        ):
            fixed = self.count(messages[0])
            threshold = decision.threshold_tokens or 0
            if fixed >= threshold:
                return decision.model_copy(update={
                    "compress": False,
                    "reason": f"futile: the system prompt alone is {fixed:,} tokens, at or "
                              f"over the trigger of {threshold:,}",
                })
        return decision

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult | None:
        """The five steps (R-6) with the failure semantics of R-10.3 (see compaction.py)."""
        return compress_window(
            request,
            options=self.options,
            count=self.count,
            summarizers=self._summarizers(request.summarizer),
            breaker=self.breaker,
        )

    @hookimpl
    def prune_tool_results_only(self, request: PruneRequest) -> PruneResult | None:
        """Proactive pruning (R-11.1): large old outputs outside the tail become one-liners,
        only when at least ``min_reclaim_tokens`` are reclaimed; ``None`` otherwise."""
        settings = request.compression
        messages = list(request.messages)
        first_round = extract_previous(messages).previous_summary is None
        head_end = head_size(
            messages, first_round=first_round, protect_first_n=settings.protect_first_n
        )
        budget = tail_budget(settings, threshold_tokens(settings, request.context_length))
        cut = find_cut(
            messages,
            self.count,
            head_end=head_end,
            budget=budget,
            floor_count=min(settings.protect_last_n, self.options.max_tail_message_floor),
            min_tail_user_messages=settings.min_tail_user_messages,
        )
        stats = PruneStats()
        out = dedup_results(
            messages, self.count, start=head_end, min_chars=request.min_output_chars, stats=stats
        )
        out = prune_results(
            out,
            self.count,
            start=head_end,
            end=cut,
            min_chars=request.min_output_chars,
            stats=stats,
        )
        if stats.pruned == 0 or stats.tokens_saved < request.min_reclaim_tokens:
            return None
        return PruneResult(messages=out, pruned=stats.pruned, tokens_saved=stats.tokens_saved)
