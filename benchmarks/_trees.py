"""The source tree of an older commit, for benchmarks that measure this tree against it in
the same run (child processes import one ``hermes_host`` or the other via ``PYTHONPATH``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["base_tree"]


def base_tree(tmp: Path, argv: list[str], commit: str) -> tuple[Path | None, str]:
    """``commit``'s ``hermes_host``: the directory ``--base DIR`` names, else ``git archive``
    of ``commit`` unpacked into ``tmp``; ``(None, why)`` when neither is available."""
    if "--base" in argv:
        return Path(argv[argv.index("--base") + 1]), "given with --base"
    repo = Path(__file__).resolve().parents[1]
    try:
        archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "hermes_host"],
                                 capture_output=True, check=True, timeout=120).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the base commit is not available here ({type(exc).__name__})"
    return tmp, f"`git archive {commit}`"
