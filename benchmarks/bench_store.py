"""Store benchmark: bulk append rate, FTS query latency on a large store, publish latency.

    python benchmarks/bench_store.py [--messages 1000000] [--append 40000] [--queries 200]

Everything is built in a temporary directory (nothing is written to the repository) from
synthetic but varied text: a Zipf-weighted mix of common English words and generated code
identifiers, so queries range from common to rare terms as in real agent logs.  The large
store for the query benchmark is filled with ``executemany`` and the FTS indexes are built with
FTS5's ``rebuild`` (the sync triggers are re-created afterwards, so the schema is the real
one); appends and publishes go through the public ``StateStore`` API.

Prints one markdown section (``## store``) to stdout.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _targets import Targets

from hermes_host.store import Lease, open_store
from hermes_host.store.sqlite import SQLiteStore
from hermes_host.tokens import count_message, count_text

APPEND_TARGET = 20_000  # messages per second
SEARCH_P50_TARGET_MS = 10.0
PUBLISH_TARGET_MS = 200.0  # a summary + short tail on a 10,000-message session

COMMON = (
    "the of and to a in is it you that was for on are with as be at this have from or had "
    "by not but what some we can out other were all there when up use your how said an each "
    "which do their time if will way about many then them would like so these her long make "
    "thing see him two has look more day could go come did number no most people my over "
    "know than call first who may down side been now find any new work part take get place "
    "made where after back little only round year came show every good me give our under "
    "name very through just form great think say help line turn cause much mean before move "
    "right old too same tell does set three want well also play small end put home read hand "
    "large add even here must big high such follow act why ask change went light kind off "
    "need house try again point world near build self earth test file error run fix build "
    "config import function class return value module install update check commit branch "
    "merge deploy server client request response cache query index table session token"
).split()
SUFFIXES = ("_test", "_config", "Error", "Handler", ".py", ".ts", "_v2", "", "", "", "")


class Corpus:
    """Fast varied text: fragments drawn once, combined per message."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        idents = {
            "".join(self.rng.choices(letters, k=self.rng.randint(5, 9)))
            + self.rng.choice(SUFFIXES)
            for _ in range(30_000)
        }
        self.words = COMMON + sorted(idents)
        weights = [1 / (rank + 1) ** 0.9 for rank in range(len(self.words))]
        cum = list(itertools.accumulate(weights))
        self.fragments = [
            " ".join(self.rng.choices(self.words, cum_weights=cum, k=self.rng.randint(4, 12)))
            for _ in range(40_000)
        ]

    def text(self, parts: int) -> str:
        pick = self.rng.choice
        return " ".join(pick(self.fragments) for _ in range(parts))

    def message(self, i: int) -> dict[str, Any]:
        kind = i % 4
        if kind == 0:
            return {"role": "user", "content": self.text(2)}
        if kind == 1:
            return {"role": "assistant", "content": self.text(4)}
        if kind == 2:
            return {"role": "tool", "content": self.text(5), "tool_call_id": f"c{i}",
                    "name": "terminal"}
        return {"role": "assistant", "content": self.text(3), "finish_reason": "stop"}


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def bench_append(root: Path, corpus: Corpus, total: int, batch: int) -> dict[str, float]:
    """Append rate with the store counting tokens, and with counts the caller already had.

    The two runs alternate batch by batch (two stores), so a busy machine slows both alike.
    """
    messages = [corpus.message(i) for i in range(total)]
    stores = {label: open_store(root / f"append-{label}.db") for label in ("counted", "pre")}
    sessions = {label: store.create_session().id for label, store in stores.items()}
    spent = dict.fromkeys(stores, 0.0)
    for i in range(0, total, batch):
        chunk = messages[i : i + batch]
        for label, store in stores.items():
            counts = None if label == "counted" else [25] * len(chunk)
            started = time.perf_counter()
            store.append_messages(sessions[label], chunk, token_counts=counts)
            spent[label] += time.perf_counter() - started
    # Batches this size leave substring indexing to a catch-up (schema v2): time it too, so
    # the table shows the whole cost, not only the part the appending caller waits for.
    catch_up = {}
    for label, store in stores.items():
        assert isinstance(store, SQLiteStore)
        started = time.perf_counter()
        store.index_pending()
        catch_up[label] = time.perf_counter() - started
    for store in stores.values():
        store.close()
    started = time.perf_counter()
    for message in messages:
        count_message(message)
    counting = time.perf_counter() - started
    return {
        "counted": total / spent["counted"],
        "precounted": total / spent["pre"],
        "catch_up": 2 * total / sum(catch_up.values()),
        "with_catch_up": total / (spent["counted"] + catch_up["counted"]),
        "store_us": spent["pre"] / total * 1e6,
        "count_us": counting / total * 1e6,
        "chars": sum(len(m["content"]) for m in messages) / total,
    }


