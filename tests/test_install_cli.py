"""``hermes-host install`` / ``uninstall`` (R-0.5): pip into the interpreter running
hermes-host, then report what changed among the engines.  Runs in a throwaway venv so the
shared environment is never modified."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from tests.conformance_helpers import make_overlay_venv, run

CLI = "from hermes_host.cli import cli; cli(prog_name='hermes-host')"

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "hermes-throwaway"
version = "{version}"

[project.entry-points."hermes_host.context_engines"]
throwaway = "throwaway_engine:Throwaway"
"""

_MODULE = """\
from hermes_host import hookimpl


class Throwaway:
    @hookimpl
    def select_context(self, request):
        return None
"""


def _dist(root: Path, version: str) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(_PYPROJECT.format(version=version))
    (root / "throwaway_engine.py").write_text(_MODULE)
    return root


@pytest.mark.slow
def test_install_then_uninstall_a_local_dist(tmp_path: Path) -> None:
    python = str(make_overlay_venv(tmp_path / "venv"))
    hermes = [python, "-c", CLI]
    quiet = ["--no-deps", "--no-build-isolation"]

    first = run([*hermes, "install", *quiet, str(_dist(tmp_path / "v1", "0.1.0"))])
    assert first.returncode == 0, first.stdout + first.stderr
    assert "+ engine 'throwaway' (hermes-throwaway 0.1.0)" in first.stdout
    assert "python -m pip install" in first.stderr, "the pip command is shown"

    listed = json.loads(run([*hermes, "engines", "list", "--json"]).stdout)
    assert "throwaway" in {row["name"] for row in listed}
    outer = run([sys.executable, "-c", "from importlib.metadata import entry_points as e; "
                 "print([x.name for x in e(group='hermes_host.context_engines')])"])
    assert "throwaway" not in outer.stdout, "pip ran in the interpreter running hermes-host"

    gone = run([*hermes, "uninstall", "hermes-throwaway"])
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "- engine 'throwaway' (hermes-throwaway 0.1.0)" in gone.stdout
    listed = json.loads(run([*hermes, "engines", "list", "--json"]).stdout)
    assert "throwaway" not in {row["name"] for row in listed}


def test_install_needs_a_package() -> None:
    result = CliRunner().invoke(cli, ["install"])
    assert result.exit_code == 2 and "name at least one package" in result.output


def test_uninstall_refuses_the_host_itself() -> None:
    result = CliRunner().invoke(cli, ["uninstall", "hermes-host"])
    assert result.exit_code == 1
    assert "refusing to uninstall hermes-host" in result.output


def test_pip_failure_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dist"
    result = run([sys.executable, "-c", CLI, "install", "--no-deps", str(missing)])
    assert result.returncode == 1
    assert "pip install failed" in result.stderr
    assert "Traceback" not in result.stderr


def test_change_report_names_added_removed_and_upgraded(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_host.cli.install import _report_changes

    def entry(name: str, version: str, group: str = "hermes_host.context_engines") -> dict:
        return {"group": group, "name": name, "value": f"{name}:X",
                "distribution": f"hermes-{name}", "version": version}

    before = {"e:kept": entry("kept", "1.0"), "e:old": entry("old", "1.0"),
              "e:up": entry("up", "1.0")}
    after = {"e:kept": entry("kept", "1.0"), "e:up": entry("up", "2.0"),
             "m:notes": entry("notes", "0.1", "hermes_host.memory_providers")}
    _report_changes(before, after)
    out = capsys.readouterr().out
    assert "+ memory provider 'notes' (hermes-notes 0.1)" in out
    assert "- engine 'old' (hermes-old 1.0)" in out
    assert "~ engine 'up' (hermes-up 2.0) (was 1.0)" in out
    assert "kept" not in out
    _report_changes(after, after)
    assert "No change to installed engines." in capsys.readouterr().out
