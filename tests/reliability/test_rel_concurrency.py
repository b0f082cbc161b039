"""Real processes × shared sessions for a bounded time, on both stores (issues 13 and 31;
R-8.1, R-8.2, R-9.4, R-10.1).

Each cell — store (a SQLite file, a real PostgreSQL server the tests start) × workers (2, 8)
× publish mode (``rotate``, ``in_place``) — starts that many processes running
``concurrency_worker.py``: random turns on shared sessions, compressions racing appends and
resumes.  Afterwards:

* no deadlock: every process finished within its time plus a margin (each also takes at
  least enough turns that every session is due for compression, however loaded the machine);
* **no acknowledged write refused**: no ``StaleSessionError`` reached a caller of
  ``add_message`` (it must follow a rotation until it writes), and no other exception reached
  a caller (``database is locked`` in particular);
* **no duplicate row**: every acknowledged message is stored exactly once in its
  conversation (the rows of all its sessions: a rotation moves the kept rows, it does not
  copy them), and nothing is stored that no caller had acknowledged;
* **no lost message**: every acknowledged message is stored, and is either in the live
  window or was summarised by a summary that names it;
* **no split tool-call/result pair**: each call and its result share their row's session,
  ``active`` and ``compacted`` (they are kept, moved or archived together), and the live
  window holds every call's result and every result's call;
* exactly one compaction per due point: every compression count of a conversation, 1 to
  its last, was produced by exactly one committed compression in one process (none twice,
  none missing); no window is left over its threshold by more than one unfinished turn per
  process;
* integrity checks pass (SQLite) and every session resumes with a valid window;
* the races ran: some process took its window from the store because another one wrote
  (the figures also count the appends the store refused because a rotation had just
  committed, each followed by ``add_message``).

``HERMES_HOST_RELIABILITY_CONCURRENCY_SECONDS`` overrides the seconds per cell (the long
counting run of issue 31 in ``docs/reliability.md``).  The PostgreSQL cells use the server
of hermes-store-postgres's pytest plugin (through :mod:`hermes_host.testing.stores`, as the
store contract suite does) and are skipped when that distribution is not installed or no
server can be started.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from reliability_figures import record, scaled
from store_helpers import fts_integrity

from hermes_host.host import ContextHost
from hermes_host.messages import check_invariants, is_summary, validate_messages
from hermes_host.store import open_store
from hermes_host.testing.stores import BackendSpec, StoreFactory
from tests.host_helpers import TailEngine, make_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SECONDS_ENV = "HERMES_HOST_RELIABILITY_CONCURRENCY_SECONDS"
TAG = re.compile(r"\bp\d+s\d+\b")
STEPS = {"question": 0, "looking": 1, "result": 2, "answer": 3}
"""The first word of each of a turn's four messages: user, tool call, tool result, answer."""

pytestmark = pytest.mark.slow


def _seconds() -> float:
    given = os.environ.get(SECONDS_ENV, "").strip()
    return float(given) if given else scaled(4, 60)


