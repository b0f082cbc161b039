"""``hermes-host replay TRANSCRIPT.jsonl``: feed a recorded transcript through the host.

Progress and one live line per compression go to stderr; the final table (or, with
``--json``, exactly one JSON object) goes to stdout, followed by an "engine problems" table
when an engine raised, timed out, answered something invalid or was skipped by its circuit
breaker.  A transcript that cannot be replayed, a bad config, a missing engine or an unusable
store is an error message and exit code 2; with ``--strict`` an engine problem is exit code 1.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from hermes_host.config import HermesConfig
from hermes_host.fence import HookHealth
from hermes_host.host import ContextHost
from hermes_host.messages import MessageError
from hermes_host.plugins import PluginError
from hermes_host.redact import redact_output
from hermes_host.replay import CompressionRecord, ReplayResult, replay_transcript, sparkline
from hermes_host.store import StoreError
from hermes_host.transcripts import TranscriptError, load_transcript

from .config_cmd import config_option, fail, load_config_or_fail
from .output import console, progress_bar, reading

__all__ = ["replay", "with_context_length"]

STATUS_MEANINGS: dict[str, str] = {
    "committed": "published: the compressed window replaced the old one (a rotation gives the "
    "session a new id; the store keeps every original message)",
    "not_committed": "the attempt left the window as it was: nothing worth compressing, the "
    "engine declined or failed, or its proposal would not have shrunk the window (the "
    "guards count it, so the next attempts wait)",
    "deferred": "another process held this session's compression lease, so this one did "
    "nothing and left it to them",
    "rejected": "the fence or the host refused the engine's proposal (it raised, timed out, "
    "broke an invariant, or the store refused the publish): the session is unchanged",
    "preview": "computed and shown, not published (compress with preview)",
}
"""What each compression status means, in plain words (the legend under the table)."""

OUTCOME_MEANINGS: dict[str, str] = {
    "summarised": "the summariser wrote a summary of the middle of the window (an LLM call, "
    "or none with the offline summariser: see LLM calls)",
    "fallback": "the summariser failed, so a deterministic offline summary was used instead "
    "(the cooldown keeps it from being asked again at once)",
    "dropped": "feasibility skip: after an ineffective attempt, the middle was too small to "
    "be worth an LLM call, so it was summarised offline (no LLM call)",
    "noop": "nothing worth compressing: too few messages outside the protected head and "
    "tail, or the proposal would free too little of the window "
    "(compression.min_saving_percent)",
    "failed_transient": "the summariser failed for now (rate limit, 5xx, timeout, network): "
    "the window is unchanged and a cooldown starts",
    "failed_permanent": "the summariser failed for good (401/402/403, quota): the window is "
    "unchanged, with no retry",
    "aborted": "the summary failed and compression.abort_on_summary_failure kept the "
    "original window",
    "declined": "no engine proposed a compressed window",
    "compression_deferred": "another process held the compression lease",
    "timeout": "the compression pass ran past its time limit; its result was discarded",
    "error": "the compress engine raised; the host kept the window",
    "invalid": "the engine's proposal broke a window invariant; the fence refused it",
    "no_engine": "no compress engine is selected (context.engine)",
    "lease_lost": "another process took the compression lease before the publish",
    "store_refused": "the store refused to publish the compressed window",
    "window_changed": "another process changed the window while it was being compressed; "
    "nothing was published",
    "breaker_open": "the engine's circuit breaker is open after repeated failures, so it was "
    "not asked",
}
"""What each compression outcome means, in plain words (the legend under the table)."""


def with_context_length(config: HermesConfig, context_length: int | None) -> HermesConfig:
    """``config`` with ``model.context_length`` replaced (``--context-length``)."""
    if context_length is None:
        return config
    model = config.model.model_copy(update={"context_length": context_length})
    return config.model_copy(update={"model": model})


def _live_line(record: CompressionRecord) -> str:
    saved = record.tokens_before - record.tokens_after
    pct = f"{saved / record.tokens_before:.0%}" if record.tokens_before else "0%"
    if record.status == "committed":
        return (
            f"🗜️  turn {record.turn} step {record.step}: {record.tokens_before:,} → "
            f"{record.tokens_after:,} tokens (-{pct}, {record.outcome}, "
            f"{record.llm_calls} LLM call(s)) → session {record.session_id}"
        )
    return f"·  turn {record.turn} step {record.step}: {record.status} ({record.outcome})" + (
        f": {record.message}" if record.message else ""
    )


@click.command("replay")
@click.argument("transcript", type=click.Path(path_type=Path, dir_okay=False))
@config_option
@click.option(
    "--store",
    "store_path",
    metavar="PATH|URL",
    default=None,
    help="Store to write: a state.db path or a store URL such as postgresql://… (default: "
    "the configured store, $HERMES_HOST_HOME/state.db).",
)
@click.option(
    "--context-length",
    type=click.IntRange(min=256),
    default=None,
    help="Override model.context_length (tokens), e.g. a small window to force compressions.",
)
@click.option("--title", default=None, help="Title of the replayed session.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit with code 1 when any engine hook raised, timed out, returned an invalid "
    "result or was skipped by its circuit breaker (the output is the same).",
)
def replay(
    transcript: Path,
    config_path: Path | None,
    store_path: str | None,
    context_length: int | None,
    title: str | None,
    as_json: bool,
    strict: bool,
) -> None:
    """Replay a recorded OpenAI-format JSONL transcript through the host, as if live.

    Each user message starts a turn; assistant and tool messages follow; a leading system
    message becomes the session's system prompt.  Everything is persisted; the configured
    engines compress when they decide to.  Token counts are counted by the host.

    Engine failures never stop a replay (the host falls back, as it would live), but they
    are reported: an "engine problems" table per engine and hook, with the last error.

    \b
    Exit codes: 0 done; 1 done, but --strict and an engine hook failed;
    2 bad transcript, config, engine or store.
    """
    try:
        with reading(transcript, as_json=as_json):
            parsed = load_transcript(transcript)
    except TranscriptError as exc:
        fail(f"error: {exc}")
    config, _ = load_config_or_fail(config_path)
    config = with_context_length(config, context_length)
    try:
        host = ContextHost.from_config(config, store=store_path)
    except (PluginError, StoreError) as exc:
        fail(f"error: {exc}")

    err = console(stderr=True, highlight=False)
    try:
        with progress_bar("replay", as_json=as_json) as progress:
            task = progress.add_task(transcript.name, total=len(parsed.messages))

            def on_step(done: int, total: int) -> None:
                progress.update(task, completed=done)

            def on_compression(record: CompressionRecord) -> None:
                progress.console.print(_live_line(record), markup=False, highlight=False)

            result = replay_transcript(
                host, parsed, title=title, on_step=on_step, on_compression=on_compression
            )
    except (StoreError, MessageError) as exc:  # MessageError: e.g. a --title with no UTF-8 form
        fail(f"error: {exc}")
    finally:
        host.close()

    if as_json:
        # final_request holds the session's own messages: secrets out of stdout (issue 31)
        shown = redact_output(result.as_dict())
        line = json.dumps(shown, ensure_ascii=False)
        if not line.isascii():
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (a file name not in UTF-8): escape
                line = json.dumps(shown, ensure_ascii=True)
        sys.stdout.write(line + "\n")
        if result.engine_problems:
            count = sum(row.problems for row in result.engine_problems)
            err.print(f"replay: {count} engine problem(s); see engine_problems in the JSON",
                      markup=False, highlight=False)
    else:
        _print_summary(result)
        _print_problems(result.engine_problems)
    if strict and result.engine_problems:
        sys.exit(1)


def _print_summary(result: ReplayResult) -> None:
    out = console()
    table = Table(title=f"replay of {Path(result.transcript).name}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row(
        "turns / steps / messages", f"{result.turns} / {result.steps} / {result.messages}"
    )
    table.add_row("context length", f"{result.context_length:,} tokens")
    threshold = result.threshold_tokens
    table.add_row(
        "threshold",
        f"{threshold:,} tokens: a window over it starts a compression attempt at the end of "
        "a step"
        if threshold is not None else "none stated (the engines decided without one)",
    )
    table.add_row("compressions", _compressions_line(result))
    table.add_row("LLM calls", str(result.llm_calls))
    cost = result.cost
    if cost:
        table.add_row(
            "summary requests",
            f"{cost['summary_requests']} an LLM summariser would make "
            f"({cost['summary_input_tokens']:,} tokens in, {cost['summary_output_tokens']:,} "
            "out)",
        )
    series = result.request_series
    over = result.requests_over_budget
    table.add_row(
        "requests",
        f"{len(series)} model calls, max {max(series, default=0):,} tokens; budget "
        f"{result.request_budget:,} (context less max_output_tokens): "
        + ("none over it" if not over else f"{over} OVER IT"),
    )
    if cost:
        fits = cost["uncompressed"]
        table.add_row(
            "cost",
            f"{cost['input_side_cost']:,.0f} input-token equivalents (calls "
            f"{cost['calls_cost']:,.0f} + summaries {cost['summary_cost']:,.0f}); cache hit "
            f"rate {cost['cache_hit_rate'] or 0:.0%}"
            + (f"; with no compression {fits['calls_cost']:,.0f}" if fits["fits"] else ""),
        )
    table.add_row("final window", f"{result.final_window_tokens:,} tokens")
    table.add_row(
        "window tokens over time",
        f"{sparkline(result.window_series)}  (max {max(result.window_series, default=0):,})",
    )
    status = "ok" if result.invariant_violations == 0 else "VIOLATED"
    table.add_row(
        "invariants",
        f"{status}: {result.window_violations} window, {result.cache_violations} prompt-cache, "
        f"{result.requests_over_budget} over budget",
    )
    table.add_row(
        "normalised",
        ", ".join(f"{k} {v}" for k, v in result.normalised.items()),
    )
    table.add_row("session", f"{result.session_id} (lineage of {len(result.lineage)})")
    table.add_row("store", result.store)
    out.print(table)
    if result.compressions:
        detail = Table("turn", "step", "before", "after", "outcome", "status", "LLM calls")
        for c in result.compressions:
            detail.add_row(
                str(c.turn),
                str(c.step),
                f"{c.tokens_before:,}",
                f"{c.tokens_after:,}",
                c.outcome,
                c.status,
                str(c.llm_calls),
            )
        out.print(detail)
    _print_legend(out, result.compressions)
    for example in result.violation_examples:
        out.print(f"[red]violation[/] {example}")


def _compressions_line(result: ReplayResult) -> str:
    """``3 committed (2 summarised, 1 dropped), 6 not committed (6 noop)``."""
    if not result.compressions:
        return "none (the window never went over the threshold)"
    by_status: dict[str, Counter[str]] = {}
    for c in result.compressions:
        by_status.setdefault(c.status, Counter())[c.outcome] += 1
    order = [*STATUS_MEANINGS, *sorted(set(by_status) - set(STATUS_MEANINGS))]
    parts = []
    for status in order:
        outcomes = by_status.get(status)
        if outcomes:
            detail = ", ".join(f"{n} {outcome}" for outcome, n in outcomes.most_common())
            parts.append(f"{sum(outcomes.values())} {status.replace('_', ' ')} ({detail})")
    return ", ".join(parts)


_MAX_REASONS = 20


def _print_legend(out: Console, compressions: list[CompressionRecord]) -> None:
    """A line per status and outcome that occurred, in plain words; then why each attempt
    that did not commit did not (whole lines, never wrapped)."""
    if not compressions:
        return
    statuses = {c.status for c in compressions}
    outcomes = {c.outcome for c in compressions}
    words = [(s, STATUS_MEANINGS.get(s, "")) for s in STATUS_MEANINGS if s in statuses]
    words += [(s, "") for s in sorted(statuses - set(STATUS_MEANINGS))]
    words += [(o, OUTCOME_MEANINGS.get(o, "")) for o in OUTCOME_MEANINGS if o in outcomes]
    words += [(o, "") for o in sorted(outcomes - set(OUTCOME_MEANINGS))]
    width = max(len(name) for name, _ in words)
    out.print("what the statuses and outcomes mean:", markup=False, highlight=False)
    for name, meaning in words:
        out.print(f"  {name:<{width}}  {meaning or 'reported by the engine; see its docs'}",
                  markup=False, highlight=False, soft_wrap=True)
    others = [c for c in compressions if c.status != "committed"]
    for c in others[:_MAX_REASONS]:
        # the status and outcome are on the line already: keep the message past its head
        reason = (c.message or "no reason given").split(": ", 1)[-1]
        out.print(f"turn {c.turn} step {c.step}: {c.status} ({c.outcome}): {reason}",
                  markup=False, highlight=False, soft_wrap=True)
    if len(others) > _MAX_REASONS:
        out.print(f"… and {len(others) - _MAX_REASONS} more not committed (each with its "
                  "reason in --json)", markup=False, highlight=False, soft_wrap=True)


def _print_problems(rows: list[HookHealth]) -> None:
    """The "engine problems" table: per engine and hook that went wrong, its counts, breaker
    and last error message (redacted and bounded by the fence)."""
    if not rows:
        return
    out = console()
    table = Table(title="engine problems", title_style="bold red", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    width = max(len(f"{r.plugin}.{r.hook}") for r in rows)
    table.add_column("engine.hook", min_width=width, overflow="fold")  # never cut a name
    for name in ("calls", "errors", "timeouts", "invalid", "skipped", "breaker"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(
            f"{row.plugin}.{row.hook}", str(row.calls), str(row.errors), str(row.timeouts),
            str(row.invalid), str(row.skipped), row.breaker or "-",
        )
    out.print(table)
    for row in rows:  # whole lines, never wrapped: they are copied into bug reports
        out.print(f"{row.plugin}.{row.hook} last error: {row.last_error}",
                  markup=False, highlight=False, soft_wrap=True)
    count = sum(row.problems for row in rows)
    out.print(
        f"{count} engine problem(s): the host fell back where an engine failed, so these "
        "results are not what the engines would give (--strict exits 1)",
        markup=False, highlight=False, soft_wrap=True,
    )
