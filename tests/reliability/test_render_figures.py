"""``render_figures.py`` (issue 31): the concurrency section per store × workers × mode with
its totals, and ``--section`` replacing that section alone."""

from __future__ import annotations

import json
from pathlib import Path

import render_figures

DOC = """# Page

<!-- figures:start -->
Measured in one run.

### SIGKILL trials

| a |
|---|
| 1 |

### Processes sharing sessions

| old |
|---|
| 9 |

### Fuzzing

| f |
|---|
| 2 |
<!-- figures:end -->

After.
"""


def _row(store: str, processes: int, mode: str, messages: int, **anomalies: int) -> dict:
    base = dict(part="concurrency", size="full", at=1796515200.0, store=store, mode=mode,
                processes=processes, sessions=1, seconds=240.0, turns=messages // 4,
                messages=messages, committed=10, deferred=3, errors=0, refused=0, lost=0,
                duplicated=0, split=0, doubled=0, followed=7, followed_rotation=2,
                stale_appends=1)
    return {**base, **anomalies}


def test_section_replaces_the_concurrency_table_only(tmp_path: Path) -> None:
    doc, figures = tmp_path / "reliability.md", tmp_path / "figures.jsonl"
    doc.write_text(DOC)
    rows = [_row("sqlite", 2, "rotate", 400), _row("postgresql", 8, "in_place", 100, split=1)]
    figures.write_text("".join(json.dumps(r) + "\n" for r in rows))
    render_figures.main(["--section", "concurrency", str(figures), str(doc)])
    text = doc.read_text()
    assert "| old |" not in text
    for kept in ("### SIGKILL trials", "| 1 |", "### Fuzzing", "| 2 |", "After.",
                 "Measured in one run."):
        assert kept in text
    assert text.index("### SIGKILL") < text.index("### Processes") < text.index("### Fuzz")
    lines = text.splitlines()
    assert ("| sqlite | rotate | 2 × 1 × 240 | 100 | 400 | 10 | 3 | 7 / 2 / 1 "
            "| 0 | 0 | 0 | 0 | 0 | 0 |") in lines
    assert ("| postgresql | in_place | 8 × 1 × 240 | 25 | 100 | 10 | 3 | 7 / 2 / 1 "
            "| 0 | 0 | 1 | 0 | 0 | 0 |") in lines
    assert "| **total** |  |  | 125 | **500** | 20 | 6 |  | 0 | 0 | 1 | 0 | 0 | 0 |" in lines
    assert "| **postgresql total** |  |  | 25 | **100** | 20 | 6 |  | 0 | 0 | 1 | 0 | 0 | 0 |" \
        not in lines  # its own totals only
    assert "| **postgresql total** |  |  | 25 | **100** | 10 | 3 |  | 0 | 0 | 1 | 0 | 0 | 0 |" \
        in lines
    # rendering again from the same figures changes nothing
    render_figures.main(["--section", "concurrency", str(figures), str(doc)])
    assert doc.read_text() == text


def test_full_render_shows_rows_of_an_older_run_without_the_new_counts() -> None:
    old = _row("sqlite", 8, "rotate", 4000)
    for key in ("store", "refused", "split", "duplicated", "followed", "followed_rotation",
                "stale_appends"):
        del old[key]
    text = render_figures.render([old])
    assert "| sqlite | rotate | 8 × 1 × 240 | 1000 | 4000 | 10 | 3 | – | 0 | – | – | – | 0 | 0 |" \
        in text.splitlines()


def test_section_fuzz_replaces_the_fuzzing_table_only(tmp_path: Path) -> None:
    doc, figures = tmp_path / "reliability.md", tmp_path / "figures.jsonl"
    doc.write_text(DOC)
    rows = [dict(part="fuzz", size="full", at=1796515200.0, target="validate_messages",
                 examples=10000, crashes=0, outcomes={"rejected": 6, "accepted": 4}),
            _row("sqlite", 2, "rotate", 400)]  # another part's row: not rendered here
    figures.write_text("".join(json.dumps(r) + "\n" for r in rows))
    render_figures.main(["--section", "fuzz", str(figures), str(doc)])
    text = doc.read_text()
    assert "| 2 |" not in text and "| old |" in text and "| 1 |" in text
    assert "| validate_messages | 10000 | 0 | accepted 4, rejected 6 |" in text.splitlines()
    assert text.index("### Processes") < text.index("### Fuzzing") < text.index("After.")


def test_section_sigkill_replaces_the_sigkill_table_only(tmp_path: Path) -> None:
    doc, figures = tmp_path / "reliability.md", tmp_path / "figures.jsonl"
    doc.write_text(DOC)
    kill = dict(part="sigkill", size="full", at=1796515200.0, lost=0, duplicated=0)
    rows = [{**kill, "workload": "turns, rotate publish", "trials": 400, "acked": 31822,
             "compressions": 2584, "killed_mid_compaction": 347},
            {**kill, "workload": "publish loop (store level), rotate", "trials": 100,
             "acked": None, "compressions": 370, "killed_mid_compaction": None},
            _row("sqlite", 2, "rotate", 400)]  # another part's row: not rendered here
    figures.write_text("".join(json.dumps(r) + "\n" for r in rows))
    render_figures.main(["--section", "sigkill", str(figures), str(doc)])
    text = doc.read_text()
    assert "| 1 |" not in text and "| old |" in text and "| 2 |" in text
    lines = text.splitlines()
    assert "| turns, rotate publish | 400 | 31822 | 0 | 0 | 2584 | 347 |" in lines
    assert "| publish loop (store level), rotate | 100 | – | 0 | 0 | 370 | – |" in lines
    assert "| **total** | 500 | 31822 | 0 | 0 |  |  |" in lines
    assert text.index("### SIGKILL") < text.index("### Processes") < text.index("After.")
