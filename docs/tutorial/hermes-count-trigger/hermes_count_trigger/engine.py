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
from typing import Any

from hermes_host import CompressDecision, ShouldCompressRequest, hookimpl

__all__ = ["CountTrigger"]


class CountTrigger:
    """Say "compress" once the window (system prompt excluded) exceeds ``max_messages``."""

    deterministic = True  # same request, same decision: the conformance kit checks it

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        max_messages = options.pop("max_messages", 120)
        if options:
            raise ValueError(
                f"engines.count_trigger: unknown option(s) {', '.join(sorted(options))}; "
                "allowed: max_messages"
            )
        if not isinstance(max_messages, int) or isinstance(max_messages, bool) or max_messages < 4:
            raise ValueError(
                f"engines.count_trigger.max_messages must be a whole number >= 4, "
                f"got {max_messages!r}"
            )
        self.max_messages = max_messages

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