def build_large(path: Path, corpus: Corpus, total: int, per_session: int = 1000) -> float:
    """Fill a real store with ``total`` messages; returns seconds spent."""
    started = time.perf_counter()
    open_store(path).close()  # the real schema, migrated
    conn = sqlite3.connect(path, isolation_level=None)
    # A throwaway bench file: no journal while filling it (a WAL would hold the whole 1M-row
    # transaction twice); it is switched back to WAL before the queries run.
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    conn.execute("PRAGMA synchronous = OFF")
    trigger_sql = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'messages_fts_insert'"
    ).fetchone()[0]
    conn.execute("BEGIN")
    conn.execute("DROP TRIGGER messages_fts_insert")
    sessions = max(1, total // per_session)
    conn.executemany(
        "INSERT INTO sessions (id, created_at, last_activity_at) VALUES (?, 0, 0)",
        ((f"s{n:07d}",) for n in range(sessions)),
    )
    roles = ("user", "assistant", "tool", "assistant")
    text = corpus.text
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, token_count, timestamp) "
        "VALUES (?, ?, ?, 0, 0)",
        ((f"s{min(i // per_session, sessions - 1):07d}", roles[i % 4], text(1 + i % 2))
         for i in range(total)),
    )
    # the trigram index's content view holds the rows up to its mark: move it first
    conn.execute("UPDATE trigram_progress SET indexed_through = (SELECT max(id) FROM messages)")
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES ('rebuild')")
    conn.execute(trigger_sql)
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return time.perf_counter() - started


def bench_queries(path: Path, corpus: Corpus, count: int, sessions: int) -> dict[str, list[float]]:
    rng = random.Random(11)
    store = open_store(path)
    rare = corpus.words[len(COMMON) :]
    kinds: dict[str, Callable[[], str]] = {
        "word": lambda: rng.choice(rare),
        "two words": lambda: f"{rng.choice(COMMON[40:])} {rng.choice(rare)}",
        "substring (trigram)": lambda: (lambda w: w[1:6])(rng.choice(rare)),
    }
    results: dict[str, list[float]] = {}
    for label, make in kinds.items():
        for scoped in (False, True):
            samples = []
            for _ in range(count):
                query = make()
                session_id = f"s{rng.randrange(sessions):07d}" if scoped else None
                started = time.perf_counter()
                store.session_search(query, session_id=session_id, limit=10)
                samples.append((time.perf_counter() - started) * 1000)
            results[f"{label}, {'one session' if scoped else 'whole store'}"] = samples
    store.close()
    return results


