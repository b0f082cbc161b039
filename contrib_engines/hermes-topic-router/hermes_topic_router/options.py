"""``engines.topic_router`` in ``config.yaml``: the engine's options and their error (R-0.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_host.config import parse_engine_options

__all__ = ["TopicRouterOptions", "TopicRouterOptionsError"]

class TopicRouterOptionsError(ValueError):
    """The ``engines.topic_router`` block of ``config.yaml`` is invalid."""


class TopicRouterOptions(BaseModel):
    """``engines.topic_router`` in ``config.yaml`` (all optional)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(
        0.15, ge=0, le=1, description="Cosine similarity a turn needs to join an existing topic."
    )
    stickiness: float = Field(
        0.05, ge=0, le=1, description="Bonus for the current topic, against flip-flopping."
    )
    min_terms: int = Field(
        3, ge=1, description="Messages with fewer distinct content words stay on the topic."
    )
    keep_recent_turns: int = Field(
        1, ge=0, description="Turns right before the incoming one, kept whatever their topic."
    )
    max_topics: int = Field(16, ge=1, description="Least recently used topics beyond are dropped.")
    max_profile_terms: int = Field(400, ge=10, description="Terms kept per topic profile.")
    max_vocabulary: int = Field(8000, ge=100, description="Terms kept in document frequencies.")
    max_tracked_turns: int = Field(5000, ge=10, description="Turn→topic entries kept in state.")
    max_bootstrap_turns: int = Field(
        200, ge=0, description="Unknown turns classified on one call (newest first); "
        "older ones are sent with every branch.",
    )
    note: bool = Field(True, description="Say in the incoming message which turns are left out.")
    note_names: int = Field(
        40, ge=0, description="Names (paths, symbols, errors) of left-out turns the note lists."
    )

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> TopicRouterOptions:
        """Validate ``engines.topic_router``; the error names each bad key (R-0.3)."""
        return parse_engine_options(cls, options, "topic_router", TopicRouterOptionsError)
