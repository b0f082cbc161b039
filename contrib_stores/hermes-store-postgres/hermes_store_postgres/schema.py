"""The PostgreSQL schema (SPEC R-9.1–R-9.4, PostgreSQL's own features) and its versioned
migrations.

``schema_version`` in the store's schema records every applied migration.  Opening a store
runs the missing ones in **one** transaction under a transaction-scoped advisory lock, so
hosts starting together migrate once and a failed migration leaves the old version.  A
schema newer than :data:`LATEST_VERSION` is refused (:class:`SchemaTooNewError`).

Search: ``messages.search_vector`` is a ``tsvector`` column (English stemming) with a GIN
index — the word index; a GIN ``pg_trgm`` index on ``content`` restricted to non-tool rows
is the substring index (SPEC R-9.3: tool rows are not in it).  The vector is computed by the
statement that inserts the row (:data:`SEARCH_VECTOR`), not declared ``GENERATED ALWAYS …
STORED``: PostgreSQL recomputes a stored generated column on *every* ``UPDATE`` of its row,
so archiving the 10,000 rows a compression replaced would re-parse 10,000 messages (measured
≈ 0.3 ms each).  A message's content is never updated (rows are stored once), so the vector
cannot go stale.  ``fillfactor = 50`` leaves room on each page for those flag updates to stay
HOT (heap-only: no index entries rewritten).  Without it, archiving a row writes it anew
into both GIN indexes (publish of a 2,000-message session: 629 ms with fillfactor 85, 27 ms
with 50, measured side by side); the price is about twice the table's disk space.

Bulk writes (schema v2): a batch of at least ``DEFER_INDEX_MIN`` rows goes in with
``search_vector`` NULL — *pending* — and is in neither search index (the substring index is
restricted to rows whose vector is set); maintaining both GIN indexes synchronously was
≈ 85 % of a bulk append's time.  The catch-up (:mod:`.indexing`) fills the vectors, which
puts the rows into both indexes; ``messages_unindexed`` (a partial index, empty in steady
state) finds the pending rows.  Searches also scan the pending rows, so a committed row is
always found.

``pg_trgm`` is an extension, created once per database by an administrator
(``CREATE EXTENSION pg_trgm;``); the store's role needs no privilege beyond owning its
schema.  To change the schema, append a :class:`Migration`; never edit a released one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from hermes_host.store import SchemaTooNewError, StoreError

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "SEARCH_VECTOR",
    "Migration",
    "migrate",
    "schema_version",
]

SEARCH_VECTOR = "to_tsvector('english'::regconfig, left(coalesce({content}, ''), 200000))"
"""The word-index vector of a row, from its ``content`` expression."""


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str
    """May use ``{trgm}``: the schema ``pg_trgm`` is installed in (its operator class)."""


_V1 = """
CREATE TABLE sessions (
    id                  text PRIMARY KEY,
    source              text,
    user_id             text,
    session_key         text,
    chat_id             text,
    chat_type           text,
    thread_id           text,
    model               text,
    model_config        text NOT NULL DEFAULT '{{}}',
    system_prompt       text,
    parent_session_id   text REFERENCES sessions(id) ON DELETE SET NULL,
    conversation_id     text,
    title               text UNIQUE,
    cwd                 text,
    goal                text,
    created_at          double precision NOT NULL,
    ended_at            double precision,
    end_reason          text,
    last_activity_at    double precision NOT NULL,
    last_activity_kind  text,
    archived            boolean NOT NULL DEFAULT false,
    pinned              boolean NOT NULL DEFAULT false,
    input_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    cache_read_tokens   bigint NOT NULL DEFAULT 0,
    cache_write_tokens  bigint NOT NULL DEFAULT 0,
    reasoning_tokens    bigint NOT NULL DEFAULT 0,
    cost_usd            double precision NOT NULL DEFAULT 0,
    compression_count   integer NOT NULL DEFAULT 0,
    cooldown_until      double precision,
    fallback_streak     integer NOT NULL DEFAULT 0,
    ineffective_count   integer NOT NULL DEFAULT 0,
    ineffective_tokens  bigint
);
CREATE INDEX sessions_parent ON sessions (parent_session_id);
CREATE INDEX sessions_conversation ON sessions (conversation_id);
CREATE INDEX sessions_activity ON sessions (last_activity_at DESC, created_at DESC);

CREATE TABLE messages (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id          text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq                 bigint NOT NULL,
    role                text NOT NULL,
    content             text,
    tool_calls          text,
    tool_name           text,
    tool_call_id        text,
    finish_reason       text,
    reasoning           text,
    reasoning_details   text,
    api_content         text,
    platform_message_id text,
    observed            integer,
    extra               text,
    token_count         integer NOT NULL DEFAULT 0,
    timestamp           double precision NOT NULL,
    active              boolean NOT NULL DEFAULT true,
    compacted           boolean NOT NULL DEFAULT false,
    -- the word index: English stemming over (at most the first 200,000 characters of) the
    -- searchable text, written with the row (see SEARCH_VECTOR) -- a tsvector has a 1 MB
    -- limit, which a pasted log could exceed
    search_vector       tsvector NOT NULL
) WITH (fillfactor = 50);
CREATE INDEX messages_window ON messages (session_id, seq);
CREATE INDEX messages_words ON messages USING gin (search_vector);
CREATE INDEX messages_substring ON messages USING gin (content {trgm}.gin_trgm_ops)
    WHERE role <> 'tool';

