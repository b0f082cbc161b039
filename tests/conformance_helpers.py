"""Shared helpers of the conformance-kit, scaffold, install and docs tests."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def broken_engine_module() -> ModuleType:
    """``tests/fixtures/broken_engine/broken_engine.py``, imported once."""
    folder = str(FIXTURES / "broken_engine")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module("broken_engine")


def broken_engine(mode: str) -> Any:
    return broken_engine_module().BrokenEngine(options={"mode": mode})


def transcripts_dir() -> Path:
    return Path(
        os.environ.get("HERMES_HOST_TRANSCRIPTS") or REPO.parent / "shared" / "data" / "transcripts"
    )


def run(cmd: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; the caller asserts on returncode and output."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )


def make_overlay_venv(path: Path) -> Path:
    """A fresh venv that also sees this interpreter's packages (hermes-host and its
    dependencies) *behind* its own, so installs go into the new venv only and the shared
    environment is never touched.  Returns the new venv's python.

    ``--system-site-packages`` alone is not enough when the tests themselves run in a venv
    (the "system" would be the base interpreter), hence the ``.pth`` that adds this
    interpreter's site-packages — with its ``.pth`` files, so editable installs resolve.
    """
    # No pip of its own: this interpreter's pip (found through the .pth below) installs into
    # whichever interpreter runs it, and skipping ensurepip saves seconds per venv.
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(path)
    python = path / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    target = Path(purelib.stdout.strip())
    outer = sysconfig.get_paths()["purelib"]
    (target / "_hermes_outer_site.pth").write_text(
        f"import site; site.addsitedir({outer!r})\n", encoding="utf-8"
    )
    return python