def bench_publish(root: Path, corpus: Corpus, size: int, reps: int) -> dict[str, float]:
    store = open_store(root / "publish.db")
    assert isinstance(store, SQLiteStore)
    timings: dict[str, list[float]] = {}
    for rep in range(reps):
        for mode in ("in_place", "rotate"):
            for window_kind in ("summary + 40-message tail", f"{size:,}-message window"):
                session = store.create_session(title=f"{mode}-{window_kind}-{rep}")
                history = [corpus.message(i) for i in range(size)]
                store.append_messages(session.id, history)
                if window_kind.startswith("summary"):
                    window = [{"role": "user", "content": corpus.text(30),
                               "_compressed_summary": True}, *history[-40:]]
                else:
                    window = history
                store.index_pending()  # steady state: the history's bulk append caught up
                lease = store.acquire_lease(session.id)
                assert isinstance(lease, Lease)
                started = time.perf_counter()
                store.publish_compression(lease, session.id, window, mode=mode)  # type: ignore[arg-type]
                timings.setdefault(f"{mode}, {window_kind}", []).append(
                    (time.perf_counter() - started) * 1000
                )
                store.release_lease(lease)
    store.close()
    return {k: statistics.median(v) for k, v in timings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000,
                        help="messages in the query-benchmark store (default 1,000,000)")
    parser.add_argument("--append", type=int, default=20_000, help="messages to append")
    parser.add_argument("--batch", type=int, default=1_000, help="append batch size")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind")
    parser.add_argument("--publish-size", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3, help="publish repetitions (median)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    targets = Targets("store")

    count_text("load the tokenizer before timing")
    corpus = Corpus()
    with tempfile.TemporaryDirectory(prefix="bench_store_") as tmp:
        root = Path(tmp)
        append = bench_append(root, corpus, args.append, args.batch)
        publish = bench_publish(root, corpus, args.publish_size, args.reps)
        big = root / "large.db"
        build_seconds = build_large(big, corpus, args.messages)
        size_mb = big.stat().st_size / 1e6
        queries = bench_queries(big, corpus, args.queries, max(1, args.messages // 1000))

    out = sys.stdout.write
    out("## store\n\n")
    out(f"SQLite {sqlite3.sqlite_version}, WAL, FTS5 porter + trigram; synthetic agent text. "
        f"Query store: {args.messages:,} messages in {max(1, args.messages // 1000):,} sessions "
        f"({size_mb:,.0f} MB, built in {build_seconds:.0f} s).\n\n")
    out("| measure | result | target |\n|---|---:|---|\n")
    counted = targets.check("bulk append, store counts tokens", append["counted"], ">=",
                            APPEND_TARGET, "{:,.0f} msg/s")
    precounted = targets.check("bulk append, caller passes token_counts",
                               append["precounted"], ">=", APPEND_TARGET, "{:,.0f} msg/s")
    out(f"| bulk append, batches of {args.batch:,} ({append['chars']:.0f} chars/message), "
        f"store counts tokens | {counted.shown_value} | {counted.target_text} |\n")
    out(f"| bulk append, caller passes token_counts | {precounted.shown_value} | "
        f"{precounted.target_text} |\n")
    out(f"| trigram catch-up after bulk appends (`index_pending`) | {append['catch_up']:,.0f} "
        "msg/s | — |\n")
    out(f"| bulk append + its catch-up, store counts tokens | {append['with_catch_up']:,.0f} "
        "msg/s | (whole cost) |\n")
    for label, samples in queries.items():
        p50 = targets.check(f"search p50, {label}", percentile(samples, 50), "<=",
                            SEARCH_P50_TARGET_MS, "{:.1f} ms", "{:.0f} ms")
        out(f"| search p50 / p99 — {label} | {p50.shown_value.removesuffix(' ms')} / "
            f"{percentile(samples, 99):.1f} ms | p50 {p50.target_text} |\n")
    for label, ms in publish.items():
        target = "(worst case)"
        if "summary" in label:
            target = targets.check(f"publish {label}", ms, "<=", PUBLISH_TARGET_MS,
                                   "{:.0f} ms").target_text
        out(f"| publish {label}, {args.publish_size:,}-message session | {ms:.0f} ms | "
            f"{target} |\n")
    out(f"\nAppend cost per message: {append['store_us']:.0f} µs in the store (encoding, "
        "staging, porter FTS sync) plus "
        f"{append['count_us']:.0f} µs of tiktoken counting when the caller passes no "
        "token_counts (large batches count on a second thread while SQLite writes; tiktoken holds "
        "the GIL, so counting overlaps only SQLite's share).  Batches of 256 or more leave the "
        "trigram (substring) index to a catch-up: the next small writes index up to 1,000 "
        "waiting rows each, `index_pending()` (run by `sessions import`) does the rest, and "
        "search scans the waiting rows meanwhile.  ")
    out(f"Search latency includes the bookends (2 messages either side of each of up to 10 "
        f"hits); {args.queries} queries per row.  Publish figures are medians of {args.reps} "
        "runs and include encoding, token counting, the lease check and the FTS sync, with the "
        "trigram index caught up beforehand (a publish right after a bulk write also indexes "
        "up to 1,000 waiting rows).\n")
    sys.stdout.flush()
    return targets.finish(["--check"] if args.check else [])


if __name__ == "__main__":
    sys.exit(main())
