"""Issue 31 (smaller items): where a user picks the isolation mode — the config key's
description (and so ``config`` reference and ``config validate`` help), the section's
docstring and docs/isolation.md — says that thread mode does not bound a GIL-holding engine,
with the measured figure, and points to process isolation."""

from __future__ import annotations

from pathlib import Path

from hermes_host.config import FenceSection

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_isolation_key_warns_about_the_gil_and_points_to_process() -> None:
    description = FenceSection.model_fields["isolation"].description or ""
    assert "GIL" in description and "28 s past a 0.2 s" in description
    assert "use process" in description
    assert "28 s past a 0.2 s timeout" in (FenceSection.__doc__ or "")
    reference = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    row = next(line for line in reference.splitlines() if line.startswith("| `fence.isolation`"))
    assert "GIL" in row and "use process" in row


def test_isolation_md_says_so_where_the_modes_are_chosen() -> None:
    page = (DOCS / "isolation.md").read_text(encoding="utf-8")
    modes = page[page.index("## The two modes"):page.index("| the engine… |")]
    assert "28 s past a 0.2 s timeout" in modes
    assert "isolation: process" in modes and "GIL" in modes
