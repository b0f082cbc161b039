"""One generated window (:class:`Session`) and the default seed."""

from __future__ import annotations

from dataclasses import dataclass

from hermes_host.models import Message

__all__ = ["DEFAULT_SEED", "Session"]

DEFAULT_SEED = 20_215


@dataclass(frozen=True)
class Session:
    """One window to run every hook on.  ``id`` names the pytest case."""

    id: str
    kind: str  # "realistic" | "adversarial" | "transcript"
    description: str
    messages: list[Message]
    skip_reason: str | None = None
