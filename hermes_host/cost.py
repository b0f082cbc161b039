"""What a session costs under a prompt-caching price model (issue 28).

Every figure is in *input-token equivalents*: tokens times a weight relative to the
provider's base input price.  The default weights are Anthropic's shape — a cache read
costs 0.1 of an input token, a cache write 1.25, an uncached input token 1.0 and an output
token 5.0 — and are configurable (:class:`PriceModel`).

* A model call: the leading messages it shares with the previous request are read from the
  provider's cache; the rest is written to it.  A compression rewrites the window, so the
  call after it pays to write nearly all of it again — the hidden price of compressing often.
* A summary request: its input is uncached (except the prefix a continuation summary shares
  with the last chat request, read from the cache), its output is the summary.
* The agent's own replies are left out: they are the same whatever the context manager does.

:class:`CostLedger` collects one session's calls; ``replay`` and ``eval`` report it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.models import Message

__all__ = ["CostLedger", "PriceModel", "shared_prefix_tokens", "uncompressed_cost"]


@dataclass(frozen=True)
class PriceModel:
    """Weights of the base input price (default: Anthropic's shape)."""

    cache_read: float = 0.1
    cache_write: float = 1.25
    uncached_input: float = 1.0
    output: float = 5.0

    def call(self, tokens: int, cached: int) -> float:
        """A model call of ``tokens``, of which the first ``cached`` are a cache read."""
        return cached * self.cache_read + (tokens - cached) * self.cache_write

    def as_dict(self) -> dict[str, float]:
        return {
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "uncached_input": self.uncached_input,
            "output": self.output,
        }


def shared_prefix_tokens(
    previous: Sequence[Message] | None,
    current: Sequence[Message],
    count: Callable[[Message], int],
) -> int:
    """Tokens of the leading messages ``current`` shares with ``previous`` (whole messages:
    providers cache at message boundaries)."""
    if not previous:
        return 0
    shared = 0
    for old, new in zip(previous, current, strict=False):
        if old is not new and old != new:
            break
        shared += count(new)
    return shared


@dataclass
class CostLedger:
    """One session's model calls and summary requests, priced by :class:`PriceModel`."""

    prices: PriceModel = field(default_factory=PriceModel)
    request_tokens: list[int] = field(default_factory=list)
    cached_tokens: list[int] = field(default_factory=list)
    summary_requests: int = 0
    summary_input_tokens: int = 0
    summary_cached_tokens: int = 0
    summary_output_tokens: int = 0
    _previous: list[Message] | None = None

    def add_request(
        self, request: Sequence[Message], count: Callable[[Message], int]
    ) -> tuple[int, int]:
        """Record one model call; returns ``(tokens, cached tokens)``."""
        tokens = sum(count(m) for m in request)
        cached = shared_prefix_tokens(self._previous, request, count)
        self.request_tokens.append(tokens)
        self.cached_tokens.append(cached)
        self._previous = list(request)
        return tokens, cached

    def add_summary(
        self, requests: int, input_tokens: int, output_tokens: int, cached_tokens: int = 0
    ) -> None:
        self.summary_requests += requests
        self.summary_input_tokens += input_tokens
        self.summary_cached_tokens += cached_tokens
        self.summary_output_tokens += output_tokens

    @classmethod
    def from_store(
        cls, requests: Sequence[Any], receipts: Sequence[Any], prices: PriceModel | None = None
    ) -> CostLedger:
        """A conversation's ledger from what the store recorded (issue 29): each request
        manifest's tokens and cacheable prefix, each compaction receipt's summariser
        tokens (``hermes_host.store.manifests``)."""
        ledger = cls(prices=prices or PriceModel())
        for record in requests:
            ledger.request_tokens.append(int(record.tokens))
            ledger.cached_tokens.append(int(record.prefix_tokens))
        for receipt in receipts:
            spent = receipt.summariser or {}
            ledger.add_summary(int(spent.get("requests", 0)), int(spent.get("input_tokens", 0)),
                               int(spent.get("output_tokens", 0)),
                               int(spent.get("cached_tokens", 0)))
        return ledger

    @property
    def calls_cost(self) -> float:
        return sum(
            self.prices.call(t, c)
            for t, c in zip(self.request_tokens, self.cached_tokens, strict=True)
        )

    @property
    def summary_cost(self) -> float:
        p = self.prices
        return (
            self.summary_cached_tokens * p.cache_read
            + (self.summary_input_tokens - self.summary_cached_tokens) * p.uncached_input
            + self.summary_output_tokens * p.output
        )

    @property
    def cache_hit_rate(self) -> float | None:
        total = sum(self.request_tokens)
        return sum(self.cached_tokens) / total if total else None

    def as_dict(self) -> dict[str, Any]:
        hit = self.cache_hit_rate
        return {
            "model_calls": len(self.request_tokens),
            "request_tokens": sum(self.request_tokens),
            "cached_tokens": sum(self.cached_tokens),
            "cache_hit_rate": None if hit is None else round(hit, 4),
            "summary_requests": self.summary_requests,
            "summary_input_tokens": self.summary_input_tokens,
            "summary_cached_tokens": self.summary_cached_tokens,
            "summary_output_tokens": self.summary_output_tokens,
            "calls_cost": round(self.calls_cost, 1),
            "summary_cost": round(self.summary_cost, 1),
            "input_side_cost": round(self.calls_cost + self.summary_cost, 1),
            "prices": self.prices.as_dict(),
        }


def uncompressed_cost(
    tokens_before: Sequence[int], prices: PriceModel | None = None
) -> float:
    """The calls' cost with no compression at all: each request is the whole history so
    far (``tokens_before[i]`` tokens), everything the previous request held read from the
    cache.  Meaningful only where the whole session fits the request budget."""
    prices = prices or PriceModel()
    total = 0.0
    previous = 0
    for tokens in tokens_before:
        cached = min(previous, tokens)
        total += prices.call(tokens, cached)
        previous = tokens
    return total
