"""The conformance kit's ``history`` handle: an in-memory :class:`hermes_host.HistoryReader`
over the session's window, which can say whether its rows were written to (R-10.2)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hermes_host.messages import text_of
from hermes_host.models import Message

__all__ = ["HistoryCheckpoint", "KitHistory"]


@dataclass(frozen=True)
class HistoryCheckpoint:
    """The rows of a :class:`KitHistory` at one moment (a private deep copy)."""

    rows: list[Message]


class KitHistory:
    """An in-memory :class:`hermes_host.HistoryReader` over the session's window.

    Like a store that caches rows, it hands out the host's *own* message dicts (the fence
    shares handles by reference): an engine that writes through it changes the host's data,
    and the ``no_mutation`` check sees it.  Engines must treat ``history`` as read-only.

    The fence may hand the engine read-only twins of the request's messages (issue 15), so
    comparing the request before and after a call does not show a write through this handle;
    :meth:`checkpoint` and :meth:`changed_since` let the kit ask the handle itself.  They are
    the kit's, not part of :class:`hermes_host.HistoryReader`.
    """

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def search(
        self, query: str, *, limit: int = 20, lineage: bool = True
    ) -> list[dict[str, Any]]:
        terms = [t for t in query.lower().split() if t]
        hits = []
        for index, message in enumerate(self._messages):
            text = text_of(message).lower()
            score = -sum(text.count(t) for t in terms)
            if terms and score < 0:
                hits.append(
                    {
                        "message_id": index + 1,
                        "session_id": "conformance",
                        "role": message.get("role"),
                        "content": text_of(message),
                        "score": float(score),
                        "active": True,
                    }
                )
        hits.sort(key=lambda h: (h["score"], h["message_id"]))
        return hits[:limit]

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        return list(self._messages)

    def checkpoint(self) -> HistoryCheckpoint:
        """What the rows are now, for :meth:`changed_since`."""
        return HistoryCheckpoint(copy.deepcopy(self._messages))

    def changed_since(self, checkpoint: HistoryCheckpoint) -> bool:
        """True when a row was changed, added or removed after ``checkpoint`` was taken."""
        return self._messages != checkpoint.rows
