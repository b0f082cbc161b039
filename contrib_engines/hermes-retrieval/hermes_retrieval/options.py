"""``engines.retrieval`` options: what ``config.yaml`` may set for the retrieval engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_host.config import parse_engine_options

__all__ = ["RetrievalOptions", "RetrievalOptionsError"]


class RetrievalOptionsError(ValueError):
    """The ``engines.retrieval`` block of ``config.yaml`` is invalid; ``str()`` says how."""


class RetrievalOptions(BaseModel):
    """``engines.retrieval`` in ``config.yaml`` (all optional)."""

    model_config = ConfigDict(extra="forbid")

    budget_share: float = Field(
        0.25, gt=0, le=1, description="Share of the tokens the window leaves free this turn."
    )
    max_hits: int = Field(6, ge=1, le=50, description="Excerpts per turn, at most.")
    max_block_tokens: int = Field(3000, ge=1, description="Hard cap on the block's size.")
    min_block_tokens: int = Field(
        64, ge=1, description="Below this much room, inject nothing rather than a stub."
    )
    max_hit_chars: int = Field(1200, ge=80, description="Each excerpt is cut to this many chars.")
    recent_messages: int = Field(
        8, ge=0, description="Messages before the incoming one that feed the query (half weight)."
    )
    search_limit: int = Field(12, ge=1, le=200, description="Hits asked per query.")
    max_identifiers: int = Field(14, ge=0, description="Identifier queries per turn, at most.")
    max_keywords: int = Field(6, ge=0, description="Keyword queries per turn, at most.")
    min_relative_score: float = Field(
        0.2, ge=0, le=1, description="Drop hits scoring below this share of the best hit."
    )
    lineage: bool = Field(True, description="Search earlier sessions of the lineage too.")
    names_index: bool = Field(
        True,
        description="After a compaction, also list the names (paths, symbols, errors) the "
        "compacted history mentions and the window no longer shows.",
    )
    names_share: float = Field(
        0.5, ge=0, le=1, description="Share of the block the names index may take."
    )
    names_scan_messages: int = Field(
        5_000, ge=100, description="Newest stored messages scanned for the names index."
    )
    include_tool_results: bool = Field(True, description="Tool outputs may be excerpted.")
    time_budget_seconds: float = Field(
        3.0, gt=0, description="Stop issuing queries after this long (the hook limit is 5 s)."
    )

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> RetrievalOptions:
        """Validate ``engines.retrieval``; the error names each bad key (R-0.3)."""
        return parse_engine_options(cls, options, "retrieval", RetrievalOptionsError)
