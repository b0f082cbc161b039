"""Size and figures of the reliability suite (issue 13): ``nox -s reliability``.

``HERMES_HOST_RELIABILITY_SIZE`` is ``ci`` (the default: the reduced size ``nox -s tests``
runs) or ``full`` (what ``nox -s reliability`` runs).  A test that measured something calls
:func:`record` after its assertions passed; when ``HERMES_HOST_RELIABILITY_FIGURES`` names a
file, one JSON line per call is appended to it and ``tests/reliability/render_figures.py``
turns the lines into the tables of ``docs/reliability.md``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

SIZE_ENV = "HERMES_HOST_RELIABILITY_SIZE"
FIGURES_ENV = "HERMES_HOST_RELIABILITY_FIGURES"
SIZES = ("ci", "full")


def size() -> str:
    """``ci`` or ``full``; anything else is a clear error, not a silent default."""
    value = os.environ.get(SIZE_ENV, "ci").strip().lower() or "ci"
    if value not in SIZES:
        raise ValueError(f"{SIZE_ENV}={value!r}: expected one of {', '.join(SIZES)}")
    return value


def scaled(ci: int, full: int) -> int:
    """``full`` at the full size, ``ci`` otherwise."""
    return full if size() == "full" else ci


def record(part: str, **figures: Any) -> None:
    """Append one measured row of ``part`` (``sigkill``, ``fuzz``…) to the figures file."""
    target = os.environ.get(FIGURES_ENV)
    if not target:
        return
    row = {"part": part, "size": size(), "at": round(time.time(), 1), **figures}
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(row, sort_keys=True, default=str) + "\n")
