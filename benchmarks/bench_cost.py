"""What a session costs and whether every request fits — this checkout against a base commit,
measured in one run on the user's path (issue 28).

Run: ``python benchmarks/bench_cost.py [--base REV] [--json]``.  Prints one markdown section.

Every shared transcript is replayed through :class:`~hermes_host.host.ContextHost` (the
``replay`` path: ``build_request`` before every model call, ``end_turn`` after every step)
with the offline summariser, at 16K, 32K and 64K windows (``max_output_tokens`` 8,192), once
with this checkout and once with ``--base`` (default 869f2f1, the commit before issue 28),
unpacked with ``git archive`` and put first on ``PYTHONPATH`` in a subprocess.  Both sides
are measured by this file's own code, so the figures are like for like:

* every request's tokens, and the leading messages it shares with the previous request (a
  cache read for a prompt-caching provider; the rest is a cache write);
* every summary request an LLM summariser would make: the engine's summariser is wrapped
  (the offline one, unchanged) to count its prompt and its answer;
* requests over the request budget ``context_length − min(max_output_tokens, context/2)``;
* the same with a summariser that fails every call (HTTP 429), where the engine falls back.

Cost is in input-token equivalents under Anthropic's shape (cache read 0.1, cache write
1.25, uncached input 1.0, output 5.0); the agent's own output is left out (the same whatever
the context manager does).  "Input-side cost" = every model call's input + the summariser's
input and output.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from _targets import Targets

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
CONTEXTS = (16_000, 32_000, 64_000)
MAX_OUTPUT = 8_192
READ, WRITE, INPUT, OUTPUT = 0.1, 1.25, 1.0, 5.0
DEFAULT_BASE = "869f2f1"


def _budget(context: int) -> int:
    return context - min(MAX_OUTPUT, context // 2)


def _measure_one(
    path: Path, context: int, failing: bool, compression: dict[str, float]
) -> dict[str, Any]:
    from hermes_host.config import parse_config
    from hermes_host.host import ContextHost
    from hermes_host.llm.base import TransientSummaryError
    from hermes_host.replay import replay_transcript
    from hermes_host.tokens import count_messages, count_text
    from hermes_host.transcripts import load_transcript

    config = parse_config({
        "model": {"context_length": context, "max_output_tokens": MAX_OUTPUT},
        "summarizer": {"provider": "offline"},
        "memory": {"providers": []},
        **({"compression": compression} if compression else {}),
    })
    summary = {"requests": 0, "input": 0, "output": 0}

    class Counting:
        """The offline summariser, counted as an LLM summariser would be billed."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.name = inner.name
            self.calls_llm = inner.calls_llm

        def summarize(self, job: Any) -> str:
            summary["requests"] += 1
            summary["input"] += count_text(job.prompt)
            if failing:
                raise TransientSummaryError("429 rate limited (benchmark)")
            text = str(self.inner.summarize(job))
            summary["output"] += count_text(text)
            return text

    with tempfile.TemporaryDirectory() as tmp:
        host = ContextHost.from_config(config, store=Path(tmp) / "state.db")
        try:
            engine = host.plugins.engines["compressor"]
            engine._summarizer = Counting(engine._offline())
            requests: list[tuple[int, int]] = []
            previous: list[Any] = []
            compressions: list[tuple[int, int]] = []

            def on_request(index: int, request: list[Any], decisions: Any) -> None:
                nonlocal previous
                tokens = count_messages(request)
                shared = 0
                for old, new in zip(previous, request, strict=False):
                    if old != new:
                        break
                    shared += count_messages([new])
                requests.append((tokens, shared))
                previous = list(request)

            def on_compression(record: Any) -> None:
                if record.status == "committed":
                    compressions.append((record.tokens_before, record.tokens_after))

            transcript = load_transcript(path)
            replay_transcript(host, transcript, on_request=on_request,
                              on_compression=on_compression)
        finally:
            host.close()
    budget = _budget(context)
    calls = sum(c * READ + (t - c) * WRITE for t, c in requests)
    summaries = summary["input"] * INPUT + summary["output"] * OUTPUT
    return {
        "transcript": path.name,
        "calls": len(requests),
        "max_request": max((t for t, _ in requests), default=0),
        "over_budget": sum(1 for t, _ in requests if t > budget),
        "request_tokens": sum(t for t, _ in requests),
        "cached_tokens": sum(c for _, c in requests),
        "compressions": len(compressions),
        "shares_freed": [(b - a) / b for b, a in compressions if b],
        "summary_requests": summary["requests"],
        "summary_input": summary["input"],
        "summary_output": summary["output"],
        "calls_cost": calls,
        "input_side_cost": calls + summaries,
    }


