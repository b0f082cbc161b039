"""``hermes-host eval TRANSCRIPT.jsonl… [--engines A,B+C] [--json]``: compare engine sets.

Every transcript is replayed with every engine set through a real host (a fresh temporary
store each, the real fence, the installed engines), and the command reports per transcript
and overall: model calls, tokens sent per call, auxiliary LLM calls, compressions, invariant
violations, needed-later recall, in-context recall, recall per 1,000 request tokens,
precision and recall after the 1st/5th/10th/25th compression (see ``docs/evaluation.md``),
the recall figures both with "needed later" = any later occurrence and = named again by the
agent (a later assistant message's text or tool-call arguments).

The window: ``--context-length N`` for every run, else ``model.context_length`` when the
config file sets it, else (``auto``) one per transcript, derived from its size
(:func:`hermes_host.evaluation.auto_context_length`) — at the default 200,000-token window
no recorded transcript compresses and every recall cell would be ``—``.  A run with no
compression gets a hint (:func:`hermes_host.evaluation.recall_hints`).
Progress goes to stderr (a bar on a terminal); the table, or with ``--json`` exactly one JSON
object, to stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from hermes_host.config import ConfigError
from hermes_host.evaluation import (
    AFTER_NTH,
    AUTO_RULE,
    EvalRun,
    TranscriptSize,
    auto_context_length,
    check_engine_sets,
    configured_engine_set,
    evaluate,
    parse_engine_sets,
    recall_hints,
    summarise_runs,
    transcript_size,
)
from hermes_host.plugins import PluginError
from hermes_host.store import StoreError
from hermes_host.transcripts import TranscriptError, load_transcript

from .config_cmd import config_option, console, fail, load_config_or_fail
from .output import progress_bar, reading
from .replay import with_context_length

__all__ = ["AGENT_LEGEND", "eval_cmd"]


class ContextLengthType(click.ParamType):  # type: ignore[type-arg]  # generic only in click>=8.4
    """``--context-length``: a number of tokens (at least 256) or ``auto``."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        if str(value).strip().lower() == "auto":
            return "auto"
        try:
            number = value if isinstance(value, int) else int(
                str(value).replace(",", "").replace("_", ""))
        except ValueError:
            self.fail(f"{value!r} is neither a number of tokens nor 'auto'", param, ctx)
        if number < 256:
            self.fail(f"{number} is smaller than 256 tokens (or use 'auto')", param, ctx)
        return number


