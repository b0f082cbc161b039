"""How the CLI's rich output is shaped: one console helper for every table and line on stdout
(or stderr), one progress helper for every bar (issue 30, deliverable 5).

* On a terminal a console has the terminal's width; columns that hold ids are made
  ``no_wrap`` by the tables themselves (:func:`id_column`), so other columns give way first.
* Piped or redirected (``| tail``, ``> file``, a test's capture) a console has no width
  limit: a table is as wide as its content and a line is never wrapped, so every id, name
  and heading reaches the pipe whole — rich's default of 80 columns cut a table's headings
  to ``brea`` and wrapped ids mid-token.
* A progress bar (with an ETA) goes to stderr, only when stderr is a terminal and the
  command was not asked for ``--json``; the lines printed through it still go to stderr.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

__all__ = ["PIPED_WIDTH", "console", "id_column", "progress_bar"]

PIPED_WIDTH = 1_000_000
"""A console's width when its stream is not a terminal: in effect, no limit."""


def console(*, stderr: bool = False, highlight: bool = True) -> Console:
    """A rich console for stdout (or stderr): the terminal's width on a terminal, no width
    limit otherwise (``COLUMNS`` is ignored then: a pipe has no columns)."""
    out = Console(stderr=stderr, highlight=highlight)
    if out.is_terminal:
        return out
    return Console(stderr=stderr, highlight=highlight, width=PIPED_WIDTH)


def id_column(table: Table, header: str, **kwargs: object) -> None:
    """Add a column that holds ids or names: never wrapped, so on a narrow terminal the
    other columns wrap first."""
    table.add_column(header, no_wrap=True, **kwargs)  # type: ignore[arg-type]


def progress_bar(label: str, *, as_json: bool = False) -> Progress:
    """A transient bar on stderr — ``label``, the item's description, the bar, done/total,
    elapsed and ``ETA`` — disabled with ``--json`` and when stderr is not a terminal
    (its ``console`` still prints lines to stderr)."""
    err = Console(stderr=True, highlight=False)
    return Progress(
        TextColumn(f"{label} {{task.description}}", markup=False),  # a file name is no markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=as_json or not err.is_terminal,
    )
