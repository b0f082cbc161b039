"""Benchmark of the default engine (hermes-compressor): deterministic phases and prune yield.

Run: ``python benchmarks/bench_compressor.py``.  Prints one markdown section to stdout.

* **Deterministic phases** — everything but the LLM call (the offline summariser writes the
  summary) on the largest real transcript and on a synthetic 100,000-message session: token
  counting, head/tail boundaries, phase-1 prune, redaction of the middle, prompt rendering,
  offline summary, and the whole ``compress`` (which includes all of them once).
* **Prune yield** — tokens reclaimed by step 1 alone (dedup + informative one-liners, no LLM)
  on the coding transcripts, as a share of the tool-output tokens outside the protected tail
  (target ≥ 60 %).

Transcripts come from ``$HERMES_HOST_TRANSCRIPTS`` (default ``../shared/data/transcripts``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _targets import Targets
from hermes_compressor import Compressor
from hermes_compressor.boundaries import find_cut, head_size
from hermes_compressor.prompt import build_prompt
from hermes_compressor.prune import PruneStats, dedup_results, prune_results
from hermes_compressor.trigger import tail_budget, threshold_tokens

from hermes_host.llm.base import SummaryJob
from hermes_host.llm.offline import OfflineSummarizer
from hermes_host.messages import normalize_alternation, repair_tool_pairs
from hermes_host.models import CompressionSettings, CompressRequest, GuardState, Message
from hermes_host.redact import redact_messages

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
CODING_PREFIXES = ("claudecode-", "miniswe-", "openhands-", "sweagent-fc-")
CONTEXT = 200_000


def load(path: Path) -> list[Message]:
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    repaired, _ = repair_tool_pairs(raw)
    return normalize_alternation(repaired)[0]


def synthetic(n: int, seed: int = 7) -> list[Message]:
    """A deterministic agent session of ``n`` messages: user turns, tool calls of several
    kinds with outputs from 40 to 4,000 characters, mostly small (some repeated verbatim)."""
    rng = random.Random(seed)
    tools = [("Bash", "command"), ("Read", "file_path"), ("Grep", "pattern"), ("WebFetch", "url")]
    msgs: list[Message] = [{"role": "system", "content": "You are a coding agent. " * 40}]
    i = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": f"task {i}: fix module_{i % 97}.py " * 3})
        for _ in range(rng.randint(1, 4)):
            name, key = rng.choice(tools)
            call_id = f"call_{i}_{len(msgs)}"
            size = rng.choices([40, 120, 400, 1_500, 4_000], weights=[30, 30, 20, 15, 5])[0]
            body = f"output of {name} #{i % 13}\n" * (size // 20)
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": json.dumps({key: f"src/m{i % 50}.py"}),
                            },
                        }
                    ],
                }
            )
            msgs.append({"role": "tool", "tool_call_id": call_id, "content": body})
        msgs.append({"role": "assistant", "content": f"done with task {i}"})
        i += 1
    return msgs[:n] if msgs[n - 1]["role"] != "tool" else msgs[: n + 1]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def phases(name: str, messages: list[Message]) -> dict[str, Any]:
    engine = Compressor(summarizer=OfflineSummarizer(), fallback=OfflineSummarizer())
    settings = CompressionSettings()
    total, t_count = timed(lambda: sum(engine.count(m) for m in messages))
    threshold = threshold_tokens(settings, CONTEXT)
    budget = tail_budget(settings, threshold)
    head_end = head_size(messages, first_round=True, protect_first_n=3)
    cut, t_cut = timed(
        lambda: find_cut(messages, engine.count, head_end=head_end, budget=budget, floor_count=20)
    )
    stats = PruneStats()

    def prune() -> list[Message]:
        out = dedup_results(messages, engine.count, start=head_end, min_chars=200, stats=stats)
        return prune_results(out, engine.count, start=head_end, end=cut, min_chars=200, stats=stats)

    pruned, t_prune = timed(prune)
    middle = pruned[head_end:cut]
    _, t_redact = timed(lambda: redact_messages(middle))
    prompt, t_prompt = timed(
        lambda: build_prompt(
            middle,
            previous_summary=None,
            budget_tokens=4_000,
            today=None,
            focus_topic=None,
            memory_context=None,
            unattended=False,
            max_turn_chars=4_000,
            max_source_chars=400_000,
            max_previous_chars=48_000,
        )
    )
    job = SummaryJob(prompt=prompt, messages=middle, budget_tokens=4_000)
    _, t_offline = timed(lambda: OfflineSummarizer().summarize(job))
    request = CompressRequest(
        session_id="bench",
        messages=messages,
        current_tokens=total,
        context_length=CONTEXT,
        guards=GuardState(now=0.0),
        compression=settings,
    )
    result, t_total = timed(lambda: engine.compress(request=request))
    after = sum(engine.count(m) for m in result.messages)
    return {
        "name": name,
        "messages": len(messages),
        "tokens": total,
        "after": after,
        "outcome": result.outcome,
        "count": t_count,
        "cut": t_cut,
        "prune": t_prune,
        "redact": t_redact,
        "prompt": t_prompt,
        "offline": t_offline,
        "total": t_total,
    }


def prune_yield(path: Path) -> tuple[int, int]:
    """(tool-output tokens outside the tail, tokens the prune step reclaims there)."""
    messages = load(path)
    engine = Compressor()
    settings = CompressionSettings()
    # a window at which this transcript compresses: threshold = its size
    total = sum(engine.count(m) for m in messages)
    context = max(8_000, int(total / 0.75) + 1)
    threshold = threshold_tokens(settings, context)
    head_end = head_size(messages, first_round=True, protect_first_n=settings.protect_first_n)
    cut = find_cut(
        messages,
        engine.count,
        head_end=head_end,
        budget=tail_budget(settings, threshold),
        floor_count=20,
    )
    outside = [i for i in range(head_end, cut) if messages[i]["role"] == "tool"]
    before = sum(engine.count(messages[i]) for i in outside)
    stats = PruneStats()
    out = dedup_results(messages, engine.count, start=head_end, min_chars=200, stats=stats)
    out = prune_results(out, engine.count, start=head_end, end=cut, min_chars=200, stats=stats)
    after = sum(engine.count(out[i]) for i in outside)
    return before, before - after


SCALE_SIZES = (10_000, 100_000)
SCALE_TARGET_SECONDS = 3.0
"""Issue 15: one compression of a 100,000-message session, CPU seconds."""
SCALE_TARGET_RATIO = 12.0
"""Linear: 10× the messages costs at most 12× (a little slack for fixed costs)."""


def whole_compress_cpu(n: int) -> float:
    """CPU seconds of one ``compress`` (offline summariser) of a synthetic ``n``-message
    session — CPU, not wall time: the machine is shared, and another process's load would
    count as ours."""
    messages = synthetic(n)
    engine = Compressor(summarizer=OfflineSummarizer(), fallback=OfflineSummarizer())
    engine.count({"role": "user", "content": "warm the tokenizer"})
    request = CompressRequest(
        session_id="bench", messages=messages, current_tokens=10**7, context_length=CONTEXT,
        guards=GuardState(now=0.0), compression=CompressionSettings(),
    )
    start = time.process_time()
    result = engine.compress(request=request)
    spent = time.process_time() - start
    assert result.outcome == "summarised", result.outcome
    return spent


PRUNE_TARGET = 0.60
"""Share of the tool-output tokens outside the protected tail that step 1 reclaims."""


def main() -> int:
    targets = Targets("compressor")
    lines = ["## compressor", ""]
    paths = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
    rows = []
    if paths:
        largest = max(paths, key=lambda p: p.stat().st_size)
        rows.append(phases(f"`{largest.stem}` (largest real)", load(largest)))
    rows.append(phases("synthetic 100,000 messages", synthetic(100_000)))
    lines += [
        "Deterministic phases (no LLM call; offline summariser), first compression at a "
        f"{CONTEXT:,}-token window, seconds on this machine:",
        "",
        "| session | messages | tokens | after | count | tail cut | prune | redact middle | "
        "prompt | offline summary | whole compress | outcome |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['messages']:,} | {r['tokens']:,} | {r['after']:,} | "
            f"{r['count']:.2f} | {r['cut']:.2f} | {r['prune']:.2f} | {r['redact']:.2f} | "
            f"{r['prompt']:.2f} | "
            f"{r['offline']:.2f} | {r['total']:.2f} | {r['outcome']} |"
        )
    lines.append("")
    small, large = SCALE_SIZES
    cpu = {n: whole_compress_cpu(n) for n in SCALE_SIZES}
    seconds = targets.check(f"one compression of {large:,} messages (CPU)", cpu[large], "<=",
                            SCALE_TARGET_SECONDS, "{:.2f} s", "{:.0f} s")
    ratio = targets.check(f"compression CPU, {large:,} vs {small:,} messages",
                          cpu[large] / cpu[small], "<=", SCALE_TARGET_RATIO, "{:.1f}×", "{:.0f}×")
    lines += [
        "One whole `compress` (offline summariser) of a synthetic session, CPU seconds in "
        "this run:",
        "",
        "| messages | CPU | target |",
        "|---:|---:|---|",
        f"| {small:,} | {cpu[small]:.2f} s | |",
        f"| {large:,} | {cpu[large]:.2f} s | {seconds.target_text} |",
        f"| ratio | {ratio.shown_value} | {ratio.target_text} (linear: 10×) |",
        "",
    ]
    coding = [p for p in paths if p.name.startswith(CODING_PREFIXES)]
    if coding:
        lines += [
            "Prune step alone (dedup + informative one-liners, no LLM) on the coding "
            "transcripts, at a window where each one compresses: tool-output tokens outside "
            f"the protected tail, and the share reclaimed (target ≥ {PRUNE_TARGET:.0%}; "
            "a transcript below it is marked MISSED):",
            "",
            "| transcript | tool tokens outside tail | reclaimed | share |",
            "|---|---:|---:|---:|",
        ]
        sum_before = sum_saved = 0
        for path in coding:
            before, saved = prune_yield(path)
            sum_before += before
            sum_saved += saved
            share = "n/a"
            if before:
                check = targets.check(
                    f"prune share, `{path.stem}`", saved / before, ">=", PRUNE_TARGET, "{:.0%}"
                )
                share = check.shown_value + check.marker
            lines.append(f"| `{path.stem}` | {before:,} | {saved:,} | {share} |")
        total = targets.check("prune share, all coding transcripts",
                              sum_saved / sum_before if sum_before else 0.0, ">=",
                              PRUNE_TARGET, "{:.0%}")
        lines.append(
            f"| **all coding transcripts** | {sum_before:,} | {sum_saved:,} | "
            f"**{total.shown_value}**{total.marker} |"
        )
        lines.append("")
    else:
        lines += [f"(no transcripts found in {TRANSCRIPTS}; prune yield not measured)", ""]
    print("\n".join(lines).rstrip())
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
