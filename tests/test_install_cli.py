"""``hermes-host install`` / ``uninstall`` (R-0.5): pip into the interpreter running
hermes-host, then report what changed among the engines.

The real install → list → uninstall round trip of a local throwaway distribution runs in a
fresh venv in ``tests/test_scaffold_e2e.py`` (one venv for the whole author path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conformance_helpers import run

from hermes_host.cli import cli

CLI = "from hermes_host.cli import cli; cli(prog_name='hermes-host')"


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
