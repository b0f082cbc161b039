"""The SQLite store's connections, transactions and error translation (one file per store).

Why these settings: WAL lets readers (a CLI listing, a ``select_context`` engine's history
reader) run while a turn writes; ``foreign_keys`` keeps lineage links honest;
``synchronous=NORMAL`` in WAL mode is durable against a crashed or killed process (the case
that matters here) without an fsync per commit; every write is ``BEGIN IMMEDIATE`` so two
processes queue on ``busy_timeout`` instead of failing with "database is locked" halfway
through a transaction.  Each thread gets its own connection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hermes_host.store.base import DEFAULT_LEASE_TTL, SchemaTooNewError, StoreError, WindowMarker
from hermes_host.store.codec import MSG_COLS, WINDOW_ORDER
from hermes_host.store.errors import translating
from hermes_host.store.rooms import SharedRooms
from hermes_host.store.sqlite.fts import register_functions
from hermes_host.store.sqlite.schema import LATEST_VERSION, migrate

__all__ = ["MSG_COLS", "WINDOW_ORDER", "SQLiteBase", "check_location", "errors"]

# Rows are staged in a per-connection TEMP table and moved with ONE INSERT … SELECT (see
# messages.py): created on every connection.
CREATE_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS message_stage (seq INTEGER PRIMARY KEY, "
    f"token_count INTEGER, {MSG_COLS})"  # untyped: no affinity conversion
)

def _translate(path: Path, exc: BaseException, action: str) -> StoreError:
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low or isinstance(exc, PermissionError):
        why = "the store is read-only; check the permissions of the file and its directory"
    elif "disk is full" in low or "no space" in low:
        why = "the disk (or the store's size limit) is full; free some space and retry"
    elif "unable to open" in low or isinstance(exc, OSError):
        why = "cannot open the store file; check that the path is a writable file location"
    elif "not a database" in low:
        why = "this file is not a hermes-host store (not an SQLite database)"
    elif "malformed" in low or "corrupt" in low:
        why = "the store file is corrupt; restore a backup (state.db.v*.bak) or move it away"
    elif "locked" in low or "busy" in low:
        why = "the store is busy: another process held its write lock too long; retry"
    else:
        why = "store error"
    return StoreError(f"{path}: {why} (while {action}: {text}); nothing was changed")


errors = translating(
    (sqlite3.Error, OSError), lambda store, exc, action: _translate(store.path, exc, action)
)
"""Turn any sqlite3/OS error inside a store method into a user-facing StoreError."""


def check_location(path: Path) -> None:
    """Raise :class:`StoreError` when a regular file sits where a directory of ``path``
    should be (``--store afile/state.db``), before anything tries to create it."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise StoreError(
                    f"{path}: {parent} is a file, not a directory; pass a store path inside "
                    "a directory"
                )
            return


