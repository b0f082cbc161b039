"""``hermes-host demo``: one command, no API key — a real session that compresses several times.

See :mod:`hermes_host.demo` for what the tour does.  It writes to a fresh temporary store
unless ``--store`` is given, then shows the lineage and the newest summary.
"""

from __future__ import annotations

import click
from rich.panel import Panel
from rich.table import Table

from hermes_host.demo import DEMO_CONTEXT_LENGTH, run_demo
from hermes_host.plugins import PluginError
from hermes_host.store import StoreError

from .config_cmd import fail
from .output import console

__all__ = ["demo"]

_SUMMARY_LINES = 30


@click.command("demo")
@click.option(
    "--store",
    "store_path",
    metavar="PATH|URL",
    default=None,
    help="Store to write: a state.db path or a store URL such as postgresql://… "
    "(default: a fresh temporary store).",
)
@click.option(
    "--context-length",
    type=click.IntRange(min=2000),
    default=DEMO_CONTEXT_LENGTH,
    show_default=True,
    help="The demo model's window in tokens (small, so it compresses).",
)
def demo(store_path: str | None, context_length: int) -> None:
    """Run a scripted tour of hermes-host's own source whose tool calls really run, with the
    offline summariser and a small window; then show the lineage and one summary."""
    out = console(highlight=False)
    try:
        result = run_demo(
            store_path,
            context_length=context_length,
            echo=lambda line: out.print(line, markup=False),
        )
    except PluginError as exc:
        fail(f"error: {exc}\n(the demo needs the default engine: pip install hermes-compressor)")
    except StoreError as exc:
        fail(f"error: {exc}")

    committed = result.committed
    table = Table("#", "tokens before", "tokens after", "outcome", "session")
    for i, report in enumerate(committed, 1):
        table.add_row(
            str(i),
            f"{report.tokens_before:,}",
            f"{report.tokens_after:,}",
            report.outcome,
            report.session_id,
        )
    out.print()
    out.print(
        f"{result.turns} turns, {result.tool_calls} real tool calls, "
        f"{len(committed)} compressions; window now {result.window_tokens:,} of "
        f"{context_length:,} tokens"
    )
    out.print(table)
    out.print("lineage: " + " → ".join(result.lineage))
    if result.summary:
        lines = result.summary.splitlines()
        shown = "\n".join(lines[:_SUMMARY_LINES])
        if len(lines) > _SUMMARY_LINES:
            shown += f"\n… ({len(lines) - _SUMMARY_LINES} more lines)"
        out.print(Panel(shown, title="newest summary", expand=False), markup=False)
    out.print(f"store: {result.store}")
