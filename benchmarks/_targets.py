"""The targets a benchmark checks, so that a missed one is visible and can fail a run.

Each bench script makes one :class:`Targets`, calls :meth:`Targets.check` for every figure
that has a target (the returned :class:`Check` gives the text for the table: the target and,
when missed, a **MISSED** marker), and ends with ``sys.exit(targets.finish())``:

* ``finish`` prints a closing list of the targets of the section, every missed one marked
  **MISSED** (so ``docs/benchmarks.md`` shows it);
* with ``$HERMES_BENCH_RESULTS`` set, each check is appended to that file as one JSON line
  (``nox -s bench`` collects them);
* with ``--check`` on the command line, the exit status is 1 when a target was missed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["MISSED", "RESULTS_ENV", "Check", "Targets"]

MISSED = "**MISSED**"
RESULTS_ENV = "HERMES_BENCH_RESULTS"
Comparison = Literal[">=", "<="]
_SYMBOL = {">=": "≥", "<=": "≤"}


@dataclass(frozen=True)
class Check:
    """One figure against its target."""

    section: str
    name: str
    value: float
    comparison: Comparison
    target: float
    shown_value: str
    shown_target: str

    @property
    def met(self) -> bool:
        if self.comparison == ">=":
            return self.value >= self.target
        return self.value <= self.target

    @property
    def marker(self) -> str:
        """``""`` when met, else `` **MISSED**`` (to append to a table cell)."""
        return "" if self.met else f" {MISSED}"

    @property
    def spec(self) -> str:
        """The target alone: ``≥ 60%``."""
        return f"{_SYMBOL[self.comparison]} {self.shown_target}"

    @property
    def target_text(self) -> str:
        """The target with the marker when missed: the cell for a "target" column."""
        return self.spec + self.marker

    def line(self) -> str:
        verdict = "met" if self.met else MISSED
        return f"{self.name}: {self.shown_value} (target {self.spec}) — {verdict}"


class Targets:
    """The checks of one benchmark section."""

    def __init__(self, section: str) -> None:
        self.section = section
        self.checks: list[Check] = []

    def check(
        self,
        name: str,
        value: float,
        comparison: Comparison,
        target: float,
        fmt: str = "{:,}",
        target_fmt: str | None = None,
    ) -> Check:
        """Record ``value`` against ``target``; ``fmt`` formats the value for the text, and
        the target too unless ``target_fmt`` is given."""
        if comparison not in _SYMBOL:
            raise ValueError(f"comparison must be '>=' or '<=', not {comparison!r}")
        result = Check(
            self.section, name, float(value), comparison, float(target),
            fmt.format(value), (target_fmt or fmt).format(target),
        )
        self.checks.append(result)
        return result

    @property
    def missed(self) -> list[Check]:
        return [c for c in self.checks if not c.met]

    def summary(self) -> str:
        """The section's closing lines: how many targets were met, each missed one marked."""
        if not self.checks:
            return ""
        missed = self.missed
        if not missed:
            return f"Targets: all {len(self.checks)} met."
        lines = [f"Targets: {len(missed)} of {len(self.checks)} {MISSED}:", ""]
        lines += [f"- {c.line()}" for c in missed]
        return "\n".join(lines)

    def finish(self, argv: Sequence[str] | None = None) -> int:
        """Print the summary, record the checks for ``nox -s bench``, and return the exit
        status: 1 when ``--check`` is among ``argv`` (default ``sys.argv``) and a target was
        missed, else 0."""
        text = self.summary()
        if text:
            print(f"\n{text}")
        results = os.environ.get(RESULTS_ENV)
        if results:
            with open(results, "a", encoding="utf-8") as out:
                for c in self.checks:
                    out.write(json.dumps({**asdict(c), "met": c.met}, ensure_ascii=False) + "\n")
        args = sys.argv[1:] if argv is None else argv
        return 1 if "--check" in args and self.missed else 0
