"""What recording request manifests and compaction receipts costs (issue 29).

Run: ``python benchmarks/bench_manifests.py [--reps N]``.  Prints one markdown section.

Every real transcript is replayed through ``ContextHost`` (default compressor, offline
summariser, a fresh SQLite store, a 16K window) twice per repetition — with
``store.record_requests`` on and off, interleaved so both see the same machine — and the
pooled figures are compared:

* **store size**: the store's bytes (file + WAL, after a checkpoint) with recording over
  without it; and the bytes the three tables hold per recorded request;
* **host time**: the replay's wall time (the host's whole work per step: appends, requests,
  end of turn, compressions) with recording over without it, the best of the repetitions.

Transcripts come from ``$HERMES_HOST_TRANSCRIPTS`` (default ``../shared/data/transcripts``).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from _targets import Targets

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.replay import replay_transcript
from hermes_host.transcripts import Transcript, load_transcript

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
WINDOW = 16_000


def _replay(transcript: Transcript, db: Path, record: bool) -> float:
    config = HermesConfig.model_validate({
        "model": {"context_length": WINDOW},
        "summarizer": {"provider": "offline"},
        "memory": {"providers": []},
        "store": {"record_requests": record},
    })
    with ContextHost.from_config(config, store=db) as host:
        start = time.perf_counter()
        replay_transcript(host, transcript)
        return time.perf_counter() - start


def _size(db: Path) -> tuple[int, int, int]:
    """(store bytes after a checkpoint, bytes in the recording tables, recorded requests)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        recorded = conn.execute(
            "SELECT coalesce(sum(length(entries) + length(details) + 48), 0), count(*) "
            "FROM requests").fetchone()
        parts = conn.execute(
            "SELECT coalesce(sum(length(hash) + length(message) + 8), 0) FROM request_parts"
        ).fetchone()[0]
        receipts = conn.execute(
            "SELECT coalesce(sum(length(receipt) + 40), 0) FROM compactions").fetchone()[0]
    files = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return files, int(recorded[0]) + int(parts) + int(receipts), int(recorded[1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    targets = Targets("manifests")
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    print("## manifests\n")
    if not files:
        print(f"No transcripts found at `{TRANSCRIPTS}` (set HERMES_HOST_TRANSCRIPTS).")
        return targets.finish()
    transcripts = [load_transcript(p) for p in files]
    best = {True: [float("inf")] * len(files), False: [float("inf")] * len(files)}
    sizes: dict[bool, list[int]] = {True: [], False: []}
    table_bytes, requests = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(max(1, args.reps)):
            for i, transcript in enumerate(transcripts):
                for record in ((True, False) if (rep + i) % 2 == 0 else (False, True)):
                    db = Path(tmp) / f"{rep}-{i}-{int(record)}.db"
                    best[record][i] = min(best[record][i], _replay(transcript, db, record))
                    if rep == 0:
                        size, recorded, n = _size(db)
                        sizes[record].append(size)
                        if record:
                            table_bytes += recorded
                            requests += n
    size_on, size_off = sum(sizes[True]), sum(sizes[False])
    time_on, time_off = sum(best[True]), sum(best[False])
    size_added = size_on / size_off - 1
    time_added = time_on / time_off - 1
    print(f"{len(files)} real transcripts replayed through `ContextHost` at a {WINDOW:,}-token "
          f"window (compressor, offline summariser, fresh SQLite stores), recording on and "
          f"off interleaved; best of {max(1, args.reps)} per transcript; one run.\n")
    size_check = targets.check("store size added by recording", size_added, "<=", 0.10,
                               fmt="{:.1%}")
    time_check = targets.check("host time added by recording", time_added, "<=", 0.05,
                               fmt="{:.1%}")
    print("| figure | recording off | recording on | added | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| store bytes (file + WAL) | {size_off:,} | {size_on:,} | {size_added:+.1%} | "
          f"{size_check.target_text} |")
    print(f"| replay wall time, s (host's whole work) | {time_off:.2f} | {time_on:.2f} | "
          f"{time_added:+.1%} | {time_check.target_text} |")
    print(f"\n{requests:,} requests recorded; the three tables hold {table_bytes:,} bytes of "
          f"data: {table_bytes / max(1, requests):,.0f} bytes per request (ids in runs, "
          "parts stored once, receipts included).\n")
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
