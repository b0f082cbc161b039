"""8 real processes × many sessions for a bounded time (issue 13; R-8.1, R-8.2, R-9.4, R-10.1).

Every process runs ``concurrency_worker.py``: random turns on shared sessions, compressions
racing appends and resumes.  Afterwards:

* no deadlock: every process finished within its time plus a margin;
* nothing reached a caller: no exception at all (``database is locked`` in particular);
* exactly one compaction per due point: every compression count of a conversation, 1 to
  its last, was produced by exactly one committed compression in one process (none twice,
  none missing), and the committed ones add up to the conversation's ``compression_count``;
  no window is left over its threshold by more than one unfinished turn per process;
* no message lost from the live window: every acknowledged message is stored exactly once in
  its conversation and is either in the live window or was summarised by a summary that names
  it;
* integrity checks pass and every session resumes with a valid window.

The helpers come from ``tests/host_helpers.py`` (``TailEngine``, ``make_host``) and
``tests/store_helpers.py`` (``fts_integrity``) as in ``tests/test_host_concurrency.py``.
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

import pytest
from reliability_figures import record, scaled
from store_helpers import fts_integrity

from hermes_host.messages import check_invariants, validate_messages
from hermes_host.store import open_store
from tests.host_helpers import TailEngine, make_host

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROCESSES = 8
SESSIONS = scaled(4, 12)
SECONDS = scaled(4, 60)
TAG = re.compile(r"\bp\d+s\d+\b")

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("mode", ["rotate", "in_place"] if scaled(0, 1) else ["rotate"])
def test_eight_processes_share_sessions_without_loss_or_double_compaction(
    tmp_path: Path, mode: str
) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        for k in range(SESSIONS):
            host.open_session(f"conc-{k}", "You are terse.")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    outs = [tmp_path / f"proc-{i}.jsonl" for i in range(PROCESSES)]
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "concurrency_worker.py"), str(tmp_path / "state.db"),
             str(i), str(SESSIONS), str(SECONDS), mode, str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for i, out in enumerate(outs)
    ]
    margin = 120 + SECONDS
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
    errors = [r for r in rows if "error" in r]
    assert not errors, f"{len(errors)} exceptions reached a caller, first: {errors[0]}"
    assert len([r for r in rows if "done" in r]) == PROCESSES
    acked = [(r["session"], r["ack"]) for r in rows if "ack" in r]
    reports = [r for r in rows if "report" in r]
    committed = [r for r in reports if r["report"] == "committed"]
    statuses = Counter(r["report"] for r in reports)

    # exactly one compaction per due point
    points = Counter((r["conversation"], r["count_after"]) for r in committed)
    doubled = {p: n for p, n in points.items() if n > 1}
    assert not doubled, f"compacted twice from the same point: {doubled}"
    per_conversation = Counter(r["conversation"] for r in committed)
    produced: dict[str, set[int]] = defaultdict(set)
    for conversation, count in points:
        produced[conversation].add(count)

    store = open_store(tmp_path / "state.db")
    lost: list[str] = []
    try:
        by_session: dict[int, set[str]] = defaultdict(set)
        for k, tag in acked:
            by_session[k].add(tag)
        for k in range(SESSIONS):
            tip = store.resume(f"conc-{k}")
            lineage = store.lineage(tip.id)
            assert tip.compression_count == per_conversation[lineage[0]], (
                k, tip.compression_count, per_conversation[lineage[0]])
            # every compression count from 1 to the last was produced by exactly one commit
            assert produced[lineage[0]] == set(range(1, tip.compression_count + 1))
            stored = [row for sid in lineage for row in store.all_messages(sid)]
            summaries = [r for r in stored if r.message.get("_compressed_summary")]
            named = {t for r in summaries for t in TAG.findall(str(r.message.get("content")))}
            live = store.active_messages(tip.id)
            live_tags = Counter(t for m in live if not m.get("_compressed_summary")
                                for t in TAG.findall(str(m.get("content") or "")))
            copies = Counter(t for r in stored if not r.message.get("_compressed_summary")
                             for t in TAG.findall(str(r.message.get("content") or "")))
            for tag in by_session[k]:
                # four messages carry the tag: user, call, result, answer
                if copies[tag] != 4:
                    lost.append(f"conc-{k} {tag}: stored {copies[tag]} times, not 4")
                elif live_tags[tag] < 4 and tag not in named:
                    lost.append(f"conc-{k} {tag}: left the window without a summary naming it")
            assert check_invariants(live, max_summaries=1) == [], check_invariants(live)
    finally:
        store.close()
    assert not lost, f"{len(lost)} messages lost, first: {lost[:5]}"
    assert len(committed) >= SESSIONS, "the run must compress every session at least once"
    fts_integrity(tmp_path / "state.db")
    with make_host(tmp_path, TailEngine(keep=1, threshold=900)) as host:
        for k in range(SESSIONS):
            window = host.resume(f"conc-{k}").window()
            validate_messages(window)
            # at most one unfinished turn per process may sit over the threshold
            assert host.tokens.count_all(window) < 900 + PROCESSES * 300, "never compacted"
    record("concurrency", mode=mode, processes=PROCESSES, sessions=SESSIONS, seconds=SECONDS,
           wall_seconds=round(wall, 1), turns=sum(r.get("turns", 0) for r in rows),
           messages=len(acked), committed=len(committed), deferred=statuses["deferred"],
           other_reports=dict(statuses), errors=len(errors), lost=len(lost),
           doubled=len(doubled))
