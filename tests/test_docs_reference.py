"""The generated reference pages never drift from the code (R-0.5): configuration from the
pydantic models, command line from the click tree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hermes_host.config import HermesConfig, HooksSection

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


GEN = _generator()


@pytest.mark.parametrize("page", sorted(GEN.PAGES))
def test_committed_reference_page_is_up_to_date(page: str) -> None:
    committed = (DOCS / page).read_text(encoding="utf-8")
    assert committed == GEN.render_all()[page], (
        f"docs/{page} is out of date: run `python docs/gen_reference.py` and commit it"
    )


def test_config_reference_lists_every_key_with_its_default() -> None:
    text = GEN.config_reference()

    def keys(model: type, prefix: str) -> list[str]:
        found = []
        for name, field in model.model_fields.items():
            sub = field.annotation
            if isinstance(sub, type) and hasattr(sub, "model_fields"):
                found += keys(sub, f"{prefix}{name}.")
            else:
                found.append(f"{prefix}{name}")
        return found

    every = keys(HermesConfig, "")
    assert "hooks.breaker.failures" in every and "compression.mode" in every
    for key in every:
        assert f"| `{key}` |" in text, key
    assert '| `compression.threshold_percent` | float | `0.5` |' in text
    assert "`rotate` \\| `in_place`" in text
    assert "| `compress` | 120 |" in text


def test_config_reference_follows_the_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drift is detected: a changed description changes the page."""
    before = GEN.config_reference()
    field = HooksSection.model_fields["max_leaked_workers"]
    monkeypatch.setattr(field, "description", "A different description.")
    after = GEN.config_reference()
    assert after != before and "A different description." in after


def test_cli_reference_covers_every_command() -> None:
    import click

    from hermes_host.cli import cli

    text = GEN.cli_reference()

    def paths(group: click.Group, prefix: str) -> list[str]:
        out = []
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            out.append(f"{prefix} {name}")
            if isinstance(command, click.Group):
                out += paths(command, f"{prefix} {name}")
        return out

    commands = paths(cli, "hermes-host")
    assert "hermes-host plugin new" in commands and "hermes-host install" in commands
    for path in commands:
        assert f"`{path}`" in text, path
    assert "--hermes" not in text  # the pytest options are not CLI options


def test_check_mode_reports_stale_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GEN, "DOCS", tmp_path)
    assert GEN.main(["--check"]) == 1
    assert GEN.main([]) == 0
    assert GEN.main(["--check"]) == 0
    (tmp_path / "reference" / "cli.md").write_text("stale")
    assert GEN.main(["--check"]) == 1
