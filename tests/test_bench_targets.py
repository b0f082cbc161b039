"""benchmarks/_targets.py: a missed benchmark target is marked MISSED in the output and, with
``--check``, fails the script (issue 12: benchmarks that can fail).  Exercised through a tiny
bench script run as a real subprocess, the way ``nox -s bench`` runs the real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"

TINY = f"""
import sys
sys.path.insert(0, {str(BENCH_DIR)!r})
from _targets import Targets

targets = Targets("tiny")
share = targets.check("prune share", float(sys.argv[1]), ">=", 0.60, "{{:.0%}}")
latency = targets.check("added latency", float(sys.argv[2]), "<=", 60, "{{:.1f}} µs",
                        "{{:.0f}} µs")
print("## tiny")
print(f"| prune share | {{share.shown_value}}{{share.marker}} |")
print(f"| added | {{latency.shown_value}} | {{latency.target_text}} |")
sys.exit(targets.finish())
"""


def run_tiny(tmp_path: Path, *args: str, results: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "bench_tiny.py"
    script.write_text(TINY, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "HERMES_BENCH_RESULTS"}
    if results is not None:
        env["HERMES_BENCH_RESULTS"] = str(results)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, env=env, timeout=60, check=False)


def test_a_missed_target_is_marked_and_fails_with_check(tmp_path: Path) -> None:
    done = run_tiny(tmp_path, "0.44", "12.5", "--check")
    assert done.returncode == 1, done.stderr
    assert "| prune share | 44% **MISSED** |" in done.stdout
    assert "| added | 12.5 µs | ≤ 60 µs |" in done.stdout  # met: no marker
    assert "Targets: 1 of 2 **MISSED**:" in done.stdout
    assert "- prune share: 44% (target ≥ 60%) — **MISSED**" in done.stdout


def test_without_check_a_miss_is_shown_but_does_not_fail(tmp_path: Path) -> None:
    done = run_tiny(tmp_path, "0.44", "141.3")
    assert done.returncode == 0, done.stderr
    assert "| added | 141.3 µs | ≤ 60 µs **MISSED** |" in done.stdout
    assert "Targets: 2 of 2 **MISSED**:" in done.stdout


def test_all_met_passes_the_check(tmp_path: Path) -> None:
    done = run_tiny(tmp_path, "0.60", "60", "--check")  # the bounds themselves are met
    assert done.returncode == 0, done.stderr
    assert "MISSED" not in done.stdout
    assert done.stdout.rstrip().endswith("Targets: all 2 met.")


def test_checks_are_recorded_for_nox(tmp_path: Path) -> None:
    results = tmp_path / "targets.jsonl"
    run_tiny(tmp_path, "0.93", "80", results=results)
    run_tiny(tmp_path, "0.44", "10", results=results)  # a second script appends
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [(r["section"], r["name"], r["met"]) for r in rows] == [
        ("tiny", "prune share", True), ("tiny", "added latency", False),
        ("tiny", "prune share", False), ("tiny", "added latency", True),
    ]
    assert rows[1]["shown_value"] == "80.0 µs" and rows[1]["shown_target"] == "60 µs"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH_DIR.glob("bench_*.py")))
def test_every_bench_with_a_target_checks_it(script: str) -> None:
    """A bench that states a target records it through the helper and exits with its
    status, so nothing states a target that --check does not enforce."""
    text = (BENCH_DIR / script).read_text(encoding="utf-8")
    if "target" not in text.lower():
        pytest.skip(f"{script} states no target")
    assert "from _targets import" in text and "targets.check(" in text
    assert "targets.finish(" in text and "sys.exit(main())" in text
    assert "NOT met" not in text  # the old unmarked verdict