def _fmt_recall(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


@click.command("eval")
@click.argument(
    "transcripts", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False)
)
@config_option
@click.option(
    "--engines",
    "engine_spec",
    default=None,
    help="Comma-separated engine sets to compare; '+' joins the engines of one set, the first "
    "answering the lifecycle hooks and the rest forming the select_context chain, e.g. "
    "'compressor,compressor+retrieval,compressor+topic_router+retrieval'. "
    "Default: the configured set.",
)
@click.option(
    "--context-length",
    type=ContextLengthType(),
    default=None,
    help="The window (tokens) of every run: the same visible budget. 'auto': per transcript, "
    f"{AUTO_RULE}. Default: model.context_length when the config file sets it, else auto "
    "(the 200,000-token default window holds most recorded sessions whole: nothing would "
    "compress).",
)
@click.option(
    "--summarizer",
    type=click.Choice(["offline", "config"]),
    default="offline",
    show_default=True,
    help="offline: the deterministic offline summariser (reproducible, free); "
    "config: the configured summarizer section.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def eval_cmd(
    transcripts: tuple[Path, ...],
    config_path: Path | None,
    engine_spec: str | None,
    context_length: int | str | None,
    summarizer: str,
    as_json: bool,
) -> None:
    """Replay transcripts with each engine set and compare tokens, calls and recall.

    Needed-later recall: of the artifacts (file paths, snake_case/CamelCase identifiers,
    error class names, URLs, hex ids) that appeared before a compression and are used again
    after it, the share visible in the request right after the compression.  Beside it:
    in-context recall (only occurrences outside a bare list of names count), recall per
    1,000 request tokens, precision (share of the history artifacts in the request that are
    needed later) and recall after the 1st/5th/10th/25th compression; see docs/evaluation.md.
    """
    config, _ = load_config_or_fail(config_path)
    if context_length is None:
        # a window the config file states is the user's; the 200,000 default is nobody's
        explicit = "context_length" in config.model.model_fields_set
        source = "config" if explicit else "auto"
    else:
        source = "auto" if context_length == "auto" else "option"
    if source == "option":
        assert isinstance(context_length, int)
        config = with_context_length(config, context_length)
    if summarizer == "offline":
        settings = config.summarizer.model_copy(update={"provider": "offline"})
        config = config.model_copy(update={"summarizer": settings})
    try:
        sets = parse_engine_sets(engine_spec) if engine_spec else [configured_engine_set(config)]
    except ValueError as exc:
        fail(f"error: --engines: {exc}")
    sizes: list[TranscriptSize] = []
    for path in transcripts:
        # Every file is read and validated before any replay starts: a typo in the fifth
        # file must not cost the first four replays.
        try:
            with reading(path, as_json=as_json):
                sizes.append(transcript_size(load_transcript(path)))
        except TranscriptError as exc:
            fail(f"error: {exc}")
    windows = [
        auto_context_length(size, config.model.max_output_tokens) if source == "auto"
        else config.model.context_length
        for size in sizes
    ]
    try:
        check_engine_sets(config, sets)
    except PluginError as exc:
        fail(f"error: {exc}")

    runs: list[EvalRun] = []
    run_windows: list[tuple[int, int]] = []  # (window, transcript tokens) of each run
    with progress_bar("eval", as_json=as_json) as bar:
        # one step per message replayed, over every (transcript, engine set) run
        task = bar.add_task(f"{len(transcripts)} transcript(s) × {len(sets)} engine set(s)",
                            total=sum(size.messages for size in sizes) * len(sets))
        finished = 0  # messages of the runs already done

        def on_step(done: int, total: int) -> None:
            bar.update(task, completed=finished + done)

        def on_run(run: EvalRun) -> None:
            nonlocal finished
            bar.console.print(
                f"eval {run.transcript} [{run.engines}]: {run.model_calls} calls, "
                f"{run.compressions} compressions, recall {_fmt_recall(run.recall)} "
                f"({run.seconds:.1f}s)",
                markup=False, highlight=False, soft_wrap=True,
            )
            finished += current
            bar.update(task, completed=finished)

        for path, size, window in zip(transcripts, sizes, windows, strict=True):
            current = size.messages
            run_config = with_context_length(config, window)
            try:
                done = evaluate(run_config, [path], sets, on_run=on_run, on_step=on_step)
            except (TranscriptError, ConfigError, PluginError, StoreError) as exc:
                fail(f"error: {exc}")
            runs += done
            run_windows += [(window, size.tokens)] * len(done)
    overall = summarise_runs(runs)
    hints = recall_hints(runs, run_windows, {
        path.name: auto_context_length(size, config.model.max_output_tokens)
        for path, size in zip(transcripts, sizes, strict=True)})
    rows = []
    for run, (window, tokens) in zip(runs, run_windows, strict=True):
        rows.append({**run.as_dict(), "context_length": window, "transcript_tokens": tokens})
    uniform = len(set(windows)) == 1
    report: dict[str, Any] = {
        # one window for every run, else null (each run names its own)
        "context_length": windows[0] if uniform else None,
        "context_length_source": source,
        "context_length_rule": AUTO_RULE if source == "auto" else None,
        "summarizer": config.summarizer.provider,
        "engine_sets": [s.label for s in sets],
        "runs": rows,
        "overall": overall,
        "hints": hints,
    }
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
        return
    _print(runs, overall, report)


def _fmt_per_1k(value: float | None) -> str:
    # rounded to 4 places first, as in the JSON, so the table and the overall row agree
    return "—" if value is None else f"{round(value, 4):.3f}"


def _after(values: dict[str, float | None]) -> list[str]:
    return [_fmt_recall(values[str(n)]) for n in AFTER_NTH]


_AFTER_COLUMNS = tuple(f"after {n}." for n in AFTER_NTH)
AGENT_LEGEND = (
    "agent rule: an artifact counts as needed later only when a later assistant message names "
    "it (its text or tool-call arguments), not when it merely recurs in a tool output or user "
    "message; the other figures count any later occurrence."
)


def _fmt_decay(decay: dict[str, float | None]) -> str:
    """``all / same``: the 10th ÷ 1st ratio over all transcripts / over those reaching the 10th."""
    return f"{_fmt_recall(decay['all_transcripts'])} / {_fmt_recall(decay['same_transcripts'])}"


def _table(title: str, columns: tuple[str, ...], names: int) -> Table:
    """A table whose first ``names`` columns are names (left-aligned); on a narrow terminal
    every cell and heading wraps instead of being cut short with an ellipsis."""
    table = Table(title=title)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < names else "right", overflow="fold")
    return table