def _sessions(workers: int) -> int:
    """Few sessions, so that several workers race on each: two workers share one, eight
    share two (CI) or four (full size)."""
    return 1 if workers <= 2 else scaled(2, 4)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store for the cell: a SQLite file, or a new schema on the test server."""
    factory = StoreFactory.for_backend(BackendSpec(request.param, request.param), request,
                                       tmp_path)
    return factory.url


def _host(store: str, threshold: int) -> ContextHost:
    return ContextHost.from_config(make_config("tail"), store=store, extra_plugins={
        "tail": TailEngine(keep=1, threshold=threshold)})


def _message_key(content: Any) -> tuple[str, int] | None:
    """``(tag, step)`` of a worker's message, from its text."""
    words = str(content or "").split()
    if len(words) >= 2 and words[0] in STEPS and TAG.fullmatch(words[1]):
        return words[1], STEPS[words[0]]
    return None


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
@pytest.mark.parametrize("workers", [2, 8])
def test_processes_share_sessions_exactly_once(
    tmp_path: Path, store_url: str, workers: int, mode: str
) -> None:
    kind = "sqlite" if "://" not in store_url else store_url.split("://", 1)[0]
    sessions, seconds = _sessions(workers), _seconds()
    with _host(store_url, 10**9) as host:
        for k in range(sessions):
            host.open_session(f"conc-{k}", "You are terse.")
    path = [str(ROOT), str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    outs = [tmp_path / f"proc-{i}.jsonl" for i in range(workers)]
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "concurrency_worker.py"), store_url, str(tmp_path),
             str(i), str(sessions), str(seconds), str(-(-16 * sessions // workers)), mode,
             str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for i, out in enumerate(outs)
    ]
    margin = 120 + seconds
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=max(1, margin - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail(f"deadlock: a process was still running {margin} s after the start")
        assert proc.returncode == 0, err[-3000:]
    wall = time.monotonic() - started

    rows = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
    refused = [r for r in rows if "refused" in r]
    errors = [r for r in rows if "error" in r and "refused" not in r]
    assert len([r for r in rows if "done" in r]) == workers
    acked: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for r in rows:
        if "ack" in r:
            acked[r["session"]].add((r["ack"], r["step"]))
    acknowledged = sum(len(v) for v in acked.values())
    reports = [r for r in rows if "report" in r]
    committed = [r for r in reports if r["report"] == "committed"]
    statuses = Counter(r["report"] for r in reports)

    # exactly one compaction per due point
    points = Counter((r["conversation"], r["count_after"]) for r in committed)
    doubled = {p: n for p, n in points.items() if n > 1}
    per_conversation = Counter(r["conversation"] for r in committed)
    produced: dict[str, set[int]] = defaultdict(set)
    for conversation, count in points:
        produced[conversation].add(count)

    store = open_store(store_url)
    lost: list[str] = []
    duplicated: list[str] = []
    unacknowledged: list[str] = []
    split: list[str] = []
    counts_off: list[str] = []
    invalid: list[str] = []
    try:
        for k in range(sessions):
            tip = store.resume(f"conc-{k}")
            lineage = store.lineage(tip.id)
            if tip.compression_count != per_conversation[lineage[0]] or (
                    produced[lineage[0]] != set(range(1, tip.compression_count + 1))):
                counts_off.append(f"conc-{k}: compression_count {tip.compression_count}, "
                                  f"commits produced {sorted(produced[lineage[0]])}")
            stored = [row for sid in lineage for row in store.all_messages(sid)]
            named = {t for r in stored if r.message.get("_compressed_summary")
                     for t in TAG.findall(str(r.message.get("content")))}
            live = store.active_messages(tip.id)
            in_window = Counter(_message_key(m.get("content")) for m in live
                                if not m.get("_compressed_summary"))
            rows_of: dict[tuple[str, int], list[Any]] = defaultdict(list)
            for row in stored:
                key = _message_key(row.message.get("content"))
                if key is not None and not row.message.get("_compressed_summary"):
                    rows_of[key].append(row)
            for key in acked[k]:
                copies = len(rows_of.get(key, []))
                if copies == 0:
                    lost.append(f"conc-{k} {key}: not stored")
                elif copies > 1:
                    duplicated.append(f"conc-{k} {key}: stored {copies} times")
                elif not in_window[key] and key[0] not in named:
                    lost.append(f"conc-{k} {key}: left the window without a summary naming it")
            unacknowledged += [f"conc-{k} {key}" for key in rows_of if key not in acked[k]]
            for tag in {t for t, _ in acked[k]}:
                call, result = rows_of.get((tag, 1), []), rows_of.get((tag, 2), [])
                if len(call) == 1 and len(result) == 1 and (
                        (call[0].session_id, call[0].active, call[0].compacted)
                        != (result[0].session_id, result[0].active, result[0].compacted)):
                    split.append(f"conc-{k} {tag}: call in {call[0].session_id} "
                                 f"(active {call[0].active}), result in "
                                 f"{result[0].session_id} (active {result[0].active})")
            calls = {c["id"] for m in live for c in m.get("tool_calls") or []}
            results = {m.get("tool_call_id") for m in live if m.get("role") == "tool"}
            split += [f"conc-{k} {c}: split in the live window" for c in calls ^ results]
            problems = check_invariants(live, max_summaries=1)
            if problems:
                invalid.append(f"conc-{k}: {problems}")
    finally:
        store.close()

    figures = dict(store=kind, mode=mode, processes=workers, sessions=sessions,
                   seconds=seconds, wall_seconds=round(wall, 1),
                   turns=sum(r.get("turns", 0) for r in rows), messages=acknowledged,
                   committed=len(committed), deferred=statuses["deferred"],
                   other_reports=dict(statuses), errors=len(errors), refused=len(refused),
                   lost=len(lost), duplicated=len(duplicated) + len(unacknowledged),
                   split=len(split), doubled=len(doubled),
                   **{k: sum(r.get(k, 0) for r in rows if "done" in r)
                      for k in ("followed", "followed_rotation", "stale_appends")})
    print(json.dumps(figures))
    assert not refused, (f"{len(refused)} acknowledged-to-be writes refused, first: "
                         f"{refused[0]}; {figures}")
    assert not errors, f"{len(errors)} exceptions reached a caller, first: {errors[0]}"
    assert not duplicated, f"{len(duplicated)} duplicated, first: {duplicated[:5]}; {figures}"
    assert not unacknowledged, f"stored but never acknowledged: {unacknowledged[:5]}"
    assert not lost, f"{len(lost)} messages lost, first: {lost[:5]}; {figures}"
    assert not split, f"{len(split)} split tool-call pairs, first: {split[:5]}; {figures}"
    assert not doubled, f"compacted twice from the same point: {doubled}"
    assert not counts_off, counts_off
    assert not invalid, invalid
    assert len(committed) >= sessions, "the run must compress every session at least once"
    assert figures["followed"] > 0, "no process ever followed another's write: no race ran"
    if kind == "sqlite":
        fts_integrity(Path(store_url))
    with _host(store_url, 900) as host:
        for k in range(sessions):
            window = host.resume(f"conc-{k}").window()
            validate_messages(window)
            # at most one unfinished turn per process may sit over the threshold; the summary
            # is left out: it names every turn its compaction dropped, so one compaction
            # after a slow stretch (a loaded machine) makes it long, not the window uncompacted
            body = [m for m in window if not is_summary(m)]
            assert host.tokens.count_all(body) < 900 + workers * 300, "never compacted"
    record("concurrency", **figures)
