"""Store backends side by side (issue 16): SQLite and PostgreSQL through the same public
``StateStore`` API, in one run, on the same synthetic agent text.

    python benchmarks/bench_store_backends.py [--messages 1000000] [--hosts 8]

* bulk append rate in batches (the caller passes token counts, so the store is measured);
* search p50/p99 on a store of ``--messages`` messages (word, two words, substring; whole
  store and one session);
* publish of a 10,000-message session (in-place and rotate, summary + 40-message tail);
* a turn's store cost (window marker, append user + assistant, guards, usage) with
  ``--hosts`` processes working at once, each its own session, against one process alone:
  with a ``--think-ms`` wait between turns for the model call a real turn makes (the
  target), and with none (every process CPU-bound: a row for comparison).

PostgreSQL is a throw-away local server (hermes_store_postgres.testing: initdb + pg_ctl on
loopback, fsync off like a bench box), or ``$HERMES_HOST_TEST_POSTGRES_URL``'s.  Targets
(PostgreSQL on loopback): append ≥ 20k msg/s, search p50 ≤ 10 ms, publish ≤ 200 ms, per-turn
cost with 8 hosts within 2× of 1 host.  Prints one markdown section (``## store backends``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _targets import Targets
from bench_store import COMMON, Corpus, percentile

from hermes_host.store import Lease, open_store
from hermes_host.tokens import count_text

APPEND_TARGET = 20_000
SEARCH_P50_TARGET_MS = 10.0
PUBLISH_TARGET_MS = 200.0
HOSTS_RATIO_TARGET = 2.0
THINK_MS = 50.0
"""A host's wait between turns in the many-hosts row: its model call, which a real turn
always makes (a fast model answers in a few hundred ms; 50 ms keeps the run short and the
hosts' store calls still overlap)."""


def bench_append(url: str, corpus: Corpus, total: int, batch: int) -> float:
    messages = [corpus.message(i) for i in range(total)]
    store = open_store(url)
    session = store.create_session().id
    spent = 0.0
    for i in range(0, total, batch):
        chunk = messages[i : i + batch]
        started = time.perf_counter()
        store.append_messages(session, chunk, token_counts=[25] * len(chunk))
        spent += time.perf_counter() - started
    store.close()
    return total / spent


def fill(url: str, corpus: Corpus, total: int, per_session: int = 1000) -> tuple[float, list[str]]:
    store = open_store(url)
    started = time.perf_counter()
    sessions = []
    for _ in range(max(1, total // per_session)):
        sid = store.create_session().id
        sessions.append(sid)
        chunk = [corpus.message(i) for i in range(per_session)]
        store.append_messages(sid, chunk, token_counts=[25] * len(chunk))
    index_pending = getattr(store, "index_pending", None)
    if callable(index_pending):
        index_pending()
    store.close()
    return time.perf_counter() - started, sessions


def bench_queries(url: str, corpus: Corpus, count: int, sessions: list[str]
                  ) -> dict[str, list[float]]:
    rng = random.Random(11)
    store = open_store(url)
    rare = corpus.words[len(COMMON) :]
    kinds: dict[str, Callable[[], str]] = {
        "word": lambda: rng.choice(rare),
        "two words": lambda: f"{rng.choice(COMMON[40:])} {rng.choice(rare)}",
        "substring": lambda: (lambda w: w[1:6])(rng.choice(rare)),
    }
    results: dict[str, list[float]] = {}
    for label, make in kinds.items():
        for scoped in (False, True):
            samples = []
            for _ in range(count):
                query = make()
                sid = rng.choice(sessions) if scoped else None
                started = time.perf_counter()
                store.session_search(query, session_id=sid, limit=10)
                samples.append((time.perf_counter() - started) * 1000)
            results[f"{label}, {'one session' if scoped else 'whole store'}"] = samples
    store.close()
    return results


def bench_publish(url: str, corpus: Corpus, size: int, reps: int) -> dict[str, float]:
    store = open_store(url)
    timings: dict[str, list[float]] = {}
    for _ in range(reps):
        for mode in ("in_place", "rotate"):
            session = store.create_session()
            history = [corpus.message(i) for i in range(size)]
            store.append_messages(session.id, history, token_counts=[25] * size)
            index_pending = getattr(store, "index_pending", None)
            if callable(index_pending):
                index_pending()
            window = [{"role": "user", "content": corpus.text(30), "_compressed_summary": True},
                      *history[-40:]]
            lease = store.acquire_lease(session.id)
            assert isinstance(lease, Lease)
            started = time.perf_counter()
            store.publish_compression(lease, session.id, window, mode=mode)  # type: ignore[arg-type]
            timings.setdefault(mode, []).append((time.perf_counter() - started) * 1000)
            store.release_lease(lease)
    store.close()
    return {k: statistics.median(v) for k, v in timings.items()}


def turn_worker(url: str, turns: int, go: str, think_ms: float) -> None:
    """One host: ``turns`` turns on its own session; prints the mean store time per turn, ms.

    Between turns the host waits ``think_ms`` (± half, seeded per process), standing for the
    model call every real turn makes; only the store calls are timed."""
    store = open_store(url)
    sid = store.create_session().id
    rng = random.Random(os.getpid())
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.002)
    spent = 0.0
    for i in range(turns):
        if think_ms:
            time.sleep(think_ms * (0.5 + rng.random()) / 1000)
        started = time.perf_counter()
        store.window_marker(sid)
        store.read_guards(sid)
        store.append_messages(sid, [{"role": "user", "content": f"question {i} about parsers"},
                                    {"role": "assistant", "content": f"answer {i} fixed it"}],
                              token_counts=[8, 8])
        store.add_usage(sid, input_tokens=100, output_tokens=10)
        spent += time.perf_counter() - started
    print(json.dumps({"ms": spent * 1000 / turns}), flush=True)
    store.close()


def bench_hosts(url: str, hosts: int, turns: int, root: Path, think_ms: float) -> float:
    go = root / f"go-{hosts}-{time.monotonic_ns()}"
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", url, str(turns), str(go),
                               str(think_ms)],
                              stdout=subprocess.PIPE, text=True) for _ in range(hosts)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.write_text("go")
    per_turn = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        per_turn.append(json.loads(out.strip().splitlines()[-1])["ms"])
    return statistics.mean(per_turn)


