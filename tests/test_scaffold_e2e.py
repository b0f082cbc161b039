"""The author's whole path, for real (R-0.5): ``plugin new`` → ``hermes-host install`` into a
fresh venv → ``engines list`` shows it → ``config validate`` accepts a config selecting it →
its own tests, including the conformance kit, pass out of the box → ``hermes-host uninstall``
removes it.  The venv sees the shared environment's packages but installs only into itself, so
this also proves ``install`` uses the interpreter that runs hermes-host."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conformance_helpers import make_overlay_venv, run

pytestmark = pytest.mark.slow

CLI = "from hermes_host.cli import cli; cli(prog_name='hermes-host')"


def test_scaffold_is_green_out_of_the_box(tmp_path: Path) -> None:
    python = str(make_overlay_venv(tmp_path / "venv"))
    hermes = [python, "-c", CLI]

    new = run([*hermes, "plugin", "new", "e2e-probe", "--dir", str(tmp_path)])
    assert new.returncode == 0, new.stderr
    dist = tmp_path / "hermes-e2e-probe"

    install = run([*hermes, "install", "--no-deps", "--no-build-isolation", "-e", str(dist)])
    assert install.returncode == 0, install.stdout + install.stderr
    assert "+ engine 'e2e_probe' (hermes-e2e-probe 0.1.0)" in install.stdout

    listed = run([*hermes, "engines", "list", "--json"])
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["e2e_probe"]["distribution"] == "hermes-e2e-probe"

    config = tmp_path / "config.yaml"
    config.write_text(
        "context:\n  engine: compressor\n  hooks:\n    select_context: [e2e_probe]\n"
        "engines:\n  e2e_probe:\n    keep_last: 4\nmemory:\n  providers: []\n"
    )
    valid = run([*hermes, "config", "validate", "--config", str(config)])
    assert valid.returncode == 0, valid.stdout + valid.stderr

    config.write_text(config.read_text().replace("keep_last: 4", "keep_lats: 4"))
    invalid = run([*hermes, "config", "validate", "--config", str(config)])
    assert invalid.returncode == 2, invalid.stdout + invalid.stderr
    assert "keep_lats" in invalid.stdout + invalid.stderr

    tests = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=dist)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    summary = tests.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 20, summary

    outer = run([sys.executable, "-c", "from importlib.metadata import entry_points as e; "
                 "print([x.name for x in e(group='hermes_host.context_engines')])"])
    assert "e2e_probe" not in outer.stdout, "pip ran in the interpreter running hermes-host"

    gone = run([*hermes, "uninstall", "hermes-e2e-probe"])
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "- engine 'e2e_probe' (hermes-e2e-probe 0.1.0)" in gone.stdout
    listed = run([*hermes, "engines", "list", "--json"])
    assert "e2e_probe" not in {row["name"] for row in json.loads(listed.stdout)}