CREATE TABLE compression_locks (
    session_id          text PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    holder              text NOT NULL,
    acquired_at         double precision NOT NULL,
    expires_at          double precision NOT NULL
);

CREATE TABLE engine_state (
    session_id          text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    engine              text NOT NULL,
    state               text NOT NULL,
    updated_at          double precision NOT NULL,
    PRIMARY KEY (session_id, engine)
);
"""

_V2 = """
ALTER TABLE messages ALTER COLUMN search_vector DROP NOT NULL;
DROP INDEX messages_substring;
CREATE INDEX messages_substring ON messages USING gin (content {trgm}.gin_trgm_ops)
    WHERE role <> 'tool' AND search_vector IS NOT NULL;
CREATE INDEX messages_unindexed ON messages (id) WHERE search_vector IS NULL;
"""

_V3 = """
-- What the model received and what each compaction did (hermes-host issue 29; the same
-- tables as the SQLite store's version 5, see hermes_host.store.manifests).
CREATE TABLE requests (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id          text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at          double precision NOT NULL,
    entries             text NOT NULL,
    tokens              bigint NOT NULL,
    prefix_tokens       bigint NOT NULL DEFAULT 0,
    details             text NOT NULL DEFAULT '{{}}',
    input_tokens        bigint,
    output_tokens       bigint,
    cache_read_tokens   bigint,
    cache_write_tokens  bigint
);
CREATE INDEX requests_session ON requests (session_id, id);

CREATE TABLE request_parts (
    hash                text PRIMARY KEY,
    message             text NOT NULL,
    tokens              bigint NOT NULL
);

CREATE TABLE compactions (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id          text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    result_session_id   text,
    created_at          double precision NOT NULL,
    status              text NOT NULL,
    receipt             text NOT NULL
);
CREATE INDEX compactions_session ON compactions (session_id, id);
"""

MIGRATIONS: list[Migration] = [
    Migration(1, "sessions, messages, word and substring indexes, leases, engine state", _V1),
    Migration(2, "bulk writes leave search indexing to a catch-up (search_vector NULL)", _V2),
    Migration(3, "request manifests, request parts and compaction receipts", _V3),
]
LATEST_VERSION = MIGRATIONS[-1].version

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version     integer PRIMARY KEY,
    description text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""

TRGM_MISSING = (
    "the pg_trgm extension is not installed in database {db}, and role {role} may not "
    "create it. Ask an administrator to run, once: CREATE EXTENSION pg_trgm;  "
    "(connected to {db} as a superuser or the database owner). Nothing was changed"
)


def _trgm_schema(conn: psycopg.Connection[tuple[Any, ...]]) -> str | None:
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'pg_trgm'"
    ).fetchone()
    return str(row[0]) if row else None


def schema_version(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """The applied version of ``schema`` (0: no store there yet)."""
    exists = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_version",)
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_version").format(
            sql.Identifier(schema)
        )
    ).fetchone()
    return int(row[0]) if row else 0


def migrate(
    conn: psycopg.Connection[tuple[Any, ...]],
    schema: str,
    where: str,
    migrations: list[Migration] | None = None,
) -> int:
    """Create or upgrade the store in ``schema``; returns the version now applied.
    ``conn`` is in autocommit mode; this opens its own transaction."""
    steps = MIGRATIONS if migrations is None else migrations
    latest = steps[-1].version if steps else 0
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"hermes_host:{schema}",))
        present = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
        if not present:
            try:
                with conn.transaction():
                    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            except psycopg.errors.InsufficientPrivilege:
                raise StoreError(
                    f"{where}: schema {schema!r} does not exist and this role may not create "
                    f"it; an administrator can run: CREATE SCHEMA {schema} AUTHORIZATION "
                    "<the store's role>;  nothing was changed"
                ) from None
        current = schema_version(conn, schema)
        if current > latest:
            raise SchemaTooNewError(
                f"{where}: schema {schema!r} is at version {current}, newer than this "
                f"hermes-store-postgres knows ({latest}); upgrade hermes-store-postgres. "
                "Nothing was changed"
            )
        if current == latest:
            return current
        trgm = _trgm_schema(conn)
        if trgm is None:
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            except psycopg.errors.InsufficientPrivilege:
                info = conn.execute("SELECT current_database(), current_user").fetchone()
                db, role = info if info else ("?", "?")
                raise StoreError(f"{where}: " + TRGM_MISSING.format(db=db, role=role)) from None
            trgm = _trgm_schema(conn) or "public"
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(_VERSION_TABLE)
        for step in steps:
            if step.version <= current:
                continue
            conn.execute(step.sql.format(trgm=sql.Identifier(trgm).as_string(conn)).encode())
            conn.execute(
                "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                (step.version, step.description),
            )
        return latest
