"""The embedded default :class:`~hermes_host.store.base.StateStore`: one SQLite file.

Why these settings: WAL lets readers (a CLI listing, a ``select_context`` engine's history
reader) run while a turn writes; ``foreign_keys`` keeps lineage links honest;
``synchronous=NORMAL`` in WAL mode is durable against a crashed or killed process (the case
that matters here) without an fsync per commit; every write is ``BEGIN IMMEDIATE`` so two
processes queue on ``busy_timeout`` instead of failing with "database is locked" halfway
through a transaction.  Each thread gets its own connection.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from hermes_host.models import HistoryReader, Message
from hermes_host.store.base import (
    DEFAULT_LEASE_TTL,
    Conversation,
    Deferred,
    Guards,
    Lease,
    LeaseLostError,
    PublishMode,
    PublishResult,
    SchemaTooNewError,
    SearchHit,
    Session,
    SessionNotFoundError,
    StaleSessionError,
    StaleWindowError,
    StoredMessage,
    StoreError,
    TitleConflictError,
    WindowMarker,
)
from hermes_host.store.codec import (
    ROW_COLUMNS,
    STORED_COLUMNS,
    decode_row,
    encode_message,
    stored_from_row,
)
from hermes_host.store.ids import holder_is_dead, make_holder, new_session_id
from hermes_host.store.reader import SQLiteHistoryReader, lineage_ids
from hermes_host.store.recap import format_recap
from hermes_host.store.schema import LATEST_VERSION, migrate
from hermes_host.store.search import (
    BOOKEND_MESSAGES,
    catch_up_trigram,
    pending_trigram_rows,
    register_functions,
    run_search,
)
from hermes_host.tokens import count_message

__all__ = ["SQLiteHistoryReader", "SQLiteStore"]

P = ParamSpec("P")
R = TypeVar("R")

_MSG_COLS = ", ".join(ROW_COLUMNS)
# Rows are staged in a per-connection TEMP table and moved with ONE INSERT … SELECT: FTS5
# flushes its pending terms at the end of every statement that writes it, so row-by-row
# inserts through the sync triggers would write one tiny index segment per message (≈4× slower).
_STAGE_COLS = f"seq, token_count, {_MSG_COLS}"
_CREATE_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS message_stage (seq INTEGER PRIMARY KEY, "
    f"token_count INTEGER, {', '.join(ROW_COLUMNS)})"  # untyped: no affinity conversion
)
_STAGE_MESSAGE = (
    f"INSERT INTO temp.message_stage ({_STAGE_COLS}) "
    f"VALUES ({', '.join('?' * (len(ROW_COLUMNS) + 2))})"
)
_MOVE_STAGED = (  # the staged seq is the row's window position (1-based) above a base
    "INSERT INTO messages (session_id, timestamp, seq, active, compacted, token_count, "
    f"{_MSG_COLS}) SELECT ?, ?, ? + seq, 1, 0, token_count, {_MSG_COLS} "
    "FROM temp.message_stage ORDER BY seq"
)
_WINDOW_ORDER = "ORDER BY seq, id"
"""A session's rows in window order (archived rows before the window that replaced them)."""
_SESSION_SELECT = """
SELECT s.*,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active = 1) AS active_count
FROM sessions s
"""
_COPIED_ON_ROTATE = (
    "conversation_id, source, user_id, session_key, chat_id, chat_type, thread_id, model, "
    "model_config, system_prompt, cwd, goal, pinned, cooldown_until, fallback_streak, "
    "ineffective_count, ineffective_tokens"
)
_TITLE_NUMBER = re.compile(r"^(.*) #(\d+)$")
_SET_TOKEN_COUNT = "UPDATE messages SET token_count = ? WHERE id = ?"  # fires no FTS trigger
_BACKGROUND_COUNT_MIN = 64
"""Batches at least this long are token-counted on a worker thread (see _BackgroundCount)."""
_MARKER_CACHE_SIZE = 256
"""Window markers kept per connection (sessions this thread works on)."""
DEFER_TRIGRAM_MIN = 256
"""Writes of at least this many messages leave their rows to the trigram catch-up (schema v2):
indexing ~230 trigrams per message would be most of a bulk append's time."""
CATCH_UP_PER_WRITE = 1_000
"""Each smaller write also indexes up to this many rows a bulk write left behind (≈50 ms), so
the trigram index catches up over the next turns without one turn paying for an import."""


def _title_base(title: str) -> str:
    """``name`` of ``name #3`` (and of ``name``)."""
    match = _TITLE_NUMBER.match(title)
    return match.group(1) if match else title


