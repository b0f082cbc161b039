"""The SQLite schema (SPEC R-9.1–R-9.4) and its versioned migrations.

The schema version is SQLite's ``PRAGMA user_version``.  ``MIGRATIONS`` is an ordered list:
migration *N* turns a version *N-1* database into version *N*.  Opening a store runs every
missing migration in **one** ``BEGIN IMMEDIATE`` transaction (``user_version`` is
transactional, so a failed migration leaves the old version and the old data), after copying a
non-empty database to ``<name>.v<old>-<timestamp>.bak`` with SQLite's online backup.  A
database whose version is newer than ``LATEST_VERSION`` is refused: guessing at a future
schema could damage it.

To change the schema, append a :class:`Migration`; never edit a released one.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from hermes_host.store.base import SchemaTooNewError, StoreError
from hermes_host.store.sqlite.fts import pending_trigram_rows

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "inspect_store",
    "migrate",
    "split_statements",
]


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str


_V1 = """
CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    source              TEXT,
    user_id             TEXT,
    session_key         TEXT,
    chat_id             TEXT,
    chat_type           TEXT,
    thread_id           TEXT,
    model               TEXT,
    model_config        TEXT NOT NULL DEFAULT '{}',
    system_prompt       TEXT,
    parent_session_id   TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    title               TEXT UNIQUE,
    cwd                 TEXT,
    goal                TEXT,
    created_at          REAL NOT NULL,
    ended_at            REAL,
    end_reason          TEXT,
    last_activity_at    REAL NOT NULL,
    last_activity_kind  TEXT,
    archived            INTEGER NOT NULL DEFAULT 0,
    pinned              INTEGER NOT NULL DEFAULT 0,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    cost_usd            REAL NOT NULL DEFAULT 0,
    compression_count   INTEGER NOT NULL DEFAULT 0,
    cooldown_until      REAL,
    fallback_streak     INTEGER NOT NULL DEFAULT 0,
    ineffective_count   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_activity ON sessions(last_activity_at);

CREATE TABLE messages (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role                TEXT NOT NULL,
    content             TEXT,
    tool_calls          TEXT,
    tool_name           TEXT,
    tool_call_id        TEXT,
    token_count         INTEGER NOT NULL DEFAULT 0,
    timestamp           REAL NOT NULL,
    finish_reason       TEXT,
    active              INTEGER NOT NULL DEFAULT 1,
    compacted           INTEGER NOT NULL DEFAULT 0,
    api_content         TEXT,
    reasoning           TEXT,
    reasoning_details   TEXT,
    platform_message_id TEXT,
    observed            INTEGER,
    extra               TEXT
);
CREATE INDEX messages_session ON messages(session_id);
CREATE INDEX messages_window ON messages(session_id) WHERE active = 1;

-- Porter-stemmed word index over every row (tool rows included: their output is history).
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, tool_name, tool_calls,
    content='messages', content_rowid='id', tokenize='porter unicode61'
);

-- Substring (trigram) index; tool rows are excluded through its source view (R-9.3).
CREATE VIEW messages_fts_trigram_source AS
    SELECT id, content FROM messages WHERE role <> 'tool';
CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(
    content, content='messages_fts_trigram_source', content_rowid='id', tokenize='trigram'
);

