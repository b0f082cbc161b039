"""How the framework integrations make an end of turn visible (issue 18): a framework shows
nothing of hermes-host's own output, so each line an end of turn produced (the compaction
markers, a failure) goes to the ``hermes_host.integrations`` logger — a compression that
failed, timed out or was refused at WARNING, with the reason."""

from __future__ import annotations

import logging

from hermes_host.host import TurnOutcome

__all__ = ["logger", "report"]

logger = logging.getLogger("hermes_host.integrations")

_FAILED = frozenset({"timeout", "error", "invalid", "lease_lost", "no_engine"})


def report(outcome: TurnOutcome, conversation: str) -> TurnOutcome:
    """Log ``outcome``'s lines (and a failed compression) for ``conversation``; returns it."""
    for line in outcome.events:
        logger.info("[%s] %s", conversation, line)
    compression = outcome.compression
    if compression is not None and (
        compression.status == "rejected" or compression.outcome in _FAILED
    ):
        logger.warning(
            "[%s] hermes-host compression %s (%s): %s — the turn goes on with the window as "
            "it was", conversation, compression.status, compression.outcome,
            compression.message or "no message",
        )
    return outcome
