"""``hermes-host demo``: a real session, produced by the project itself, that compresses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hermes_host.demo import TOUR, run_demo
from hermes_host.messages import check_invariants, is_summary
from hermes_host.store import open_store


def test_demo_runs_real_tools_and_compresses_at_least_three_times(tmp_path: Path) -> None:
    lines: list[str] = []
    store = tmp_path / "demo.db"
    result = run_demo(store, echo=lines.append)
    assert result.turns == len(TOUR)
    assert result.tool_calls == sum(len(step.calls) for step in TOUR)
    assert len(result.committed) >= 3
    assert len(result.lineage) == len(result.committed) + 1
    assert result.summary and "## Completed Actions" in result.summary
    s = open_store(store)
    try:
        # every tool output is stored once in the lineage (a message the compressions kept
        # moved on to the newer sessions: the root no longer holds a copy of it)
        outputs = [r.message for sid in result.lineage for r in s.all_messages(sid)
                   if r.message["role"] == "tool"]
        # the tool outputs are genuine: the version line comes from the interpreter itself
        version = f"Python {sys.version_info.major}.{sys.version_info.minor}."
        assert any(version in str(m["content"]) for m in outputs)
        assert any("class ContextHost" in str(m["content"]) or "ContextHost" in str(m["content"])
                   for m in outputs)
        final = [r.message for r in s.all_messages(result.session_id) if r.active]
        assert sum(1 for m in final if is_summary(m)) == 1
        assert check_invariants(final) == []
    finally:
        s.close()


def test_demo_command_in_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_HOST_HOME": str(tmp_path / "home")}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "hermes-host"),
            "demo", "--store", str(tmp_path / "d.db"),
        ],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Context compaction complete") >= 3
    assert "lineage: " in done.stdout and "newest summary" in done.stdout
    assert "Traceback" not in done.stderr


def test_every_file_the_tour_reads_or_greps_exists() -> None:
    """README command one: the demo's tool calls really run, so a file it names must exist
    (fence.py became a package and the tour read a missing file without failing)."""
    from hermes_host.demo import PACKAGE_DIR, TOUR

    named = [args["path"] for step in TOUR for tool, args in step.calls
             if tool in ("read_file", "grep") and "path" in args]
    assert named, "the tour names files"
    missing = [p for p in named if not (PACKAGE_DIR / p).exists()]
    assert missing == []