def measure(
    compression: dict[str, float] | None = None, contexts: tuple[int, ...] = CONTEXTS,
    failing: tuple[bool, ...] = (False, True),
) -> dict[str, Any]:
    """Every transcript at every context, with a working and a failing summariser."""
    paths = sorted(TRANSCRIPTS.glob("*.jsonl"))
    out: dict[str, Any] = {}
    for context in contexts:
        for fails in failing:
            key = f"{context}{'-failing' if fails else ''}"
            out[key] = [_measure_one(p, context, fails, compression or {}) for p in paths]
    return out


def _base_figures(rev: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-cost-base-") as tmp:
        archive = Path(tmp) / "base.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "src", filter="data")
        src = Path(tmp) / "src"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(src), str(src / "plugins" / "hermes-compressor"), env.get("PYTHONPATH", "")]
        )
        done = subprocess.run(
            [sys.executable, __file__, "--measure-only"], env=env, cwd=tmp,
            capture_output=True, text=True, check=True,
        )
        return dict(json.loads(done.stdout))


def _total(rows: list[dict[str, Any]], key: str) -> float:
    return float(sum(r[key] for r in rows))


def _median_freed(rows: list[dict[str, Any]]) -> float | None:
    shares = [s for r in rows for s in r["shares_freed"]]
    return statistics.median(shares) if shares else None


TARGETS = {"compressions_16k": 150, "share_freed_16k": 0.40, "cost_16k": 0.75,
           "cost_32k": 0.90}
"""Issue 28's targets for this section (the recall ones are in bench_eval.py)."""


def check_targets(new: dict[str, Any], base: dict[str, Any], targets: Any) -> list[str]:
    """Issue 28's cost and bound targets, as lines for the page."""
    lines = []
    checks = []
    for context in CONTEXTS:
        for suffix, what in (("", ""), ("-failing", " with a summariser failing every call")):
            rows = new[f"{context}{suffix}"]
            checks.append((f"requests over the budget at {context // 1000}K{what}",
                           _total(rows, "over_budget"), "<=", 0, "{:,.0f}"))
    rows16, rows32 = new["16000"], new["32000"]
    checks += [
        ("compressions at 16K", _total(rows16, "compressions"), "<=",
         TARGETS["compressions_16k"], "{:,.0f}"),
        ("median share freed at 16K", _median_freed(rows16) or 0.0, ">=",
         TARGETS["share_freed_16k"], "{:.2f}"),
        ("input-side cost ÷ base at 16K",
         _total(rows16, "input_side_cost") / _total(base["16000"], "input_side_cost"), "<=",
         TARGETS["cost_16k"], "{:.2f}"),
        ("input-side cost ÷ base at 32K",
         _total(rows32, "input_side_cost") / _total(base["32000"], "input_side_cost"), "<=",
         TARGETS["cost_32k"], "{:.2f}"),
    ]
    for name, value, comparison, target, fmt in checks:
        check = targets.check(name, value, comparison, target, fmt=fmt)
        lines.append(f"- {name}: **{check.shown_value}** (target {check.spec}){check.marker}")
    return lines


