"""PostgreSQL's own store behaviour (issue 16): versioned migrations, the schema option, a
non-superuser role owning only its schema, the missing-pg_trgm error, indexes and clock,
and no password in any message.  Every test runs against a real server."""

from __future__ import annotations

import secrets
import threading

import psycopg
import pytest
from psycopg import sql

from hermes_host.store import Lease, SchemaTooNewError, StoreError, open_store
from hermes_store_postgres import PostgresStore
from hermes_store_postgres.schema import MIGRATIONS
from hermes_store_postgres.testing import TestServer


def test_open_store_resolves_postgresql_urls_through_the_plugin_issue_16(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        try:
            assert isinstance(store, PostgresStore)
            assert ":***@" in store.location and store.settings.password not in store.location
        finally:
            store.close()


def test_migrations_are_versioned_and_idempotent_issue_16(
    hermes_postgres: TestServer, pg_url: str
) -> None:
    PostgresStore(pg_url).close()
    PostgresStore(pg_url).close()  # a second open applies nothing
    schema = pg_url.rsplit("schema=", 1)[1]
    with hermes_postgres.admin(hermes_postgres.database) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version FROM {}.schema_version ORDER BY version").format(
                sql.Identifier(schema))
        ).fetchall()
        assert rows == [(m.version,) for m in MIGRATIONS]
        conn.execute(sql.SQL("INSERT INTO {}.schema_version (version, description) VALUES "
                             "(99, 'from the future')").format(sql.Identifier(schema)))
    with pytest.raises(SchemaTooNewError, match="version 99, newer than"):
        PostgresStore(pg_url)


def test_hosts_starting_together_migrate_once_issue_16(hermes_postgres: TestServer) -> None:
    url = hermes_postgres.fresh_url()
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(url))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(stores) == 6
    session = stores[0].create_session(title="shared")
    assert all(s.get_session(session.id).title == "shared" for s in stores)
    for store in stores:
        store.close()


def test_the_schema_option_keeps_deployments_apart_issue_16(hermes_postgres: TestServer) -> None:
    one = PostgresStore(hermes_postgres.fresh_url())
    two = PostgresStore(hermes_postgres.fresh_url())
    try:
        a = one.create_session(title="same title")
        b = two.create_session(title="same title")  # titles are unique per deployment only
        one.append_messages(a.id, [{"role": "user", "content": "only in deployment one"}])
        assert two.session_search("deployment") == []
        assert [h.session_id for h in one.session_search("deployment")] == [a.id]
        assert [s.id for s in two.list_sessions()] == [b.id]
    finally:
        one.close()
        two.close()


def test_the_role_is_no_superuser_and_owns_only_its_schema_issue_16(
    hermes_postgres: TestServer, pg_store: PostgresStore
) -> None:
    with pg_store._read() as conn:
        superuser, createdb = conn.execute(
            "SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone() or (None, None)
        owner = conn.execute(
            "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s",
            (pg_store.schema,),
        ).fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tableowner = current_user",
            (pg_store.schema,),
        ).fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE SCHEMA elsewhere")
    assert (superuser, createdb) == (False, False)
    assert owner == (hermes_postgres.role,)
    # sessions, messages, compression_locks, engine_state, schema_version, and since
    # schema version 3 (issue 29) requests, request_parts, compactions
    assert tables == (8,)


def test_missing_pg_trgm_names_the_one_time_admin_step_issue_16(
    hermes_postgres: TestServer,
) -> None:
    database = f"no_trgm_{secrets.token_hex(3)}"
    with hermes_postgres.admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    try:
        with hermes_postgres.admin(database) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA app AUTHORIZATION {}").format(
                sql.Identifier(hermes_postgres.role)))
            conn.execute("REVOKE CREATE ON DATABASE " + database + " FROM PUBLIC")
        url = hermes_postgres.app_url("app").replace(f"/{hermes_postgres.database}?",
                                                     f"/{database}?")
        with pytest.raises(StoreError) as caught:
            PostgresStore(url)
        text = str(caught.value)
        assert "CREATE EXTENSION pg_trgm" in text and database in text
        assert hermes_postgres.password not in text
        with hermes_postgres.admin(database) as conn:  # nothing was created
            assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'app'"
                                ).fetchone() == (0,)
    finally:
        with hermes_postgres.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(
                sql.Identifier(database)))


def test_a_schema_the_role_may_not_create_is_a_clear_error(
    hermes_postgres: TestServer,
) -> None:
    with pytest.raises(StoreError, match="may not create it; an administrator can run: "
                                         "CREATE SCHEMA nobody_made_this AUTHORIZATION"):
        PostgresStore(hermes_postgres.app_url("nobody_made_this"))


def test_wrong_password_and_bad_options_never_show_the_password_issue_16(
    hermes_postgres: TestServer,
) -> None:
    wrong = secrets.token_hex(8)
    url = hermes_postgres.app_url("x").replace(hermes_postgres.password, wrong)
    with pytest.raises(StoreError) as caught:
        open_store(url + "&pool_timeout=3")
    assert wrong not in str(caught.value) and ":***@" in str(caught.value)
    assert "password authentication failed" in str(caught.value)
    for bad, why in (("schema=Robert'); DROP", "not a plain schema name"),
                     ("pool_max=0", "pool_max"), ("pool_timeout=soon", "pool_timeout")):
        with pytest.raises(StoreError, match=why) as caught:
            open_store(f"postgresql://u:{wrong}@127.0.0.1:1/db?{bad}")
        assert wrong not in str(caught.value)


