"""A generic :class:`~hermes_host.models.HistoryReader` for server stores.

It answers through the store's own ``session_search`` / ``lineage_messages`` and exposes
nothing else, but it holds the store object privately: an in-process engine that reaches for
``reader._store`` gets it.  The SQLite store does better — its reader
(:mod:`hermes_host.store.sqlite.reader`) holds only a read-only connection (issue 13); a
server backend should hand out a reader on a read-only role or transaction instead.
"""

from __future__ import annotations

from typing import Any, Protocol

from hermes_host.models import Message
from hermes_host.store.base import SearchHit, StoredMessage

__all__ = ["LineageSource", "StoreHistoryReader"]


class LineageSource(Protocol):
    """What a reader needs from its store (both are part of every built-in backend)."""

    def session_search(
        self, query: str, session_id: str | None = None, lineage: bool = True, limit: int = 10
    ) -> list[SearchHit]: ...

    def lineage_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]: ...


class StoreHistoryReader:
    """Read-only view of a session's lineage.

    It exposes only ``search`` and ``messages``; it holds the store privately so an engine has
    no write method to call (R-10.2: engines never write state).
    """

    __slots__ = ("_session_id", "_store")

    def __init__(self, store: LineageSource, session_id: str) -> None:
        self._store = store
        self._session_id = session_id

    @property
    def session_id(self) -> str:
        return self._session_id

    def search(self, query: str, *, limit: int = 20, lineage: bool = True) -> list[dict[str, Any]]:
        hits = self._store.session_search(
            query, session_id=self._session_id, lineage=lineage, limit=limit
        )
        return [hit.to_dict() for hit in hits]

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        rows = self._store.lineage_messages(self._session_id, include_inactive=include_inactive)
        return [row.message for row in rows]
