"""Token counting: throughput, and the per-turn cost of a session's running total.

Run: ``python benchmarks/bench_tokens.py``.  Prints one markdown section; every ratio is
measured in this run.

* Throughput: tokens per second counting a real transcript (cl100k, offline encoding), cold
  (a fresh cache) and warm (every message already cached).  Falls back to generated text when
  the transcripts folder is absent.
* Running total: each turn appends one new message and reads the total, at 100 and at 10,000
  messages in the window.  ``RunningTotal`` (per-message counts) should cost the same at both
  sizes (target ratio ≤ 1.5); recounting the window through the cache each turn is shown for
  contrast.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _targets import MISSED, Targets

from hermes_host.tokens import RunningTotal, TokenCounter, count_message, encoding_info

TARGET_RATIO = 1.5
SIZES = (100, 10_000)
TURNS = 300
RECOUNT_TURNS = {100: 30, 10_000: 5}  # the slow path is slow: few turns suffice


def _transcripts() -> Path:
    default = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "transcripts"
    return Path(os.environ.get("HERMES_HOST_TRANSCRIPTS") or default)


def _corpus() -> tuple[list[dict[str, Any]], str]:
    folder = _transcripts()
    files = (
        sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_size) if folder.is_dir() else []
    )
    if files:
        path = files[-1]  # the largest real session
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line], f"real transcript `{path.name}`"
    words = "the quick brown fox jumps over the lazy dog while tests run in ci".split()
    generated = []
    for i in range(400):
        text = " ".join(words[(i + j) % len(words)] for j in range(300))
        generated.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return generated, "generated text (transcripts folder not found)"


def _throughput(messages: list[dict[str, Any]]) -> tuple[int, float, float]:
    counter = TokenCounter()
    t0 = time.perf_counter()
    total = counter.count_all(messages)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm_total = counter.count_all(messages)
    warm = time.perf_counter() - t0
    assert warm_total == total
    return total, total / cold, total / warm


def _fresh(messages: list[dict[str, Any]], turn: int, size: int) -> dict[str, Any]:
    """The message appended on ``turn``: real content, made unique so it is a cache miss."""
    base = messages[turn % len(messages)]
    return {**base, "content": f"{base.get('content') or ''}\n[turn {turn} of {size}]"}


def _window(messages: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    return [messages[i % len(messages)] for i in range(size)]


def _running_turn_cost(messages: list[dict[str, Any]], size: int) -> float:
    running = RunningTotal(_window(messages, size), counter=TokenCounter())
    costs = []
    for turn in range(TURNS):
        message = _fresh(messages, turn, size)
        t0 = time.perf_counter()
        running.append(message)
        _ = running.total
        costs.append(time.perf_counter() - t0)
    return statistics.median(costs) * 1e6


def _recount_turn_cost(messages: list[dict[str, Any]], size: int) -> float:
    counter = TokenCounter()
    window = _window(messages, size)
    counter.count_all(window)  # warm: old messages are cache hits
    costs = []
    for turn in range(RECOUNT_TURNS[size]):
        window.append(_fresh(messages, turn, size))
        t0 = time.perf_counter()
        counter.count_all(window)
        costs.append(time.perf_counter() - t0)
    return statistics.median(costs) * 1e6


def main() -> int:
    targets = Targets("tokens")
    messages, source = _corpus()
    info = encoding_info()
    total, cold_tps, warm_tps = _throughput(messages)
    per_message = statistics.median(
        [_timed(lambda m=m: count_message(m)) for m in messages[:200]]  # type: ignore[misc]
    )
    running = {size: _running_turn_cost(messages, size) for size in SIZES}
    recount = {size: _recount_turn_cost(messages, size) for size in SIZES}
    small, large = SIZES
    ratio = running[large] / running[small]
    recount_ratio = recount[large] / recount[small]
    check = targets.check(f"`RunningTotal` per-turn cost, {large:,} vs {small:,} messages",
                          ratio, "<=", TARGET_RATIO, "{:.2f}×", "{}×")
    verdict = "met" if check.met else MISSED

    print("## tokens\n")
    print(
        f"Counting {len(messages)} messages ({total:,} tokens) of {source}; "
        f"method: {info['method']} ({info['encoding'] or 'no encoding'}).\n"
    )
    print("| measure | value |")
    print("|---|---:|")
    print(f"| throughput, cold cache | {cold_tps:,.0f} tokens/s |")
    print(f"| throughput, warm cache | {warm_tps:,.0f} tokens/s |")
    print(f"| one message, uncached (median) | {per_message:.1f} µs |")
    for size in SIZES:
        print(f"| `RunningTotal` per turn, {size:,} messages (median) | {running[size]:.1f} µs |")
    for size in SIZES:
        print(
            f"| cached full recount per turn, {size:,} messages (median) | {recount[size]:.1f} µs |"
        )
    print()
    print(
        f"- `RunningTotal` per-turn cost, {large:,} vs {small:,} messages: **{ratio:.2f}×** "
        f"(target {check.spec}: {verdict})."
    )
    print(
        f"- A cached full recount grows with the window: **{recount_ratio:.1f}×** "
        "for the same step (every old message is still hashed for its cache key)."
    )
    return targets.finish()


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e6


if __name__ == "__main__":
    sys.exit(main())