def render(new: dict[str, Any], base: dict[str, Any], rev: str) -> str:
    lines = [
        "## cost",
        "",
        "**Cost and the request bound (issue 28).**",
        "",
        f"`python benchmarks/bench_cost.py` — the 22 shared transcripts replayed through "
        f"`ContextHost` (offline summariser, `max_output_tokens` {MAX_OUTPUT:,}), this "
        f"checkout against `{rev}` in one run.  Cost in input-token equivalents (cache read "
        "0.1, cache write 1.25, uncached input 1.0, output 5.0); summary requests counted as "
        "an LLM summariser would make them.",
        "",
        "| window | code | requests over budget | with a failing summariser | max request "
        "| compressions | median share freed | summary requests (in / out tokens) "
        "| cache hit rate | input-side cost | ratio |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for context in CONTEXTS:
        key = str(context)
        base_cost = _total(base[key], "input_side_cost")
        for label, figures in ((rev, base), ("this checkout", new)):
            rows, failing = figures[key], figures[f"{key}-failing"]
            freed = _median_freed(rows)
            cost = _total(rows, "input_side_cost")
            hit = _total(rows, "cached_tokens") / max(1.0, _total(rows, "request_tokens"))
            lines.append(
                f"| {context // 1000}K (budget {_budget(context):,}) | {label} | "
                f"{_total(rows, 'over_budget'):,.0f} | {_total(failing, 'over_budget'):,.0f} | "
                f"{max(r['max_request'] for r in rows):,} | "
                f"{_total(rows, 'compressions'):,.0f} | "
                f"{'—' if freed is None else f'{freed:.2f}'} | "
                f"{_total(rows, 'summary_requests'):,.0f} "
                f"({_total(rows, 'summary_input'):,.0f} / {_total(rows, 'summary_output'):,.0f}) | "
                f"{hit:.2f} | {cost:,.0f} | {cost / base_cost:.2f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="commit to compare against")
    parser.add_argument("--json", action="store_true", help="print the raw figures")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a target is missed (nox -s bench -- --check)")
    parser.add_argument(
        "--sweep", metavar="KEY=V1,V2", action="append", default=[],
        help="also measure this checkout with compression.KEY set to each value (16K and "
             "32K, working summariser): the trade-off table behind the defaults",
    )
    args = parser.parse_args()
    if not TRANSCRIPTS.is_dir():
        print(f"(transcripts not found at {TRANSCRIPTS}; skipped)")
        return 0
    if args.measure_only:
        print(json.dumps(measure()))
        return 0
    new = measure()
    base = _base_figures(args.base)
    sweeps = _sweeps(args.sweep)
    if args.json:
        print(json.dumps({"base": base, "new": new, "sweeps": sweeps}))
        return 0
    print(render(new, base, args.base))
    if sweeps:
        print()
        print(render_sweeps(sweeps, base, args.base))
    targets = Targets("cost")
    print("\nTargets (issue 28), measured in this run:\n")
    print("\n".join(check_targets(new, base, targets)))
    return targets.finish()


def _sweeps(specs: list[str]) -> list[dict[str, Any]]:
    """Every combination of the ``--sweep`` values, measured at 16K and 32K."""
    grid: list[dict[str, float]] = [{}]
    for spec in specs:
        key, _, values = spec.partition("=")
        grid = [{**g, key: float(v)} for g in grid for v in values.split(",")]
    return [{"compression": g, "figures": measure(g, (16_000, 32_000), (False,))}
            for g in grid if g]


def render_sweeps(sweeps: list[dict[str, Any]], base: dict[str, Any], rev: str) -> str:
    lines = [
        "| compression settings | window | compressions | median share freed "
        f"| input-side cost vs `{rev}` |",
        "|---|---|---:|---:|---:|",
    ]
    for sweep in sweeps:
        label = ", ".join(f"{k} {v:g}" for k, v in sweep["compression"].items())
        for context in (16_000, 32_000):
            rows = sweep["figures"][str(context)]
            freed = _median_freed(rows)
            ratio = _total(rows, "input_side_cost") / _total(base[str(context)],
                                                             "input_side_cost")
            lines.append(f"| {label} | {context // 1000}K | {_total(rows, 'compressions'):,.0f} "
                         f"| {'—' if freed is None else f'{freed:.2f}'} | {ratio:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
