"""Replay every real transcript through the whole host (``hermes-host replay`` end to end).

Run: ``python benchmarks/bench_replay.py``.  Prints one markdown section to stdout.

Each transcript is replayed with the default engine (hermes-compressor) and the offline
summariser into a fresh SQLite store, with a small window that is still feasible for it:
1.5 × (system prompt + its largest run of 4 consecutive messages as sent), at least 8K.
Columns: the input size, the window used, committed compressions, the largest window left by
any compression (must stay ≤ the window), the final window, invariant violations (window +
prompt cache, must be 0), wall time, and the host's time per step.

Transcripts come from ``$HERMES_HOST_TRANSCRIPTS`` (default ``../shared/data/transcripts``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from _targets import Targets

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.messages import normalize_alternation, repair_tool_pairs
from hermes_host.replay import replay_transcript, sparkline
from hermes_host.tokens import count_message, count_messages
from hermes_host.transcripts import load_transcript

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
MIN_WINDOW = 8_000


def feasible_window(system: str | None, messages: list[dict[str, object]]) -> int:
    sent, _ = normalize_alternation(repair_tool_pairs(messages)[0])
    sizes = [count_message(m) for m in sent]
    largest = max(sum(sizes[i : i + 4]) for i in range(len(sizes)))
    head = count_message({"role": "system", "content": system}) if system else 0
    return max(MIN_WINDOW, -(-int(1.5 * (head + largest)) // 1000) * 1000)


def main() -> int:
    targets = Targets("replay")
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    print("## replay\n")
    if not files:
        print(f"No transcripts found at `{TRANSCRIPTS}` (set HERMES_HOST_TRANSCRIPTS).")
        return targets.finish()
    print(
        "Every real transcript replayed through `ContextHost` (default compressor, offline "
        "summariser, fresh SQLite store), with the smallest feasible window. Figures measured "
        "in this run.\n"
    )
    print(
        "| transcript | msgs | input tok | window | compressions | max after | final | "
        "violations | wall s | ms/step | window over time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    totals = {"msgs": 0, "tokens": 0, "compressions": 0, "violations": 0, "wall": 0.0}
    steps_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            transcript = load_transcript(path)
            window = feasible_window(transcript.system_prompt, transcript.messages)
            config = HermesConfig.model_validate(
                {
                    "model": {"context_length": window},
                    "summarizer": {"provider": "offline"},
                    "memory": {"providers": []},
                }
            )
            with ContextHost.from_config(config, store=Path(tmp) / f"{path.stem}.db") as host:
                start = time.perf_counter()
                result = replay_transcript(host, transcript)
                wall = time.perf_counter() - start
            tokens = count_messages(transcript.messages)
            committed = result.committed
            after = max((c.tokens_after for c in committed), default=0)
            fits = targets.check(f"largest window after a compression, `{path.stem}`", after,
                                 "<=", window, "{:,}")
            clean = targets.check(f"invariant violations, `{path.stem}`",
                                  result.invariant_violations, "<=", 0, "{:,}")
            print(
                f"| `{path.stem}` | {transcript.message_count} | {tokens:,} | {window:,} | "
                f"{len(committed)} | {after:,}{fits.marker} | {result.final_window_tokens:,} | "
                f"{result.invariant_violations}{clean.marker} | {wall:.2f} | "
                f"{1000 * wall / max(result.steps, 1):.1f} | "
                f"`{sparkline(result.window_series, 24)}` |"
            )
            totals["msgs"] += transcript.message_count
            totals["tokens"] += tokens
            totals["compressions"] += len(committed)
            totals["violations"] += result.invariant_violations
            totals["wall"] += wall
            steps_total += result.steps
    print(
        f"| **total** | {totals['msgs']:,} | {int(totals['tokens']):,} | | "
        f"{int(totals['compressions'])} | | | {int(totals['violations'])} | "
        f"{totals['wall']:.1f} | {1000 * totals['wall'] / max(steps_total, 1):.1f} | |"
    )
    print(
        f"\n{len(files)} transcripts, {steps_total:,} steps; ms/step includes storing every "
        "message, the fenced `should_compress`/`select_context` calls, building and checking "
        "each request, and the compressions themselves. Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs."
    )
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
