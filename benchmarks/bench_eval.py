"""``hermes-host eval`` on the real transcripts: needed-later recall and tokens per call.

Run: ``python benchmarks/bench_eval.py``.  Prints one markdown section to stdout.

1. **Recall** — agent transcripts long enough to compress several times at a 32K window,
   replayed with: the compressor alone (offline summariser), compressor + retrieval, and
   compressor + retrieval without its names index (excerpts only).
2. **Topic routing** — the two real aider sessions interleaved four turns at a time (a
   two-topic session, built in a temporary file at run time), at 8K and 16K windows:
   compressor alone, + topic_router, + topic_router + retrieval.

Every engine set of one table runs at the same context length (the same visible budget).
Transcripts come from ``$HERMES_HOST_TRANSCRIPTS`` (default ``../shared/data/transcripts``).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hermes_host.config import HermesConfig, parse_config
from hermes_host.evaluation import EvalRun, evaluate, parse_engine_sets, summarise_runs
from hermes_host.testing.generate import interleave_transcripts

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
RECALL_FILES = [
    "claudecode-spotter-258c7280.jsonl",
    "claudecode-spotter-ae4a77f8.jsonl",
    "miniswe-deepseek-sqlfluff-1517.jsonl",
]
AIDER_FILES = ["aider-2024-08-13-1342.jsonl", "aider-2024-08-06-0855.jsonl"]


def _config(context_length: int, retrieval: dict[str, object] | None = None) -> HermesConfig:
    return parse_config({
        "model": {"context_length": context_length},
        "summarizer": {"provider": "offline"},
        "memory": {"providers": []},
        "engines": {"retrieval": retrieval or {}},
    })


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _rows(label_runs: list[tuple[str, list[EvalRun]]]) -> list[str]:
    rows = []
    base_tokens: float | None = None
    for label, runs in label_runs:
        summary = next(iter(summarise_runs(runs).values()))
        tokens = summary["mean_tokens_per_call"]
        base_tokens = base_tokens or tokens
        rows.append(
            f"| {label} | {summary['transcripts_with_recall']}/{summary['transcripts']} | "
            f"{_fmt(summary['median_needed_later_recall'])} | "
            f"{_fmt(summary['mean_needed_later_recall'])} | {tokens:,.0f} | "
            f"{tokens / base_tokens:.2f} | {summary['compressions']} | "
            f"{summary['invariant_violations']} |"
        )
    return rows


HEADER = (
    "| engines | transcripts with recall | median recall | mean recall | tokens/call | "
    "× compressor | compressions | violations |\n|---|---:|---:|---:|---:|---:|---:|---:|"
)


def main() -> None:
    print("## eval\n")
    missing = [n for n in RECALL_FILES + AIDER_FILES if not (TRANSCRIPTS / n).is_file()]
    if missing:
        print(f"Transcripts not found at `{TRANSCRIPTS}` (set HERMES_HOST_TRANSCRIPTS).")
        return
    started = time.monotonic()
    print(
        "`hermes-host eval` (see docs/evaluation.md): every request the host builds is "
        "recorded; **needed-later recall** = share of the artifacts seen before a compression "
        "and used again after it that are visible in the request right after it (median "
        "over transcripts). Offline summariser, fresh SQLite stores, figures from this run.\n"
    )
    files = [TRANSCRIPTS / n for n in RECALL_FILES]
    ctx = 32_000
    base = evaluate(_config(ctx), files, parse_engine_sets("compressor"))
    with_retrieval = evaluate(_config(ctx), files, parse_engine_sets("compressor+retrieval"))
    excerpts_only = evaluate(
        _config(ctx, {"names_index": False}), files, parse_engine_sets("compressor+retrieval")
    )
    print(f"**Recall** — {', '.join(RECALL_FILES)}; context length {ctx:,}.\n")
    print(HEADER)
    for row in _rows([
        ("compressor", base),
        ("compressor + retrieval", with_retrieval),
        ("compressor + retrieval (names_index: false)", excerpts_only),
    ]):
        print(row)
    print()
    print("| transcript | compressor | + retrieval | + retrieval, excerpts only |")
    print("|---|---:|---:|---:|")
    for a, b, c in zip(base, with_retrieval, excerpts_only, strict=True):
        print(f"| {a.transcript} | {_fmt(a.recall)} | {_fmt(b.recall)} | {_fmt(c.recall)} |")
    print()

    with tempfile.TemporaryDirectory() as tmp:
        mixed = interleave_transcripts(
            [TRANSCRIPTS / n for n in AIDER_FILES], Path(tmp) / "aider-mixed.jsonl"
        )
        for ctx in (8_000, 16_000):
            sets = []
            for spec in ("compressor", "compressor+topic_router",
                         "compressor+topic_router+retrieval"):
                sets.append((spec.replace("+", " + "),
                             evaluate(_config(ctx), [mixed], parse_engine_sets(spec))))
            print(
                f"**Topic routing** — the two aider sessions interleaved 4 turns at a time; "
                f"context length {ctx:,}.\n"
            )
            print(HEADER)
            for row in _rows(sets):
                print(row)
            print()
    print(f"Wall time {time.monotonic() - started:.0f} s.")


if __name__ == "__main__":
    main()
