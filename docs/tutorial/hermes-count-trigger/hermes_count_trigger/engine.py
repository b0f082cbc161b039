"""``count_trigger``: compress when the window holds more than ``max_messages`` messages.

Token thresholds suit most agents, but some front ends care about *turns*: a chat UI that
renders every message, a gateway billed per message.  This engine answers only
``should_compress``; the ``compress`` hook stays with whichever engine the user configured
(the default compressor), so the two compose through ``config.yaml``::

    context:
      engine: compressor
      hooks:
        should_compress: [count_trigger]
    engines:
      count_trigger:
        max_messages: 120
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hermes_host import CompressDecision, ShouldCompressRequest, hookimpl
from hermes_host.config import parse_engine_options
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CountTrigger", "CountTriggerOptions"]


class CountTriggerOptions(BaseModel):
    """``engines.count_trigger`` in ``config.yaml``; unknown keys and wrong types are errors."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_messages: int = Field(120, ge=4)
    """Compress once the window (system prompt excluded) holds more messages than this."""


class CountTrigger:
    """Say "compress" once the window (system prompt excluded) exceeds ``max_messages``."""

    deterministic = True  # same request, same decision: the conformance kit checks it

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        # Raises ValueError naming each bad key, e.g. "engines.count_trigger.maxx: unknown
        # option; allowed: max_messages"; the host shows it as a configuration error.
        parsed = parse_engine_options(CountTriggerOptions, options, "count_trigger")
        self.max_messages = parsed.max_messages

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        count = sum(1 for m in request.messages if m.get("role") != "system")
        guards = request.guards
        # A manual /compress (force=True) always goes ahead; otherwise honour the cooldown the
        # host keeps after a failed summary and the anti-thrash counters.
        if not request.force:
            if guards.cooldown_until is not None and guards.cooldown_until > guards.now:
                wait = math.ceil(guards.cooldown_until - guards.now)
                return CompressDecision(compress=False, reason=f"cooldown:{wait}")
            if guards.ineffective_count >= 2 or guards.fallback_streak >= 2:
                return CompressDecision(compress=False, reason="ineffective")
        if count <= self.max_messages and not request.force:
            return CompressDecision(compress=False, reason="below_message_limit")
        return CompressDecision(compress=True, reason=f"{count} messages > {self.max_messages}")
