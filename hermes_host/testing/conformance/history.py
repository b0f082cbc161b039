"""The conformance kit's ``history`` handle: an in-memory :class:`hermes_host.HistoryReader`
over the session's window, which can say whether its rows were written to (R-10.2)."""

from __future__ import annotations

from typing import Any

from hermes_host.messages import text_of
from hermes_host.models import Message

__all__ = ["KitHistory"]


class KitHistory:
    """An in-memory :class:`hermes_host.HistoryReader` over the session's window.

    Like a store that caches rows, it hands out the host's *own* message dicts (the fence
    shares handles by reference): an engine that writes through it changes the host's data,
    and the ``no_mutation`` check sees it.  Engines must treat ``history`` as read-only.
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