def test_indexes_are_postgresql_s_own_issue_16(pg_store: PostgresStore) -> None:
    """Words: a tsvector column (written with the row) with a GIN index; substrings: a
    partial pg_trgm GIN index without tool rows (SPEC R-9.3) nor pending rows (schema v2);
    the planner uses them."""
    with pg_store._read() as conn:
        indexes = dict(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s",
            (pg_store.schema,),
        ).fetchall())
        session = pg_store.create_session().id
        pg_store.append_messages(session, [{"role": "user", "content": "Parsers were parsed"}])
        vector = conn.execute("SELECT search_vector::text FROM messages").fetchone()
        conn.execute("SET enable_seqscan = off")
        plan = " ".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM messages WHERE role <> 'tool' AND search_vector IS NOT NULL "
            "AND content ILIKE '%%pars%%'"
        ).fetchall())
    assert vector == ("'pars':3 'parser':1",)  # English stemming; 'were' is a stop word
    assert "USING gin (search_vector)" in indexes["messages_words"]
    assert "gin_trgm_ops" in indexes["messages_substring"]
    # tool rows and a bulk write's pending rows (schema v2) are not in the substring index
    assert ("WHERE ((role <> 'tool'::text) AND (search_vector IS NOT NULL))"
            in indexes["messages_substring"])
    assert "messages_substring" in plan


def test_lease_times_are_the_database_clock_issue_16(pg_store: PostgresStore) -> None:
    session = pg_store.create_session()
    lease = pg_store.acquire_lease(session.id, ttl=60)
    assert isinstance(lease, Lease)
    with pg_store._read() as conn:
        row = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
    assert row is not None
    assert abs(float(row[0]) - lease.acquired_at) < 5
    assert lease.expires_at - lease.acquired_at == pytest.approx(60)


def test_nul_and_surrogates_round_trip(pg_store: PostgresStore) -> None:
    session = pg_store.create_session()
    odd = [{"role": "user", "content": "nul\x00inside"}, {"role": "user", "content": "x\udc80y"},
           {"role": "tool", "content": "t", "name": "n\x00", "tool_call_id": "c"}]
    pg_store.append_messages(session.id, odd)
    assert pg_store.active_messages(session.id) == odd
    assert [h.content for h in pg_store.session_search("inside")] == ["nul\ufffdinside"]


def test_pending_gin_entries_are_searchable_before_and_after_the_merge_issue_16(
    pg_url: str,
) -> None:
    """Issue 16 (bulk append): a batch's rows wait for the search catch-up (schema v2);
    search finds them at once, and ``index_pending`` (GIN merge, VACUUM) changes no
    answer.  Two batches in one session keep their ids and window order (the COPY staging
    table starts empty for each)."""
    store = PostgresStore(pg_url)
    try:
        sid = store.create_session().id
        first = store.append_messages(
            sid, [{"role": "user", "content": f"alpha{i} parser"} for i in range(300)])
        second = store.append_messages(
            sid, [{"role": "assistant", "content": f"beta{i} lexer"} for i in range(300)])
        assert first + second == sorted(first + second)
        assert [m.id for m in store.all_messages(sid)] == first + second
        assert store.pending_index_rows() == 600  # bulk rows wait for the catch-up
        queries = ("parser", "lexer beta7", "pha29", "eta15")
        before = {q: [h.message_id for h in store.session_search(q, limit=50)] for q in queries}
        assert all(before.values())
        assert store.pending_index_rows() == 0  # the first search caught up
        assert store.index_pending() == 0  # nothing left to index; merges GIN lists, VACUUM
        after = {q: [h.message_id for h in store.session_search(q, limit=50)] for q in queries}
        assert after == before
    finally:
        store.close()


def test_copy_and_array_append_paths_store_the_same_rows_issue_16(pg_url: str) -> None:
    """Issue 16 (bulk append): a batch of ``STAGE_MIN`` or more rows goes through COPY, a
    smaller one through bound arrays; both store the same columns, token counts and window
    order for the same messages."""
    from hermes_store_postgres.messages import STAGE_MIN

    def batch(n: int) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for i in range(n):
            if i % 3 == 0:
                out.append({"role": "assistant", "content": None, "finish_reason": "tool_calls",
                            "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                                "name": "terminal", "arguments": "{\"cmd\": \"ls\"}"}}]})
            elif i % 3 == 1:
                out.append({"role": "tool", "content": f"out\t{i}\nline \\ two",
                            "tool_call_id": f"c{i - 1}", "name": "terminal"})
            else:
                out.append({"role": "user", "content": f"naïve Überprüfung {i} 日本語"})
        return out

    store = PostgresStore(pg_url)
    try:
        rows = {}
        for n in (STAGE_MIN - 1, STAGE_MIN):
            sid = store.create_session().id
            ids = store.append_messages(sid, batch(n), token_counts=list(range(n)))
            stored = store.all_messages(sid)
            assert [m.id for m in stored] == ids
            rows[n] = [(m.token_count, m.message) for m in stored]
        assert rows[STAGE_MIN][: STAGE_MIN - 1] == rows[STAGE_MIN - 1]
        assert [t for t, _ in rows[STAGE_MIN]] == list(range(STAGE_MIN))
        assert [m for _, m in rows[STAGE_MIN]] == batch(STAGE_MIN)  # stored verbatim
    finally:
        store.close()