def run_backend(url: str, corpus: Corpus, args: argparse.Namespace, root: Path
                ) -> dict[str, Any]:
    out: dict[str, Any] = {"append": bench_append(url, corpus, args.append, args.batch)}
    out["publish"] = bench_publish(url, corpus, args.publish_size, args.reps)
    out["build"], sessions = fill(url, corpus, args.messages)
    out["queries"] = bench_queries(url, corpus, args.queries, sessions)
    for key, think in (("hosts", args.think_ms), ("hosts_busy", 0.0)):
        one = bench_hosts(url, 1, args.turns, root, think)
        many = bench_hosts(url, args.hosts, args.turns, root, think)
        out[key] = (one, many)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000,
                        help="size of the search store (the issue's targets are at 1M)")
    parser.add_argument("--append", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--publish-size", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--think-ms", type=float, default=THINK_MS,
                        help="each host's wait between turns, standing for its model call")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    targets = Targets("store backends")
    count_text("load the tokenizer before timing")
    try:
        from hermes_store_postgres.testing import TestServer
    except ImportError:
        print("## store backends\n\nhermes-store-postgres is not installed: nothing measured.")
        return 0
    server = TestServer.start()
    results: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench_backends_") as tmp:
            root = Path(tmp)
            for name, url in (("SQLite", str(root / "bench.db")),
                              ("PostgreSQL", server.fresh_url(pool_max="4"))):
                results[name] = run_backend(url, Corpus(), args, root)
    finally:
        server.drop()
        server.stop()
    write = sys.stdout.write
    write("## store backends\n\n")
    write(f"The same public `StateStore` calls on SQLite (one WAL file) and PostgreSQL 15 "
          f"(a local server on loopback, fsync off) in one run. Search store: "
          f"{args.messages:,} messages in {max(1, args.messages // 1000):,} sessions, filled "
          "through `append_messages`"
          + (" (fewer than the issue's 1M: the search targets are for 1,000,000)"
             if args.messages < 1_000_000 else "")
          + ". Targets apply to PostgreSQL.\n\n")
    write("| measure | SQLite | PostgreSQL | PG / SQLite | PostgreSQL target |\n"
          "|---|---:|---:|---:|---|\n")
    sq, pg = results["SQLite"], results["PostgreSQL"]
    check = targets.check(f"PostgreSQL bulk append, batches of {args.batch:,}", pg["append"],
                          ">=", APPEND_TARGET, "{:,.0f} msg/s")
    write(f"| bulk append, batches of {args.batch:,}, msg/s | {sq['append']:,.0f} | "
          f"{pg['append']:,.0f} | {pg['append'] / sq['append']:.2f}× | {check.target_text} |\n")
    write(f"| fill {args.messages:,} messages, s | {sq['build']:.1f} | {pg['build']:.1f} | "
          f"{pg['build'] / sq['build']:.2f}× | — |\n")
    for label in sq["queries"]:
        s50, p50 = percentile(sq["queries"][label], 50), percentile(pg["queries"][label], 50)
        s99, p99 = percentile(sq["queries"][label], 99), percentile(pg["queries"][label], 99)
        check = targets.check(f"PostgreSQL search p50, {label}", p50, "<=",
                              SEARCH_P50_TARGET_MS, "{:.1f} ms", "{:.0f} ms")
        write(f"| search p50 / p99 ms — {label} | {s50:.1f} / {s99:.1f} | {p50:.1f} / "
              f"{p99:.1f} | {p50 / max(s50, 1e-9):.2f}× | p50 {check.target_text} |\n")
    for mode in ("in_place", "rotate"):
        check = targets.check(f"PostgreSQL publish {mode}, {args.publish_size:,} messages",
                              pg["publish"][mode], "<=", PUBLISH_TARGET_MS, "{:.0f} ms")
        write(f"| publish {mode} (summary + 40-message tail), {args.publish_size:,}-message "
              f"session, ms | {sq['publish'][mode]:.0f} | {pg['publish'][mode]:.0f} | "
              f"{pg['publish'][mode] / sq['publish'][mode]:.2f}× | {check.target_text} |\n")
    for name, res in (("SQLite", sq), ("PostgreSQL", pg)):
        one, many = res["hosts"]
        ratio = many / one
        text = "(SQLite: one writer at a time, for comparison)"
        if name == "PostgreSQL":
            text = targets.check(f"PostgreSQL per-turn cost, {args.hosts} hosts vs 1", ratio,
                                 "<=", HOSTS_RATIO_TARGET, "{:.2f}×").target_text
        write(f"| {name}: a turn's store cost, 1 host / {args.hosts} hosts at once "
              f"({args.think_ms:g} ms model wait between turns), ms | "
              f"{one:.2f} / {many:.2f} | | {ratio:.2f}× | {text} |\n")
    for name, res in (("SQLite", sq), ("PostgreSQL", pg)):
        one, many = res["hosts_busy"]
        write(f"| {name}: the same with no wait between turns (CPU-bound), ms | "
              f"{one:.2f} / {many:.2f} | | {many / one:.2f}× | — |\n")
    cores = os.cpu_count() or 1
    write(f"\nA turn here is `window_marker`, `read_guards`, an append of two messages and "
          f"`add_usage`, timed alone; each host is its own process and session, {args.turns} "
          f"turns each, waiting {args.think_ms:g} ms (± half) between turns for the model "
          f"call a real turn makes. The machine has {cores} cores shared with other work: "
          f"with no wait, {args.hosts} host processes and the server compete for {cores} "
          "cores, so that row measures how the CPU is shared more than contention in the "
          "database.\n")
    sys.stdout.flush()
    return targets.finish(["--check"] if args.check else [])


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        turn_worker(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
        sys.exit(0)
    sys.exit(main())