def _numbered(conn: sqlite3.Connection, base: str) -> list[tuple[int, str]]:
    """``(N, session id)`` of every session titled ``base #N``: a lineage's rotations."""
    rows = conn.execute(
        "SELECT id, title FROM sessions WHERE substr(title, 1, ?) = ?",
        (len(base) + 2, base + " #"),
    ).fetchall()
    return [
        (int(m.group(2)), sid)
        for sid, title in rows
        if (m := _TITLE_NUMBER.match(title)) and m.group(1) == base
    ]


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


def _errors(action: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Turn any sqlite3/OS error inside a store method into a user-facing StoreError."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except StoreError:
                raise
            except (sqlite3.Error, OSError) as exc:
                store = args[0]
                assert isinstance(store, SQLiteStore)
                raise _translate(store.path, exc, action) from None

        return wrapper

    return decorate


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


class _BackgroundCount:
    """Token counts of a batch, computed on a worker thread while the caller writes it.

    SQLite releases the GIL while it works (tiktoken does not: two threads counting measured
    no faster than one), so on a multi-core machine counting a large batch overlaps the FTS
    sync of its ``INSERT`` instead of following it: the rows go in with a count of 0 and get
    their real counts in the same transaction (an ``UPDATE`` of ``token_count`` fires no FTS
    trigger), so no committed row ever lacks its count.  When the caller's SQL is done it
    takes its share of what is left to count (:meth:`result`): both threads take message
    indexes from one shared counter.
    """

    __slots__ = ("_count", "_counts", "_error", "_lock", "_messages", "_next", "_thread")

    def __init__(self, count: Callable[[Message], int], messages: Sequence[Message]) -> None:
        self._count = count
        self._messages = messages
        self._counts = [0] * len(messages)
        self._next = itertools.count()
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="hermes-store-count", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        total = len(self._messages)
        try:
            while self._error is None:
                with self._lock:
                    index = next(self._next)
                if index >= total:
                    return
                self._counts[index] = self._count(self._messages[index])
        except BaseException as exc:  # re-raised in the caller's thread by result()
            self._error = exc

    def result(self) -> list[int]:
        self._work()  # the caller's thread counts what the worker has not reached yet
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._counts


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


class SQLiteStore:
    """The SQLite :class:`~hermes_host.store.base.StateStore`."""

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

    @_errors("opening the store")
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
            conn.execute(_CREATE_STAGE)
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

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------

    @staticmethod
    def _session(row: sqlite3.Row) -> Session:
        return Session(
            id=row["id"],
            created_at=row["created_at"],
            last_activity_at=row["last_activity_at"],
            source=row["source"],
            user_id=row["user_id"],
            session_key=row["session_key"],
            chat_id=row["chat_id"],
            chat_type=row["chat_type"],
            thread_id=row["thread_id"],
            model=row["model"],
            model_config=json.loads(row["model_config"] or "{}"),
            system_prompt=row["system_prompt"],
            parent_session_id=row["parent_session_id"],
            conversation_id=row["conversation_id"] or row["id"],
            title=row["title"],
            cwd=row["cwd"],
            goal=row["goal"],
            ended_at=row["ended_at"],
            end_reason=row["end_reason"],
            archived=bool(row["archived"]),
            pinned=bool(row["pinned"]),
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            reasoning_tokens=row["reasoning_tokens"],
            cost_usd=row["cost_usd"],
            compression_count=row["compression_count"],
            guards=Guards(
                row["cooldown_until"], row["fallback_streak"], row["ineffective_count"],
                row["ineffective_tokens"],
            ),
            message_count=row["message_count"],
            active_count=row["active_count"],
        )

    def _fetch_sessions(self, where: str, params: Sequence[Any]) -> list[Session]:
        cur = self._conn().cursor()
        cur.row_factory = sqlite3.Row
        return [self._session(r) for r in cur.execute(_SESSION_SELECT + where, params)]

    def _exists(self, conn: sqlite3.Connection, session_id: str) -> bool:
        return (
            conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
            is not None
        )

    def _require(self, conn: sqlite3.Connection, session_id: str) -> None:
        if not self._exists(conn, session_id):
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")

    def _check_title_free(self, conn: sqlite3.Connection, title: str, owner: str | None) -> None:
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
        if row is not None and row[0] != owner:
            raise TitleConflictError(
                f"the title {title!r} is already used by session {row[0]}; choose another"
            )

    @_errors("creating a session")
    def create_session(
        self,
        *,
        session_id: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_key: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        model_config: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        cwd: str | None = None,
        goal: str | None = None,
    ) -> Session:
        now = time.time()
        config_json = json.dumps(model_config or {}, ensure_ascii=False)
        with self._tx() as conn:
            if title is not None:
                self._check_title_free(conn, title, None)
            if parent_session_id is not None:
                self._require(conn, parent_session_id)
            sid = session_id or self._fresh_id(conn)
            if session_id is not None and self._exists(conn, session_id):
                raise StoreError(f"a session with id {session_id!r} already exists")
            conn.execute(
                "INSERT INTO sessions (id, source, user_id, session_key, chat_id, chat_type, "
                "thread_id, model, model_config, system_prompt, parent_session_id, title, cwd, "
                "goal, created_at, last_activity_at, last_activity_kind, conversation_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'created', ?)",
                (
                    sid,
                    source,
                    user_id,
                    session_key,
                    chat_id,
                    chat_type,
                    thread_id,
                    model,
                    config_json,
                    system_prompt,
                    parent_session_id,
                    title,
                    cwd,
                    goal,
                    now,
                    now,
                    sid,  # a new conversation (a branch too: it goes its own way)
                ),
            )
        return self.get_session(sid)

    def _fresh_id(self, conn: sqlite3.Connection) -> str:
        while True:
            sid = new_session_id()
            if not self._exists(conn, sid):
                return sid

    @_errors("reading a session")
    def get_session(self, session_id: str) -> Session:
        found = self._fetch_sessions("WHERE s.id = ?", (session_id,))
        if not found:
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
        return found[0]

    @_errors("listing sessions")
    def list_sessions(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Session]:
        clauses: list[str] = []
        params: list[Any] = []
        if not include_archived:
            clauses.append("s.archived = 0")
        if source is not None:
            clauses.append("s.source = ?")
            params.append(source)
        if user_id is not None:
            clauses.append("s.user_id = ?")
            params.append(user_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
        return self._fetch_sessions(where, params)

    @_errors("listing conversations")
    def list_conversations(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        include_archived: bool = False,
        source: str | None = None,
        user_id: str | None = None,
    ) -> list[Conversation]:
        clauses = [  # the newest session of its conversation: no rotation child of its own
            "NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id "
            "AND c.conversation_id = s.conversation_id)"
        ]
        params: list[Any] = []
        if not include_archived:
            clauses.append("s.archived = 0")
        if source is not None:
            clauses.append("s.source = ?")
            params.append(source)
        if user_id is not None:
            clauses.append("s.user_id = ?")
            params.append(user_id)
        where = "WHERE " + " AND ".join(clauses)
        where += " ORDER BY s.last_activity_at DESC, s.created_at DESC LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
        found: list[Conversation] = []
        conn = self._conn()
        for tip in self._fetch_sessions(where, params):
            cid = tip.conversation_id or tip.id
            sessions, messages, tokens_in, tokens_out = conn.execute(
                "SELECT count(*), (SELECT count(*) FROM messages m JOIN sessions x "
                "ON x.id = m.session_id WHERE x.conversation_id = ?), "
                "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
                "FROM sessions WHERE conversation_id = ?",
                (cid, cid),
            ).fetchone()
            found.append(
                Conversation(cid, tip, max(1, sessions), messages, tokens_in, tokens_out)
            )
        return found

    @_errors("updating a session")
    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        cwd: str | None = None,
        goal: str | None = None,
        model: str | None = None,
        model_config: dict[str, Any] | None = None,
        archived: bool | None = None,
        pinned: bool | None = None,
    ) -> Session:
        changes: dict[str, Any] = {}
        for column, value in (("title", title), ("cwd", cwd), ("goal", goal), ("model", model)):
            if value is not None:
                changes[column] = value
        if model_config is not None:
            changes["model_config"] = json.dumps(model_config, ensure_ascii=False)
        if archived is not None:
            changes["archived"] = int(archived)
        if pinned is not None:
            changes["pinned"] = int(pinned)
        with self._tx() as conn:
            self._require(conn, session_id)
            if title is not None:
                self._check_title_free(conn, title, session_id)
            if changes:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(
                    f"UPDATE sessions SET {sets} WHERE id = ?", (*changes.values(), session_id)
                )
        return self.get_session(session_id)

    @_errors("ending a session")
    def end_session(self, session_id: str, reason: str) -> None:
        now = time.time()
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ?, last_activity_at = ?, "
                "last_activity_kind = 'ended' WHERE id = ?",
                (now, reason, now, session_id),
            )
            if cur.rowcount == 0:
                raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")

    @_errors("reading a lineage")
    def lineage(self, session_id: str) -> list[str]:
        ids = lineage_ids(self._conn(), session_id)
        if not ids:
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
        return ids

    # -- messages ---------------------------------------------------------------------------

    @staticmethod
    def _count(message: Message) -> int:
        try:
            return count_message(message)
        except Exception:  # a message tiktoken cannot encode still gets an estimate
            return 4 + math.ceil(len(json.dumps(message, default=str)) / 4)

    def _prepare(
        self,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None,
        known: dict[tuple[Any, ...], int] | None = None,
        *,
        count: bool = True,
    ) -> list[tuple[int, tuple[Any, ...]]]:
        """Encode and count outside the write transaction (it holds the lock meanwhile).
        ``known`` maps already-stored rows (their column values) to their token count, so a
        published window does not re-tokenize the tail it kept.  ``count=False`` leaves the
        counts at 0 for a caller that counts elsewhere (:class:`_BackgroundCount`)."""
        if isinstance(messages, dict | str | bytes):
            raise StoreError("messages must be a list of message objects")
        if token_counts is not None and len(token_counts) != len(messages):
            raise StoreError(f"got {len(token_counts)} token counts for {len(messages)} messages")
        prepared = []
        for index, message in enumerate(messages):
            values = encode_message(message, index).values
            if token_counts is None and not count:
                tokens = 0
            elif token_counts is None:
                stored = known.get(values) if known else None
                tokens = stored if stored is not None else self._count(message)
            else:
                tokens = token_counts[index]
                if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
                    raise StoreError(f"message {index}: token count must be an int >= 0")
            prepared.append((tokens, values))
        return prepared

    def _window_counts(self, session_id: str, size: int) -> dict[tuple[Any, ...], int]:
        """Token counts of the window's head and tail rows (``size`` each: a compressed
        window keeps a head and a tail), keyed by their column values."""
        known: dict[tuple[Any, ...], int] = {}
        for order in ("ASC", "DESC"):
            rows = self._conn().execute(
                f"SELECT token_count, {_MSG_COLS} FROM messages "
                f"WHERE session_id = ? AND active = 1 ORDER BY seq {order} LIMIT ?",
                (session_id, size),
            )
            known.update((tuple(row[1:]), row[0]) for row in rows)
        return known

    @staticmethod
    def _insert(
        conn: sqlite3.Connection,
        session_id: str,
        prepared: list[tuple[int, tuple[Any, ...]]],
        now: float,
        *,
        count_later: Sequence[Message] | None = None,
        positions: Sequence[int] | None = None,
        base: int | None = None,
    ) -> list[int]:
        """Insert ``prepared`` rows in order; returns their ids.  With ``count_later`` the
        rows were prepared with a count of 0: their messages are counted on a worker thread
        while the one ``INSERT … SELECT`` runs (it releases the GIL for the whole FTS sync;
        starting earlier would make every staged row wait for the GIL), then set here.
        Row *i* gets the window order ``base + positions[i] + 1`` (ascending positions;
        by default right after the session's last row)."""
        if not prepared:
            return []
        if base is None:
            base = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
        where = range(len(prepared)) if positions is None else positions
        start = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.execute("DELETE FROM temp.message_stage")
        conn.executemany(
            _STAGE_MESSAGE,
            ((pos + 1, tokens, *values) for pos, (tokens, values) in zip(where, prepared,
                                                                          strict=True)),
        )
        counting = None
        if count_later is not None:
            counting = _BackgroundCount(SQLiteStore._count, count_later)
        conn.execute(_MOVE_STAGED, (session_id, now, base))
        conn.execute("DELETE FROM temp.message_stage")
        end = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
        if end - start == len(prepared):
            ids = list(range(start + 1, end + 1))
        else:
            rows = conn.execute(  # rowids were not consecutive (only near the 2**63 limit)
                "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, start),
            ).fetchall()
            ids = [r[0] for r in rows]
        if counting is not None:
            conn.executemany(_SET_TOKEN_COUNT, zip(counting.result(), ids, strict=True))
        if len(prepared) < DEFER_TRIGRAM_MIN:
            catch_up_trigram(conn, len(prepared) + CATCH_UP_PER_WRITE)
        return ids

    @_errors("appending messages")
    def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None = None,
    ) -> list[int]:
        count_later = (
            token_counts is None
            and not isinstance(messages, dict | str | bytes)
            and len(messages) >= _BACKGROUND_COUNT_MIN
            and (os.cpu_count() or 1) > 1
        )
        prepared = self._prepare(messages, token_counts, count=not count_later)
        now = time.time()
        markers = self._markers()
        with self._tx() as conn:
            # Inside the write lock: the cached marker is current iff nothing changed since
            # it was computed; then this append's marker follows from it (no recount).
            version = self._version(conn)
            cur = conn.execute(
                "UPDATE sessions SET last_activity_at = ?, last_activity_kind = 'message' "
                "WHERE id = ? AND coalesce(end_reason, '') <> 'compression'",
                (now, session_id),
            )
            if cur.rowcount == 0:
                self._require(conn, session_id)
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was written"))
            ids = self._insert(
                conn, session_id, prepared, now, count_later=messages if count_later else None
            )
        # The markers cached before this append stay right (this session's follow from it),
        # so a process serving many sessions does not recount each one after the others'
        # appends; any marker cached before another change is dropped.
        after = (version[0], conn.total_changes)
        for key, (seen, marker) in list(markers.items()):
            if seen != version:
                del markers[key]
            elif marker.session_id == session_id:
                markers[key] = (after, WindowMarker(
                    session_id, max([marker.last_message_id, *ids]),
                    marker.active_count + len(ids)))
            else:
                markers[key] = (after, marker)
        return ids

    @_errors("reading the window")
    def window_marker(self, session_id: str) -> WindowMarker:
        conn = self._conn()
        # Unchanged since this connection last computed it (no commit by any other
        # connection, no change through this one): the same marker, without counting the
        # window (issue 15: an append must not cost O(window)).  The version is read before
        # the queries, so a commit landing in between only makes the next call recompute.
        version = self._version(conn)
        cached = self._markers().get(session_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        tip = session_id
        for _ in range(2):  # a second pass only after following a rotation
            row = conn.execute(
                "SELECT end_reason, "
                "(SELECT coalesce(max(id), 0) FROM messages WHERE session_id = s.id), "
                "(SELECT count(*) FROM messages WHERE session_id = s.id AND active = 1) "
                "FROM sessions s WHERE s.id = ?",
                (tip,),
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(f"no session with id {tip!r} in {self.path}")
            if row[0] != "compression" or tip != session_id:
                break
            tip = self._tip(conn, session_id)
        marker = WindowMarker(session_id=tip, last_message_id=int(row[1]),
                              active_count=int(row[2]))
        markers = self._markers()
        if len(markers) >= _MARKER_CACHE_SIZE:
            markers.pop(next(iter(markers)))  # the oldest entry
        markers[session_id] = (version, marker)
        return marker

    @staticmethod
    def _version(conn: sqlite3.Connection) -> tuple[int, int]:
        """Changes when anything may have changed the file: another connection committed
        (``PRAGMA data_version``) or this one changed rows (``total_changes``)."""
        return conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes

    def _markers(self) -> dict[str, tuple[tuple[int, int], WindowMarker]]:
        """This thread's connection's cache of :meth:`window_marker` answers."""
        markers: dict[str, tuple[tuple[int, int], WindowMarker]] | None = getattr(
            self._local, "markers", None)
        if markers is None:
            markers = self._local.markers = {}
        return markers

    @_errors("reading the window")
    def active_messages(self, session_id: str) -> list[Message]:
        conn = self._conn()
        rows = conn.execute(
            f"SELECT {_MSG_COLS} FROM messages WHERE session_id = ? AND active = 1 "
            + _WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        if not rows:
            self._require(conn, session_id)
        return [decode_row(r) for r in rows]

    @_errors("counting window tokens")
    def active_token_count(self, session_id: str) -> int:
        conn = self._conn()
        self._require(conn, session_id)
        row = conn.execute(
            "SELECT coalesce(sum(token_count), 0) FROM messages "
            "WHERE session_id = ? AND active = 1",
            (session_id,),
        ).fetchone()
        return int(row[0])

    @_errors("reading messages")
    def all_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        conn = self._conn()
        self._require(conn, session_id)
        active = "" if include_inactive else " AND active = 1"
        rows = conn.execute(
            f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id = ?{active} "
            + _WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        return [stored_from_row(r) for r in rows]

    @_errors("reading lineage messages")
    def lineage_messages(
        self, session_id: str, *, include_inactive: bool = True
    ) -> list[StoredMessage]:
        """Every row of the lineage (root first), in order — what a history reader sees."""
        ids = self.lineage(session_id)
        marks = ", ".join("?" * len(ids))
        active = "" if include_inactive else " AND active = 1"
        rows = (
            self._conn()
            .execute(
                f"SELECT {STORED_COLUMNS} FROM messages WHERE session_id IN ({marks}){active} "
                "ORDER BY id",
                ids,
            )
            .fetchall()
        )
        return [stored_from_row(r) for r in rows]

    # -- guards and usage -------------------------------------------------------------------

    @_errors("reading guards")
    def read_guards(self, session_id: str) -> Guards:
        row = (
            self._conn()
            .execute(
                "SELECT cooldown_until, fallback_streak, ineffective_count, ineffective_tokens "
                "FROM sessions WHERE id = ?",
                (session_id,),
            )
            .fetchone()
        )
        if row is None:
            raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
        return Guards(row[0], row[1], row[2], row[3])

    @_errors("writing guards")
    def write_guards(self, session_id: str, guards: Guards) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET cooldown_until = ?, fallback_streak = ?, "
                "ineffective_count = ?, ineffective_tokens = ? WHERE id = ?",
                (
                    guards.cooldown_until,
                    int(guards.fallback_streak),
                    int(guards.ineffective_count),
                    None if guards.ineffective_tokens is None else int(guards.ineffective_tokens),
                    session_id,
                ),
            )
            if cur.rowcount == 0:
                raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")

    @_errors("recording usage")
    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?, "
                "cache_write_tokens = cache_write_tokens + ?, "
                "reasoning_tokens = reasoning_tokens + ?, cost_usd = cost_usd + ? "
                "WHERE id = ?",
                (
                    int(input_tokens),
                    int(output_tokens),
                    int(cache_read_tokens),
                    int(cache_write_tokens),
                    int(reasoning_tokens),
                    float(cost_usd),
                    session_id,
                ),
            )
            if cur.rowcount == 0:
                raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")

    # -- leases -----------------------------------------------------------------------------

    def _ttl(self, ttl: float | None) -> float:
        value = self.lease_ttl if ttl is None else float(ttl)
        if not value > 0:
            raise StoreError(f"a lease TTL must be > 0 seconds, got {ttl!r}")
        return value

    @_errors("acquiring the compression lease")
    def acquire_lease(self, session_id: str, ttl: float | None = None) -> Lease | Deferred:
        seconds = self._ttl(ttl)
        holder = make_holder()
        with self._tx() as conn:
            now = time.time()
            row = conn.execute(
                "SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is not None and row[1] > now and not holder_is_dead(row[0]):
                return Deferred(session_id=session_id, holder=row[0], expires_at=row[1])
            self._require(conn, session_id)
            conn.execute(
                "INSERT OR REPLACE INTO compression_locks (session_id, holder, acquired_at, "
                "expires_at) VALUES (?, ?, ?, ?)",
                (session_id, holder, now, now + seconds),
            )
        return Lease(session_id, holder, now, now + seconds)

    @_errors("refreshing the compression lease")
    def refresh_lease(self, lease: Lease, ttl: float | None = None) -> Lease:
        seconds = self._ttl(ttl)
        with self._tx() as conn:
            now = time.time()
            cur = conn.execute(
                "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
                (now + seconds, lease.session_id, lease.holder),
            )
            if cur.rowcount == 0:
                raise LeaseLostError(self._lost_message(conn, lease, "refresh it"))
        return Lease(lease.session_id, lease.holder, lease.acquired_at, now + seconds)

    @_errors("releasing the compression lease")
    def release_lease(self, lease: Lease) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                (lease.session_id, lease.holder),
            )
            return cur.rowcount > 0

    @staticmethod
    def _lost_message(conn: sqlite3.Connection, lease: Lease, doing: str) -> str:
        row = conn.execute(
            "SELECT holder FROM compression_locks WHERE session_id = ?", (lease.session_id,)
        ).fetchone()
        now_held = f"now held by {row[0]}" if row else "now held by nobody"
        return (
            f"the compression lease of session {lease.session_id} is no longer held by "
            f"{lease.holder} ({now_held}); could not {doing}, nothing was changed"
        )

    # -- compression ------------------------------------------------------------------------

    @_errors("publishing a compression")
    def publish_compression(
        self,
        lease: Lease,
        session_id: str,
        new_messages: Sequence[Message],
        mode: PublishMode = "rotate",
        reason: str = "compression",
        token_counts: Sequence[int] | None = None,
        snapshot: WindowMarker | None = None,
    ) -> PublishResult:
        if mode not in ("rotate", "in_place"):
            raise StoreError(f"unknown publish mode {mode!r}; allowed: rotate, in_place")
        known = None
        if token_counts is None and not isinstance(new_messages, dict | str | bytes):
            known = self._window_counts(session_id, len(new_messages))
        prepared = self._prepare(new_messages, token_counts, known)
        with self._tx() as conn:
            now = time.time()
            held = conn.execute(
                "SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            if lease.session_id != session_id or held is None or held[0] != lease.holder:
                raise LeaseLostError(self._lost_message(conn, lease, "publish the compression"))
            row = conn.execute(
                "SELECT parent_session_id, title, end_reason FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(f"no session with id {session_id!r} in {self.path}")
            parent_id, title, end_reason = row
            if end_reason == "compression":
                raise StaleSessionError(self._rotated(conn, session_id, "nothing was published"))
            read, later = self._window_since(conn, session_id, snapshot)
            # A proposed message equal to a row of the window it read is that row: kept, not
            # copied.  Each row is used once, in window order.
            pool: dict[tuple[Any, ...], list[int]] = {}
            for row in read:
                pool.setdefault(tuple(row[2:]), []).append(row[0])
            window: list[int | None] = []
            fresh: list[tuple[int, tuple[Any, ...]]] = []
            fresh_at: list[int] = []
            for position, (tokens, encoded) in enumerate(prepared):
                same = pool.get(encoded)
                window.append(same.pop(0) if same else None)
                if window[-1] is None:
                    fresh.append((tokens, encoded))
                    fresh_at.append(position)
            kept = {row_id for row_id in window if row_id is not None}
            replaced = [(r[0],) for r in read if r[0] not in kept]
            # Only a compression marks rows compacted; other rewrites of the window
            # (``/undo``) archive rows without claiming they were compacted.
            compacted = 1 if reason == "compression" else 0
            target = session_id if mode == "in_place" else self._fresh_id(conn)
            child_title = title
            if mode == "rotate":
                child_title = self._next_title(conn, title) if title else None
                conn.execute(
                    f"INSERT INTO sessions (id, parent_session_id, title, created_at, "
                    f"last_activity_at, last_activity_kind, compression_count, "
                    f"{_COPIED_ON_ROTATE}) SELECT ?, id, ?, ?, ?, 'compression', "
                    f"compression_count + 1, {_COPIED_ON_ROTATE} FROM sessions WHERE id = ?",
                    (target, child_title, now, now, session_id),
                )
                conn.execute(
                    "INSERT INTO engine_state (session_id, engine, state, updated_at) "
                    "SELECT ?, engine, state, updated_at FROM engine_state WHERE session_id = ?",
                    (target, session_id),
                )
            base = 0
            if mode == "in_place":  # the new window orders after every row of the session
                base = conn.execute(
                    "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?",
                    (session_id,),
                ).fetchone()[0]
            written = iter(self._insert(conn, target, fresh, now, positions=fresh_at, base=base))
            ids = [row_id if row_id is not None else next(written) for row_id in window]
            moved = [
                (target, base + position + 1, row_id)
                for position, row_id in enumerate(ids)
                if row_id in kept
            ]
            moved += [(target, base + len(ids) + j + 1, r[0]) for j, r in enumerate(later)]
            order = {r[0]: r[1] for r in read}
            if mode == "in_place" and not fresh and window == sorted(kept, key=order.__getitem__):
                moved = []  # rows only left the window (``/undo``): the rest stays in order
            conn.executemany("UPDATE messages SET session_id = ?, seq = ? WHERE id = ?", moved)
            conn.executemany(
                f"UPDATE messages SET active = 0, compacted = {compacted} WHERE id = ?", replaced
            )
            if mode == "in_place":
                conn.execute(
                    "UPDATE sessions SET compression_count = compression_count + ?, "
                    "last_activity_at = ?, last_activity_kind = ? WHERE id = ?",
                    (compacted, now, reason, session_id),
                )
            else:
                conn.execute(
                    "UPDATE sessions SET ended_at = ?, end_reason = ?, last_activity_at = ?, "
                    "last_activity_kind = 'compression' WHERE id = ?",
                    (now, reason, now, session_id),
                )
            return PublishResult(
                session_id=target,
                parent_session_id=parent_id if mode == "in_place" else session_id,
                message_ids=ids,
                mode=mode,
                title=child_title,
                flush_baseline=len(prepared),
                carried=[decode_row(r[2:]) for r in later],
                carried_ids=[r[0] for r in later],
            )

    def _window_since(
        self, conn: sqlite3.Connection, session_id: str, snapshot: WindowMarker | None
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The window's rows ``(id, seq, *columns)`` split into those the ``snapshot`` saw
        and those appended after it; :class:`StaleWindowError` when rows it saw are gone."""
        rows = conn.execute(
            f"SELECT id, seq, {_MSG_COLS} FROM messages WHERE session_id = ? AND active = 1 "
            + _WINDOW_ORDER,
            (session_id,),
        ).fetchall()
        if snapshot is None:
            return rows, []
        read = [r for r in rows if r[0] <= snapshot.last_message_id]
        later = [r for r in rows if r[0] > snapshot.last_message_id]
        if snapshot.session_id != session_id or len(read) != snapshot.active_count:
            raise StaleWindowError(
                f"the window of session {session_id} changed since the compression read it "
                f"({snapshot.active_count} messages then, {len(read)} of them still there); "
                "nothing was published"
            )
        return read, later

    def _rotated(self, conn: sqlite3.Connection, session_id: str, outcome: str) -> str:
        """Why a session a compression rotated takes no more writes."""
        child = self._tip(conn, session_id)
        into = child if child != session_id else "a child session"
        return (
            f"session {session_id} was already compressed into {into} (work on the newest "
            f"session: resume follows rotations); {outcome}"
        )

    @staticmethod
    def _next_title(conn: sqlite3.Connection, title: str) -> str:
        """``name`` → ``name #2`` → ``name #3`` (R-8.1), skipping numbers already taken."""
        base = _title_base(title)
        return f"{base} #{max((n for n, _ in _numbered(conn, base)), default=1) + 1}"

    # -- search -----------------------------------------------------------------------------

    @_errors("indexing for substring search")
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

    @_errors("reading the search index state")
    def pending_index_rows(self) -> int:
        """Messages written but not yet in the trigram index (see :meth:`index_pending`)."""
        return pending_trigram_rows(self._conn())

    @_errors("searching")
    def session_search(
        self,
        query: str,
        session_id: str | None = None,
        lineage: bool = True,
        limit: int = 10,
        *,
        bookends: int = BOOKEND_MESSAGES,
    ) -> list[SearchHit]:
        limit = max(1, min(int(limit), 500))
        scope: list[str] | None = None
        if session_id is not None:
            scope = self.lineage(session_id) if lineage else [session_id]
            if not lineage:
                self._require(self._conn(), session_id)
        return run_search(self._conn(), query, scope, limit, bookends)

    # -- resume -----------------------------------------------------------------------------

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

    @_errors("resuming a session")
    def resume(self, by: str) -> Session:
        conn = self._conn()
        key = by.strip()
        if key in ("last", "-c", "continue"):
            row = conn.execute(
                "SELECT id FROM sessions WHERE archived = 0 "
                "ORDER BY last_activity_at DESC, created_at DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(f"there are no sessions to continue in {self.path}")
            return self.get_session(self._tip(conn, row[0]))
        if self._exists(conn, key):
            return self.get_session(key)
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (key,)).fetchone()
        if row is None:
            numbered = _numbered(conn, _title_base(key))
            if not numbered:
                raise SessionNotFoundError(
                    f"no session with id or title {by!r} in {self.path}; "
                    "`hermes-host sessions list` shows what exists"
                )
            row = (max(numbered)[1],)
        return self.get_session(self._tip(conn, row[0]))

    @_errors("building a recap")
    def recap(self, session_id: str) -> str:
        session = self.get_session(session_id)
        return format_recap(session, self.active_messages(session_id))

    @_errors("opening a history reader")
    def history_reader(self, session_id: str) -> HistoryReader:
        self._require(self._conn(), session_id)  # exists? (get_session counts every row)
        return SQLiteHistoryReader(self.path, session_id)  # its own read-only connection

    # -- engine state -----------------------------------------------------------------------

    @_errors("reading engine state")
    def get_engine_state(self, session_id: str, engine: str) -> dict[str, Any]:
        row = (
            self._conn()
            .execute(
                "SELECT state FROM engine_state WHERE session_id = ? AND engine = ?",
                (session_id, engine),
            )
            .fetchone()
        )
        return dict(json.loads(row[0])) if row else {}

    @_errors("writing engine state")
    def set_engine_state(self, session_id: str, engine: str, state: dict[str, Any]) -> None:
        try:
            text = json.dumps(state, ensure_ascii=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(
                f"engine {engine!r} returned state that is not JSON-serialisable: {exc}"
            ) from None
        with self._tx() as conn:
            self._require(conn, session_id)
            conn.execute(
                "INSERT OR REPLACE INTO engine_state (session_id, engine, state, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, engine, text, time.time()),
            )