def _prepare_file(path: Path) -> None:
    """Create the file (and its directory) owner-only before SQLite touches it.

    An existing store readable by others is tightened to its owner's bits (it holds
    conversations); a store its owner made read-only (no owner write bit, e.g. 0444) is the
    owner's choice and is left exactly as it is (issue 12)."""
    if str(path) == ":memory:":
        return
    check_location(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    mode = path.stat().st_mode & 0o777 if path.is_file() else 0
    if mode & 0o200 and mode & 0o077:
        try:
            os.chmod(path, mode & 0o700)
        except PermissionError:  # not ours to change; SQLite will still report access
            pass



class _ThreadConnection:
    """Kept in a thread's ``threading.local`` next to its connection.  When the thread ends,
    Python drops its thread-local data and this object with it, and the finalizer closes the
    connection: a long-running host whose fence workers come and go holds one connection per
    *live* thread, not one per thread that ever touched the store."""

    __slots__ = ("__weakref__",)


def _forget_connection(conns: dict[int, sqlite3.Connection], key: int,
                       conn: sqlite3.Connection) -> None:
    # No lock: this may run in whichever thread drops the last reference (even one inside
    # a locked section of the store); a dict pop is atomic.
    conns.pop(key, None)
    try:
        conn.close()
    except sqlite3.Error:
        pass



class SQLiteBase(SharedRooms[sqlite3.Connection]):
    """Connections and transactions of the SQLite store; the rooms build on it."""

    def __init__(
        self,
        path: Path,
        *,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        busy_timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.location = str(self.path)
        self.lease_ttl = float(lease_ttl)
        self.busy_timeout = float(busy_timeout)
        self._local = threading.local()
        self._conns: dict[int, sqlite3.Connection] = {}  # open ones, of live threads
        self._conns_lock = threading.Lock()
        self._closed = False
        self._open()

    @errors("opening the store")
    def _open(self) -> None:
        try:
            if self.read_only:
                self._check_read_only()
            else:
                _prepare_file(self.path)
                migrate(self._conn(), self.path)
        except BaseException:
            self.close()  # a store that failed to open holds no connection
            raise

    def _check_read_only(self) -> None:
        """A read-only store is browsed as it is: nothing is created, migrated or chmod-ed,
        so it must exist and already have this host's schema."""
        check_location(self.path)
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no store file here (opening read-only)")
        version = self._conn().execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST_VERSION:
            raise SchemaTooNewError(
                f"{self.path}: this store has schema version {version}, but this hermes-host "
                f"understands versions up to {LATEST_VERSION}; upgrade hermes-host"
            )
        if version != LATEST_VERSION:
            raise StoreError(
                f"{self.path}: the store is read-only and at schema version {version}; it "
                f"needs migrating to {LATEST_VERSION}, which needs write access once"
            )

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only:
            return sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False,
            )
        # mode=ro: SQLite never writes the file.  A WAL store in a read-only directory has
        # no -shm it could create; there nobody can write either, so it is immutable.
        uri = self.path.resolve().as_uri()
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            conn = sqlite3.connect(f"{uri}{query}", uri=True, timeout=self.busy_timeout,
                                   isolation_level=None, check_same_thread=False)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.OperationalError:
                conn.close()
                if query.endswith("immutable=1"):
                    raise
        raise AssertionError("unreachable")

    # -- connections and transactions -------------------------------------------------------

    @staticmethod
    def _version(conn: sqlite3.Connection) -> tuple[int, int]:
        """Changes when anything may have changed the file: another connection committed
        (``PRAGMA data_version``) or this one changed rows (``total_changes``)."""
        return conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes

    def _markers(self) -> dict[str, tuple[tuple[int, int], WindowMarker]]:
        """This thread's connection's cache of ``window_marker`` answers (messages.py)."""
        markers: dict[str, tuple[tuple[int, int], WindowMarker]] | None = getattr(
            self._local, "markers", None)
        if markers is None:
            markers = self._local.markers = {}
        return markers

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError(f"{self.path}: the store was closed")
        conn = self._connect()
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if not self.read_only:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute(CREATE_STAGE)
            register_functions(conn)
        except BaseException:
            conn.close()
            raise
        owner = _ThreadConnection()
        key = id(owner)
        with self._conns_lock:
            self._conns[key] = conn
        # Not at interpreter exit: a daemon worker may still be using it then.
        weakref.finalize(owner, _forget_connection, self._conns, key, conn).atexit = False
        self._local.conn, self._local.owner = conn, owner
        return conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` write transaction: all of it commits, or none of it."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise

    def close(self) -> None:
        with self._conns_lock:
            self._closed = True
        while self._conns:  # popitem: a thread ending meanwhile pops its own entry
            try:
                _, conn = self._conns.popitem()
            except KeyError:
                break
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()

    def __enter__(self) -> SQLiteBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


    # -- the shared rooms' hooks (hermes_host.store.rooms) ----------------------------------

    def _exists(self, conn: sqlite3.Connection, session_id: str) -> bool:
        return (
            conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
            is not None
        )

    def _title_owner(self, conn: sqlite3.Connection, title: str) -> str | None:
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
        return None if row is None else str(row[0])

    def _last_active(self, conn: sqlite3.Connection) -> str | None:
        row = conn.execute(
            "SELECT id FROM sessions WHERE archived = 0 "
            "ORDER BY last_activity_at DESC, created_at DESC LIMIT 1"
        ).fetchone()
        return None if row is None else str(row[0])

    def _titled_rows(self, conn: sqlite3.Connection, prefix: str) -> Sequence[tuple[str, str]]:
        rows: list[tuple[str, str]] = conn.execute(
            "SELECT id, title FROM sessions WHERE substr(title, 1, ?) = ?", (len(prefix), prefix)
        ).fetchall()
        return rows

    def _tip(self, conn: sqlite3.Connection, session_id: str) -> str:
        """Follow compression rotations to the newest session of the lineage."""
        current = session_id
        for _ in range(100_000):
            row = conn.execute(
                "SELECT end_reason FROM sessions WHERE id = ?", (current,)
            ).fetchone()
            if row is None or row[0] != "compression":
                return current
            child = conn.execute(  # a rotation child, not a branch taken earlier
                "SELECT id FROM sessions WHERE parent_session_id = ? AND conversation_id = "
                "(SELECT conversation_id FROM sessions WHERE id = ?) "
                "ORDER BY created_at DESC, id DESC LIMIT 1",
                (current, current),
            ).fetchone()
            if child is None:
                return current
            current = child[0]
        return current
