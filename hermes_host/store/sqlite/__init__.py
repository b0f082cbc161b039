"""The embedded default :class:`~hermes_host.store.base.StateStore`: one SQLite file.

The store is built in rooms, one concern each, every room a subclass of the one before:
:mod:`._base` (connections, transactions, errors), :mod:`.sessions`, :mod:`.messages`
(append, window, guards, usage, engine state), :mod:`.publish` (leases, compression),
:mod:`.manifests` (requests, receipts) and this module (search, recap, history reader).
:mod:`.schema` holds the versioned migrations and :mod:`.fts` the two FTS5 indexes.
What every backend shares lives one level up (:mod:`hermes_host.store.rooms`, the base of
``._base``; :mod:`~hermes_host.store.rules`, :mod:`~hermes_host.store.query`,
:mod:`~hermes_host.store.codec`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hermes_host.models import HistoryReader
from hermes_host.store.base import DEFAULT_LEASE_TTL, SearchHit, StoreError
from hermes_host.store.query import search_limit
from hermes_host.store.recap import format_recap
from hermes_host.store.sqlite._base import check_location, errors
from hermes_host.store.sqlite.fts import (
    BOOKEND_MESSAGES,
    catch_up_trigram,
    pending_trigram_rows,
    run_search,
)
from hermes_host.store.sqlite.manifests import ManifestRooms
from hermes_host.store.sqlite.messages import CATCH_UP_PER_WRITE, DEFER_TRIGRAM_MIN
from hermes_host.store.sqlite.reader import SQLiteHistoryReader
from hermes_host.store.transfer import ORDER_KEYS

__all__ = [
    "CATCH_UP_PER_WRITE",
    "DEFER_TRIGRAM_MIN",
    "SQLiteHistoryReader",
    "SQLiteStore",
    "check_location",
    "sqlite_file",
]


def sqlite_file(url: str) -> Path:
    """The file of ``sqlite:///path`` (or of a plain path), ``~`` expanded."""
    text = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
    if "://" in text:
        raise StoreError("a sqlite URL is sqlite:///path (three slashes, then the file path)")
    return Path(text).expanduser()


class SQLiteStore(ManifestRooms):
    """The SQLite :class:`~hermes_host.store.base.StateStore`."""

    @classmethod
    def from_url(cls, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> SQLiteStore:
        """Open ``sqlite:///path`` (or a plain path): the ``hermes_host.stores`` entry."""
        return cls(sqlite_file(url), lease_ttl=lease_ttl)

    def __enter__(self) -> SQLiteStore:
        return self

    # -- whole-history transfer (hermes_host.store.transfer) --------------------------------

    @errors("exporting rows")
    def export_rows(
        self, table: str, columns: Sequence[str], batch: int
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Rows of ``table`` (a name from ``transfer.COLUMNS``) by primary key, in batches."""
        key = ", ".join(ORDER_KEYS.get(table, ("id",)))
        cursor = self._conn().execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}")
        while rows := cursor.fetchmany(max(1, batch)):
            yield [tuple(r) for r in rows]

    @errors("importing rows")
    def import_rows(
        self, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Insert rows exactly as given (ids kept) in one transaction."""
        marks = ", ".join("?" * len(columns))
        with self._tx() as conn:
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows
            )

    def finish_import(self) -> None:
        """Index what the import wrote for substring search."""
        self.index_pending()

    # -- search -----------------------------------------------------------------------------

    @errors("indexing for substring search")
    def index_pending(
        self, *, batch: int = 5_000, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Bring the trigram (substring) index up to date; returns how many messages it
        caught up past (tool rows included: the index leaves them out, the mark passes them).

        Bulk writes leave their rows to this catch-up (search scans them meanwhile, so
        nothing is ever unsearchable; it is only slower).  Each ``batch`` of rows is its own
        short write transaction, so turns in other processes are not held up behind it and an
        interrupted run keeps what it did.  ``progress(done, total)`` is called after each.
        """
        total = self.pending_index_rows()
        done = 0
        while True:
            with self._tx() as conn:
                indexed = catch_up_trigram(conn, max(1, int(batch)))
            if not indexed:
                return done
            done += indexed
            if progress is not None:
                progress(min(done, total), max(done, total))

    @errors("reading the search index state")
    def pending_index_rows(self) -> int:
        """Messages written but not yet in the trigram index (see :meth:`index_pending`)."""
        return pending_trigram_rows(self._conn())

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
        limit = search_limit(limit)
        scope: list[str] | None = None
        if session_id is not None:
            scope = self.lineage(session_id) if lineage else [session_id]
            if not lineage:
                self._require(self._conn(), session_id)
        return run_search(self._conn(), query, scope, limit, bookends)


    @errors("building a recap")
    def recap(self, session_id: str) -> str:
        session = self.get_session(session_id)
        return format_recap(session, self.active_messages(session_id))

    @errors("opening a history reader")
    def history_reader(self, session_id: str) -> HistoryReader:
        self._require(self._conn(), session_id)  # exists? (get_session counts every row)
        return SQLiteHistoryReader(self.path, session_id)  # its own read-only connection

