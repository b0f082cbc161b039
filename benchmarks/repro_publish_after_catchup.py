"""Reproduce issue 16's publish regression: a 10,000-message session bulk appended (rows
land pending), index_pending(), then publish in place / rotate — against the same session
indexed synchronously (DEFER_INDEX_MIN raised), side by side in one run.  Prints the
messages table's update / HOT-update counters around each publish and EXPLAIN (ANALYZE,
BUFFERS) of the archive UPDATE on a copy of the state (rolled back)."""

from __future__ import annotations

import sys
import time

from hermes_store_postgres import messages as pg_messages
from hermes_store_postgres.testing import TestServer

from hermes_host.store import Lease, open_store
from hermes_host.tokens import count_text

sys.path.insert(0, "benchmarks")
from bench_store import Corpus

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000


def counters(store: object) -> tuple[int, int]:
    with store._read() as conn:  # type: ignore[attr-defined]
        time.sleep(1.2)  # a backend flushes its statistics at most once a second
        row = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                           "WHERE relname = 'messages' AND schemaname = current_schema()"
                           ).fetchone()
        return int(row[0]), int(row[1])


def explain(store: object, session_id: str) -> None:
    with store._read() as conn:  # type: ignore[attr-defined]
        with conn.transaction(force_rollback=True):
            plan = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS) UPDATE messages SET active = false, compacted = true "
                "WHERE id = ANY(ARRAY(SELECT id FROM messages WHERE session_id = %s "
                "ORDER BY seq OFFSET 0 LIMIT %s))", (session_id, SIZE - 40)).fetchall()
        print("   ", "\n    ".join(r[0] for r in plan))


def run(url: str, corpus: Corpus, label: str, defer_min: int) -> None:
    pg_messages.DEFER_INDEX_MIN = defer_min
    store = open_store(url)
    for mode in ("in_place", "rotate"):
        session = store.create_session()
        history = [corpus.message(i) for i in range(SIZE)]
        t0 = time.perf_counter()
        store.append_messages(session.id, history, token_counts=[25] * SIZE)
        t1 = time.perf_counter()
        store.index_pending()  # type: ignore[attr-defined]
        t2 = time.perf_counter()
        if mode == "in_place":
            explain(store, session.id)
        window = [{"role": "user", "content": corpus.text(30), "_compressed_summary": True},
                  *history[-40:]]
        lease = store.acquire_lease(session.id)
        assert isinstance(lease, Lease)
        before = counters(store)
        started = time.perf_counter()
        store.publish_compression(lease, session.id, window, mode=mode)  # type: ignore[arg-type]
        ms = (time.perf_counter() - started) * 1000
        after = counters(store)
        store.release_lease(lease)
        print(f"{label} {mode}: append {SIZE / (t1 - t0):,.0f} msg/s, index_pending "
              f"{(t2 - t1) * 1000:.0f} ms, publish {ms:.0f} ms, updates "
              f"{after[0] - before[0]}, HOT {after[1] - before[1]}", flush=True)
    store.close()


def main() -> None:
    count_text("warm")
    server = TestServer.start()
    try:
        corpus = Corpus()
        for label, defer in (("deferred", 256), ("synchronous", 10**9),
                             ("deferred", 256), ("synchronous", 10**9)):
            run(server.fresh_url(pool_max="4"), corpus, label, defer)
    finally:
        server.drop()
        server.stop()


if __name__ == "__main__":
    main()
