"""A PostgreSQL :class:`~hermes_host.store.StateStore` for hermes-host (issue 16): one
history, one compression lease per session and one search index shared by many hosts.

Open it through hermes-host (``store.url: postgresql://…`` in ``config.yaml``, or
``hermes_host.store.open_store(url)``): the ``hermes_host.stores`` entry points of this
distribution map ``postgresql://`` and ``postgres://`` to :class:`PostgresStore`.

The store is built in rooms like the SQLite one, each a subclass of the one before:
:mod:`._base` (pool, transactions, clock, errors), :mod:`.sessions`, :mod:`.messages`,
:mod:`.publish` (leases, compression) and :class:`PostgresStore` here (search, recap,
history reader).  :mod:`.schema` holds the versioned migrations, :mod:`.settings` the URL
options (``schema``, ``pool_min``, ``pool_max``, ``pool_timeout``).
"""

from __future__ import annotations

from hermes_host.models import HistoryReader
from hermes_host.store import SearchHit
from hermes_host.store.query import BOOKEND_MESSAGES
from hermes_host.store.reader import StoreHistoryReader
from hermes_host.store.recap import format_recap
from hermes_store_postgres._base import errors
from hermes_store_postgres.publish import PublishRooms
from hermes_store_postgres.schema import LATEST_VERSION
from hermes_store_postgres.search import run_search

__all__ = ["LATEST_VERSION", "PostgresStore"]


class PostgresStore(PublishRooms):
    """The PostgreSQL :class:`~hermes_host.store.StateStore`."""

    def __enter__(self) -> PostgresStore:
        return self

    @errors("searching")
    def session_search(
        self,
        query: str,
        session_id: str | None = None,
        lineage: bool = True,
        limit: int = 10,
        *,
        bookends: int = BOOKEND_MESSAGES,
    ) -> list[SearchHit]:
        with self._tx() as conn:
            scope: list[str] | None = None
            if session_id is not None:
                if lineage:
                    scope = self._lineage(conn, session_id)
                else:
                    self._require(conn, session_id)
                    scope = [session_id]
            return run_search(conn, query, scope, limit, bookends)

    @errors("building a recap")
    def recap(self, session_id: str) -> str:
        return format_recap(self.get_session(session_id), self.active_messages(session_id))

    @errors("opening a history reader")
    def history_reader(self, session_id: str) -> HistoryReader:
        with self._read() as conn:
            self._require(conn, session_id)
        return StoreHistoryReader(self, session_id)