-- Sync triggers fire only when indexed columns change: archiving (active=0) costs no FTS work.
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    INSERT INTO messages_fts_trigram(rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool';
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool';
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, role, tool_name, tool_calls
ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool';
    INSERT INTO messages_fts_trigram(rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool';
END;

CREATE TABLE compression_locks (
    session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    holder      TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at  REAL NOT NULL
);

CREATE TABLE engine_state (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    engine      TEXT NOT NULL,
    state       TEXT NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (session_id, engine)
) WITHOUT ROWID;
"""

_V2 = """
-- The substring (trigram) index follows the word index instead of being written row by row
-- with it: it costs 4x the word index per message, and a bulk append (an import, a large
-- publish) should not pay it inside its transaction.  Rows with id <= indexed_through are in
-- messages_fts_trigram; newer ones are indexed by a later write (SQLiteStore._catch_up) and
-- found by a scan in the meantime, so a committed row is searchable by substring at once.
CREATE TABLE trigram_progress (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
);
INSERT INTO trigram_progress (id, indexed_through)
    SELECT 1, coalesce(max(id), 0) FROM messages;

-- The index's content is exactly what it has indexed, so FTS5's integrity-check and rebuild
-- stay meaningful while rows wait above the mark.
DROP VIEW messages_fts_trigram_source;
CREATE VIEW messages_fts_trigram_source AS
    SELECT id, content FROM messages
    WHERE role <> 'tool' AND id <= (SELECT indexed_through FROM trigram_progress);

-- A row above the mark is not in the trigram index: deleting it there would corrupt it.  A
-- row inserted at or below the mark (an id reused after the newest row was deleted) is
-- indexed at once, since catching up only looks above the mark.
DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    INSERT INTO messages_fts_trigram(rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool'
        AND new.id <= (SELECT indexed_through FROM trigram_progress);
END;
DROP TRIGGER messages_fts_delete;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool'
        AND old.id <= (SELECT indexed_through FROM trigram_progress);
END;
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, role, tool_name, tool_calls
ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
        VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
        VALUES (new.id, new.content, new.tool_name, new.tool_calls);
    INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool'
        AND old.id <= (SELECT indexed_through FROM trigram_progress);
    INSERT INTO messages_fts_trigram(rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool'
        AND new.id <= (SELECT indexed_through FROM trigram_progress);
END;
"""

_V3 = """
-- One conversation across rotations: every session of a lineage made by compression carries
-- the id of its root (the id a framework's own session id maps to).  A branch (/branch) or
-- an import starts a conversation of its own.  Existing rotations are recognised by their
-- link: the child was created in the transaction that ended its parent with 'compression'.
ALTER TABLE sessions ADD COLUMN conversation_id TEXT;
WITH RECURSIVE conv(id, cid) AS (
    SELECT s.id, s.id FROM sessions s
    WHERE NOT EXISTS (
        SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id
        AND p.end_reason = 'compression' AND p.ended_at = s.created_at)
    UNION ALL
    SELECT s.id, conv.cid FROM sessions s
    JOIN conv ON s.parent_session_id = conv.id
    JOIN sessions p ON p.id = s.parent_session_id
    WHERE p.end_reason = 'compression' AND p.ended_at = s.created_at
)
UPDATE sessions SET conversation_id = (SELECT cid FROM conv WHERE conv.id = sessions.id);
UPDATE sessions SET conversation_id = id WHERE conversation_id IS NULL;
CREATE INDEX sessions_conversation ON sessions(conversation_id);

-- A window's order is its own column: a rotation moves the rows the new window keeps into
-- the child (same ids, stored once) instead of copying them, so the child's order (kept
-- head, summary, kept tail, later appends) is no longer the order of the ids.
ALTER TABLE messages ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET seq = id;
CREATE INDEX messages_order ON messages(session_id, seq);
"""

_V4 = """
-- The window's tokens at the last ineffective compression attempt: anti-thrash re-arms once
-- the window has grown materially past it (hermes_host.guards.rearmed).
ALTER TABLE sessions ADD COLUMN ineffective_tokens INTEGER;
"""

_V5 = """
-- What the model received (issue 29): one manifest per model call.  ``entries`` lists the
-- request's messages as row ids (runs of ids as first-last) and, for anything not stored as
-- a row (system prompt, injections, select_context additions, condensed or merged forms),
-- '#'+hash of a request_parts row: ids and hashes, never copies.
CREATE TABLE requests (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at          REAL NOT NULL,
    entries             TEXT NOT NULL,
    tokens              INTEGER NOT NULL,
    prefix_tokens       INTEGER NOT NULL DEFAULT 0,
    details             TEXT NOT NULL DEFAULT '{}',
    input_tokens        INTEGER,
    output_tokens       INTEGER,
    cache_read_tokens   INTEGER,
    cache_write_tokens  INTEGER
);
CREATE INDEX requests_session ON requests(session_id, id);

-- Content-addressed request parts, stored once however many requests carry them.
CREATE TABLE request_parts (
    hash        TEXT PRIMARY KEY,
    message     TEXT NOT NULL,
    tokens      INTEGER NOT NULL
) WITHOUT ROWID;

-- One receipt per compression attempt that reached an engine (CompactionReceipt as JSON).
CREATE TABLE compactions (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    result_session_id   TEXT,
    created_at          REAL NOT NULL,
    status              TEXT NOT NULL,
    receipt             TEXT NOT NULL
);
CREATE INDEX compactions_session ON compactions(session_id, id);
"""

MIGRATIONS: list[Migration] = [
    Migration(1, "sessions, messages, FTS5 (porter + trigram), compression_locks", _V1),
    Migration(2, "the trigram index catches up after bulk writes (trigram_progress)", _V2),
    Migration(3, "conversation ids across rotations; window order (seq) for rows kept once", _V3),
    Migration(4, "sessions.ineffective_tokens: the window size anti-thrash re-arms from", _V4),
    Migration(5, "request manifests, request parts and compaction receipts (issue 29)", _V5),
]

LATEST_VERSION = MIGRATIONS[-1].version


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole).

    ``executescript`` would commit the surrounding transaction, so migrations run statement
    by statement inside one ``BEGIN IMMEDIATE``.
    """
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer[:80]!r}")
    return statements


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _backup(conn: sqlite3.Connection, path: Path, version: int) -> Path:
    stamp = time.strftime("%Y%m%d_%H%M%S")
    target = path.with_name(f"{path.name}.v{version}-{stamp}.bak")
    fd = os.open(target, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    os.close(fd)
    dest = sqlite3.connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()
    return target


def migrate(
    conn: sqlite3.Connection, path: Path, migrations: list[Migration] | None = None
) -> Path | None:
    """Bring the database to the newest version; returns the backup path if one was made.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    steps = MIGRATIONS if migrations is None else migrations
    latest = steps[-1].version
    current = _version(conn)
    if current > latest:
        raise SchemaTooNewError(
            f"{path}: this store has schema version {current}, but this hermes-host "
            f"understands versions up to {latest}; upgrade hermes-host (the file was left "
            "unchanged)"
        )
    if current == latest:
        return None
    backup = _backup(conn, path, current) if current > 0 else None
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _version(conn)  # another process may have migrated while we waited
        for step in steps:
            if step.version <= current:
                continue
            for statement in split_statements(step.sql):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(step.version)}")
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            where = f"; a backup is at {backup}" if backup else ""
            raise StoreError(
                f"{path}: migrating the store to schema version {latest} failed ({exc}); "
                f"the store was left at version {current}{where}"
            ) from None
        raise
    return backup


def inspect_store(path: Path) -> dict[str, int]:
    """What ``doctor`` reports about an existing store, read-only (nothing is migrated or
    created): ``version``, ``sessions``, ``messages`` and ``index_pending`` (messages the
    trigram index has not reached yet; 0 before version 2, whose index was always current).

    Raises :class:`SchemaTooNewError` for a store from a newer hermes-host and
    :class:`StoreError` for a file that is not a readable hermes-host store."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open read-only: {exc}") from None
    try:
        version = _version(conn)
        if version > LATEST_VERSION:
            raise SchemaTooNewError(
                f"{path}: schema version {version} is newer than this hermes-host understands "
                f"(up to {LATEST_VERSION}); upgrade hermes-host"
            )
        if version == 0:
            return {"version": 0, "sessions": 0, "messages": 0, "index_pending": 0}
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        pending = pending_trigram_rows(conn) if version >= 2 else 0
        return {
            "version": version,
            "sessions": int(sessions),
            "messages": int(messages),
            "index_pending": int(pending),
        }
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: not a hermes-host store ({exc})") from None
    finally:
        conn.close()
