"""Cold start: the CPU time of ``hermes-host --help`` and ``hermes-host engines list`` against
``llm --help`` (simonw/llm, a click CLI of the same kind), measured in the same run.

Run: ``python benchmarks/bench_startup.py``.  Prints one markdown section.  Each command runs
as a whole process, alternately with the yardstick (A B A B …), and the figure is the median
of the pairwise ratios of user + system CPU time (from ``getrusage(RUSAGE_CHILDREN)``), so a
drift of the shared machine's speed cancels out.  Target (issue 15): ≤ 0.5× for both.

The yardstick is ``$HERMES_BENCH_LLM``, else ``llm`` next to this interpreter or on ``PATH``
(``nox -s bench`` installs it); without it the section says so and checks nothing.  The
package's sources are byte-compiled first, as an installed wheel's are, so that a checkout
run with ``PYTHONDONTWRITEBYTECODE`` does not time the compiler.
"""

from __future__ import annotations

import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from _targets import Targets

import hermes_host

TARGET = 0.5
RUNS = 7
COMMANDS = {"`hermes-host --help`": ["--help"], "`hermes-host engines list`": ["engines", "list"]}


def _yardstick() -> str | None:
    explicit = os.environ.get("HERMES_BENCH_LLM")
    if explicit:
        return explicit
    beside = Path(sys.executable).with_name("llm")
    return str(beside) if beside.exists() else shutil.which("llm")


def _hermes_host() -> list[str]:
    beside = Path(sys.executable).with_name("hermes-host")
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-c", "from hermes_host.cli import cli; cli()"]


def _cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env={**os.environ, "COLUMNS": "100"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _compare(a: list[str], b: list[str]) -> tuple[float, float, float]:
    """(median CPU of a, median CPU of b, median of the pairwise ratios a/b)."""
    _cpu(a), _cpu(b)  # warm the page cache
    cpu_a, cpu_b = [], []
    for _ in range(RUNS):
        cpu_a.append(_cpu(a))
        cpu_b.append(_cpu(b))
    ratios = [x / y for x, y in zip(cpu_a, cpu_b, strict=True) if y > 0]
    return statistics.median(cpu_a), statistics.median(cpu_b), statistics.median(ratios)


def main() -> int:
    targets = Targets("startup")
    print("## startup\n")
    llm = _yardstick()
    if llm is None:
        print("The yardstick `llm` is not installed (`pip install llm`, or set "
              "`$HERMES_BENCH_LLM`); nothing measured.")
        return targets.finish()
    package = Path(hermes_host.__file__).resolve().parent
    compileall.compile_dir(str(package), quiet=1)
    host = _hermes_host()
    print(f"CPU time (user + system) of whole processes, median of {RUNS} alternating pairs "
          "against `llm --help`.\n")
    print("| command | CPU | `llm --help` CPU | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for label, args in COMMANDS.items():
        ours, theirs, ratio = _compare([*host, *args], [llm, "--help"])
        check = targets.check(f"{label} CPU vs `llm --help`", ratio, "<=", TARGET,
                              "{:.2f}×", "{}×")
        print(f"| {label} | {ours * 1000:.0f} ms | {theirs * 1000:.0f} ms | {ratio:.2f}× | "
              f"{check.target_text} |")
    print()
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
