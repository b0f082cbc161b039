"""The engine's own options block (``engines.compressor`` in ``config.yaml``).

The user-facing knobs of SPEC R-4.5 live in ``compression:`` and arrive with every request
(:class:`hermes_host.CompressionSettings`).  This block holds the engine's internal limits —
sizes that tune how aggressively the five steps work — so that they are visible and
overridable without being part of the host's contract.  Unknown keys are an error that names
the key and the allowed ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_host.config import parse_engine_options
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EngineOptions", "OptionsError", "parse_options"]


_UNKNOWN_KEY = "unknown key; allowed keys: {allowed}"
"""This engine's wording (documented in its README) for a key :class:`EngineOptions` lacks."""


class OptionsError(ValueError):
    """The ``engines.compressor`` block is invalid; ``str()`` names the key and what is allowed."""


class EngineOptions(BaseModel):
    """Internal limits of the compressor; every default is documented in the README."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tail_message_floor: int = Field(
        40, ge=3, description="Caps protect_last_n, the tail's message-count floor (R-4.5)."
    )
    prune_min_chars: int = Field(
        200, ge=0, description="Old tool outputs shorter than this stay verbatim (R-6.1)."
    )
    dedup_min_chars: int = Field(200, ge=1, description="Dedup floor for identical outputs.")
    max_tool_arg_chars: int = Field(
        2000, ge=100, description="Tool-call arguments longer than this are truncated (R-6.1)."
    )
    tool_arg_keep_chars: int = Field(
        300, ge=20, description="Characters kept of each long string inside truncated args."
    )
    pressure_excerpt_chars: int = Field(
        800, ge=50, description="Recent excerpt kept by the tail pressure pass (R-6.1)."
    )
    summary_ratio: float = Field(
        0.50, gt=0, le=1, description="Summary target = middle tokens × this ratio."
    )
    min_summary_tokens: int = Field(
        1000, ge=32,
        description="Floor of the summary target (Hermes Agent's is 1,000); a summary is "
        "still never larger than what it replaces.",
    )
    max_summary_tokens: int = Field(
        12_000, ge=64, description="Upper bound of the summary target (also caps micro calls)."
    )
    feasibility_fraction: float = Field(
        0.05, ge=0, le=1, description="Middle below threshold × this is not worth an LLM call."
    )
    max_turn_chars: int = Field(
        4000, ge=200, description="Per message, characters of source text shown to the LLM."
    )
    max_source_chars: int = Field(
        400_000, ge=10_000, description="Aggregate cap on the source turns of one prompt."
    )
    max_previous_summary_chars: int = Field(
        48_000, ge=1_000, description="Aggregate cap on the previous summary (R-6.6)."
    )
    micro_max_exchanges: int = Field(
        8, ge=1, description="Micro-compaction merges at most this many exchanges per pass."
    )
    micro_breaker_failures: int = Field(
        3, ge=1, description="Consecutive micro-compaction failures that trip the breaker."
    )


def parse_options(options: Mapping[str, Any] | None) -> EngineOptions:
    """Validate the options block; raise :class:`OptionsError` naming the bad key."""
    # Kept from before the shared helper: any empty value (``{}``, ``[]``) means the defaults.
    return parse_engine_options(
        EngineOptions, options or None, "compressor", OptionsError, unknown=_UNKNOWN_KEY
    )
