"""How the CLI's rich output is shaped: one console helper for every table and line on stdout
(or stderr), one progress helper for every bar (issue 30, deliverable 5).

* On a terminal a console has the terminal's width, and every table it prints keeps its
  whole-token columns whole (:func:`keep_tokens_whole`: a column whose cells are ids,
  names or numbers is ``no_wrap``), so the columns of prose wrap first.
* Piped or redirected (``| tail``, ``> file``, a test's capture) a console has no width
  limit: a table is as wide as its content and a line is never wrapped, so every id, name
  and heading reaches the pipe whole — rich's default of 80 columns cut a table's headings
  to ``brea`` and wrapped ids mid-token.
* A progress bar (with an ETA) goes to stderr, only when stderr is a terminal and the
  command was not asked for ``--json``; the lines printed through it still go to stderr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from rich.text import Text

__all__ = ["PIPED_WIDTH", "TableConsole", "console", "keep_tokens_whole", "progress_bar",
           "reading"]

PIPED_WIDTH = 1_000_000
"""A console's width when its stream is not a terminal: in effect, no limit."""


_TOKEN_MAX = 80
"""A cell longer than this is prose, even without a space."""


def _is_token(text: str) -> bool:
    return len(text) <= _TOKEN_MAX and not any(c.isspace() for c in text)


def _plain(cell: object) -> str | None:
    return cell.plain if isinstance(cell, Text) else cell if isinstance(cell, str) else None


def keep_tokens_whole(table: Table) -> Table:
    """Make every column of ids or names ``no_wrap`` — all its cells single tokens, the
    longest at least as wide as the heading — so that on a narrow terminal rich narrows the
    other columns instead of folding an id mid-token; those fold instead of ending in ``…``
    (nothing is cut off)."""
    for column in table.columns:
        cells = [_plain(cell) for cell in column.cells]
        header = _plain(column.header) or ""
        if cells and all(text is not None and _is_token(text) for text in cells) and (
                max(len(text or "") for text in cells) >= len(header)):
            column.no_wrap = True
        elif column.overflow == "ellipsis":
            column.overflow = "fold"
    return table


class TableConsole(Console):
    """A console that applies :func:`keep_tokens_whole` to every table it prints."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        for obj in objects:
            if isinstance(obj, Table):
                keep_tokens_whole(obj)
        super().print(*objects, **kwargs)


def console(*, stderr: bool = False, highlight: bool = True) -> Console:
    """The rich console for stdout (or stderr) of every command: the terminal's width on a
    terminal (tables keep ids whole), no width limit otherwise — ``COLUMNS`` is ignored
    then: a pipe has no columns."""
    out = TableConsole(stderr=stderr, highlight=highlight)
    if out.is_terminal:
        return out
    return TableConsole(stderr=stderr, highlight=highlight, width=PIPED_WIDTH)


def progress_bar(label: str, *, as_json: bool = False) -> Progress:
    """A transient bar on stderr — ``label``, the item's description, the bar, done/total,
    elapsed and ``ETA`` — disabled with ``--json`` and when stderr is not a terminal
    (its ``console`` still prints lines to stderr)."""
    err = console(stderr=True, highlight=False)
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


@contextlib.contextmanager
def reading(path: Path, *, as_json: bool = False) -> Iterator[None]:
    """A spinner on stderr — ``reading NAME (size)…`` — while one file is read and checked
    before a bar can be drawn (a 1,000,000-line transcript takes seconds to read); only on a
    terminal and never with ``--json``, like :func:`progress_bar`; gone when it is read."""
    err = console(stderr=True, highlight=False)
    if as_json or not err.is_terminal:
        yield
        return
    try:
        size = f" ({path.stat().st_size / 1e6:,.1f} MB)"
    except OSError:
        size = ""
    with err.status(Text(f"reading {path.name}{size}…"), spinner="dots"):
        yield
