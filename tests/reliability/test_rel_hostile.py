"""Hostile engines × isolation modes (issue 13, R-0.4, R-10.2).

Every cell runs ``hostile_worker.py`` in a real subprocess: a few turns against an engine
whose ``select_context`` and ``compress`` misbehave (see ``rel_hostile_engines.py``), each hook
with a 0.5 s timeout.  Every cell must keep the original window (the request is the
session's own window, the store holds exactly what was written), leave a provenance record
for every call, and never delay a step by more than ``SLACK`` past its timeout (issue 13
asks timeout + 100 ms of process mode; the assertion allows for a loaded 2-core CI machine,
the measured figure goes to docs/reliability.md).

Process mode (``engines.<name>.fence.isolation: process``) is skipped with the reason while
the config key is not accepted or not honoured.  Cells known to fail in thread mode are
``xfail(strict=True)`` with the reason, so a fix shows up as an XPASS to un-mark (but for
``threads``, whose delay depends on the OS scheduler: it may pass on a run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rel_hostile_engines import CASES
from reliability_figures import record, size

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SLACK = 0.5
ISOLATIONS = ("thread", "process")

KNOWN_THREAD_FAILURES = {
    "gil": "issue 13: a thread cannot stop an engine that holds the GIL (regex in C code); "
           "only process isolation can",
    "os_exit": "issue 13: os._exit in a thread ends the host process; only process isolation "
               "can survive it",
    "threads": "issue 13: busy threads an engine leaves behind share the GIL with the host "
               "and delay its turns by seconds; thread isolation cannot stop them",
}
SCHEDULING_DEPENDENT = {"threads"}
KNOWN_FAILURES = {
    "huge": "issue 13 (deliverable 2): results have no size cap yet; a 64 MB message "
            "returned by select_context is adopted into the request",
}

pytestmark = pytest.mark.slow


def _cells() -> list[object]:
    cells: list[object] = []
    for isolation in ISOLATIONS:
        for case in CASES:
            marks = []
            if isolation == "thread" and case in KNOWN_THREAD_FAILURES:
                # how long the busy threads delay a turn depends on how the OS schedules
                # them: on some runs they stay under SLACK, so that cell may pass
                marks.append(pytest.mark.xfail(strict=case not in SCHEDULING_DEPENDENT,
                                               reason=KNOWN_THREAD_FAILURES[case]))
            elif case in KNOWN_FAILURES:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[case]))
            if case in FULL_ONLY and size() != "full":
                marks.append(pytest.mark.skip(reason=FULL_ONLY[case]))
            cells.append(pytest.param(case, isolation, marks=marks, id=f"{isolation}-{case}"))
    return cells


def run_cells(cases: list[str], isolation: str, directory: Path) -> dict[str, dict[str, Any]]:
    """Run ``cases`` one after the other in one worker process; per case its result, or
    ``{"died": exit status}`` for the case the process died in (and the ones after it)."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(HERE)])}
    done = subprocess.run(
        [sys.executable, str(HERE / "hostile_worker.py"), ",".join(cases), isolation,
         str(directory)],
        capture_output=True, text=True, timeout=600, env=env, cwd=directory,
    )
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            results[row["case"]] = row
    for case in cases:
        results.setdefault(case, {"case": case, "died": done.returncode,
                                  "stderr": done.stderr[-2000:]})
    return results


ALONE = ("os_exit", "threads")
FULL_ONLY = {
    "huge": "full size only (HERMES_HOST_RELIABILITY_SIZE=full): the host's own work on a "
            "64 MB result costs minutes of CPU until results are size-capped",
}
_BATCHES: dict[str, dict[str, dict[str, Any]]] = {}


@pytest.fixture
def cell(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The result of one cell.  The cases that leave nothing behind share one worker process
    per isolation mode (imports cost seconds on CI); ``threads`` (its busy threads would
    slow the cells after it) and ``os_exit`` (it ends its process) run alone."""

    def get(case: str, isolation: str) -> dict[str, Any]:
        if case in ALONE:
            where = tmp_path_factory.mktemp(f"{isolation}-{case}")
            return run_cells([case], isolation, where)[case]
        if isolation not in _BATCHES:
            shared = [c for c in CASES if c not in ALONE
                      and (c not in FULL_ONLY or size() == "full")]
            _BATCHES[isolation] = run_cells(shared, isolation,
                                            tmp_path_factory.mktemp(f"{isolation}-batch"))
        return _BATCHES[isolation][case]

    return get


@pytest.mark.parametrize(("case", "isolation"), _cells())
def test_hostile_engine_keeps_the_window_and_the_deadline(
    cell: Any, case: str, isolation: str
) -> None:
    result = cell(case, isolation)
    if "skip" in result:
        pytest.skip(str(result["skip"]))
    failed = list(result.get("failed", []))  # type: ignore[call-overload]
    known = (KNOWN_THREAD_FAILURES.get(case) if isolation == "thread" else None) or \
        KNOWN_FAILURES.get(case)
    record("hostile", case=case, isolation=isolation, died=result.get("died"), known=known,
           worst_over_timeout=result.get("worst_over_timeout"), failed=len(failed),
           provenance=sorted(set(result.get("provenance", []))))  # type: ignore[call-overload]
    assert "died" not in result, f"the host process died: {result}"
    assert failed == [], result
    assert float(result["worst_over_timeout"]) <= SLACK, result  # type: ignore[arg-type]