def _print(runs: list[EvalRun], overall: dict[str, dict[str, Any]], report: dict[str, Any]) -> None:
    out = console()
    source = report["context_length_source"]
    if source == "auto":
        window = f"context length per transcript ({report['context_length_rule']})"
    else:
        via = "--context-length" if source == "option" else "model.context_length"
        window = f"context length {report['context_length']:,}, {via}"
    table = _table(
        f"hermes-host eval ({window})",
        ("transcript", "engines", "window", "calls", "tokens/call", "compressions", "aux LLM",
         "recall", "needed", "violations"),
        2,
    )
    for run, row in zip(runs, report["runs"], strict=True):
        table.add_row(
            run.transcript,
            run.engines,
            f"{row['context_length']:,} of {row['transcript_tokens']:,}",
            str(run.model_calls),
            f"{run.mean_tokens:,.0f}",
            str(run.compressions),
            str(run.aux_llm_calls),
            _fmt_recall(run.recall),
            str(sum(p.needed for p in run.points)),
            str(run.invariant_violations),
        )
    out.print(table)
    measures = _table(
        "recall measures per transcript",
        ("transcript", "engines", "recall", "in context", "per 1K tok", "precision",
         *_AFTER_COLUMNS, "recall (agent rule)"),
        2,
    )
    for run in runs:
        measures.add_row(
            run.transcript,
            run.engines,
            _fmt_recall(run.recall),
            _fmt_recall(run.in_context_recall),
            _fmt_per_1k(run.recall_per_1k_tokens),
            _fmt_recall(run.precision),
            *_after({str(n): run.recall_after(n) for n in AFTER_NTH}),
            _fmt_recall(run.recall_agent),
        )
    out.print(measures)
    summary = _table(
        "overall",
        ("engines", "transcripts with recall", "median recall", "mean recall", "tokens/call",
         "calls", "compressions", "aux LLM", "violations"),
        1,
    )
    for label, row in overall.items():
        summary.add_row(
            label,
            f"{row['transcripts_with_recall']}/{row['transcripts']}",
            _fmt_recall(row["median_needed_later_recall"]),
            _fmt_recall(row["mean_needed_later_recall"]),
            f"{row['mean_tokens_per_call']:,.0f}",
            str(row["model_calls"]),
            str(row["compressions"]),
            str(row["aux_llm_calls"]),
            str(row["invariant_violations"]),
        )
    out.print(summary)
    pooled = _table(
        "overall recall measures: median over transcripts / pooled (all needed artifacts "
        "together); after the n-th compression: pooled over the n transcripts reaching it",
        ("engines", "recall", "in context", "per 1K tok", "precision", *_AFTER_COLUMNS,
         "10th ÷ 1st (all / same)"),
        1,
    )
    for label, row in overall.items():
        after = row["recall_after_compression"]
        pooled.add_row(
            label,
            f"{_fmt_recall(row['median_needed_later_recall'])} / "
            f"{_fmt_recall(row['pooled_needed_later_recall'])}",
            f"{_fmt_recall(row['median_in_context_recall'])} / "
            f"{_fmt_recall(row['pooled_in_context_recall'])}",
            f"{_fmt_per_1k(row['median_recall_per_1k_tokens'])} / "
            f"{_fmt_per_1k(row['pooled_recall_per_1k_tokens'])}",
            f"{_fmt_recall(row['median_precision'])} / {_fmt_recall(row['pooled_precision'])}",
            *(f"{_fmt_recall(a['pooled_recall'])} (n={a['transcripts']})"
              for a in after.values()),
            _fmt_decay(row["recall_10th_over_1st"]),
        )
    out.print(pooled)
    agent = _table(
        "overall recall measures, agent rule: median over transcripts / pooled; after the "
        "n-th compression: pooled over the n transcripts reaching it; 10th ÷ 1st over all "
        "transcripts / over those reaching the 10th",
        ("engines", "recall", "in context", *_AFTER_COLUMNS, "10th ÷ 1st (all / same)"),
        1,
    )
    for label, row in overall.items():
        agent.add_row(
            label,
            f"{_fmt_recall(row['median_needed_later_recall_agent'])} / "
            f"{_fmt_recall(row['pooled_needed_later_recall_agent'])}",
            f"{_fmt_recall(row['median_in_context_recall_agent'])} / "
            f"{_fmt_recall(row['pooled_in_context_recall_agent'])}",
            *(f"{_fmt_recall(a['pooled_recall'])} (n={a['transcripts']})"
              for a in row["recall_after_compression_agent"].values()),
            _fmt_decay(row["recall_10th_over_1st_agent"]),
        )
    out.print(agent)
    out.print(AGENT_LEGEND)
    cost = _table(
        "cost under a prompt-caching price model, in input-token equivalents (cache read "
        "0.1, write 1.25, uncached input 1.0, output 5.0; the agent's own output left out)",
        ("engines", "summary requests (in / out tokens)", "cache hit rate", "calls",
         "summaries", "input-side cost", "median share freed", "over budget",
         "fitting sessions: compressed / not"),
        1,
    )
    for label, row in overall.items():
        c = row["cost"]
        cost.add_row(
            label,
            f"{c['summary_requests']:,.0f} ({c['summary_input_tokens']:,.0f} / "
            f"{c['summary_output_tokens']:,.0f})",
            _fmt_recall(c["cache_hit_rate"]),
            f"{c['calls_cost']:,.0f}",
            f"{c['summary_cost']:,.0f}",
            f"{c['input_side_cost']:,.0f}",
            _fmt_recall(row["median_share_freed"]),
            str(row["requests_over_budget"]),
            (f"{c['fitting_input_side_cost']:,.0f} / {c['fitting_uncompressed_cost']:,.0f} "
             f"(n={c['sessions_that_fit']})") if c["sessions_that_fit"] else "—",
        )
    out.print(cost)
    for hint in report["hints"]:
        out.print(f"hint: {hint}", markup=False, highlight=False)
