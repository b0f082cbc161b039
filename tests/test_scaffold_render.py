"""``hermes-host plugin new`` renders a complete engine distribution (R-0.5)."""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.scaffold import TEMPLATE_DIR, EngineNames, ScaffoldError, render


@pytest.mark.parametrize(
    ("raw", "name", "dist", "package", "cls"),
    [
        ("drop-stale", "drop_stale", "hermes-drop-stale", "hermes_drop_stale", "DropStaleEngine"),
        ("hermes-counter", "counter", "hermes-counter", "hermes_counter", "CounterEngine"),
        ("my_engine2", "my_engine2", "hermes-my-engine2", "hermes_my_engine2", "MyEngine2Engine"),
    ],
)
def test_names_are_derived_consistently(
    raw: str, name: str, dist: str, package: str, cls: str
) -> None:
    names = EngineNames.from_name(raw)
    assert (names.name, names.dist, names.package, names.class_name) == (name, dist, package, cls)


@pytest.mark.parametrize("raw", ["", "Drop", "9lives", "a--b", "drop stale", "x/y", "hermes-"])
def test_bad_names_are_refused_with_the_rule(raw: str) -> None:
    with pytest.raises(ScaffoldError, match="lower-case letters"):
        EngineNames.from_name(raw)


def test_render_writes_a_complete_distribution(tmp_path: Path) -> None:
    _, root, written = render("drop-stale", tmp_path)
    assert root == tmp_path / "hermes-drop-stale"
    rel = sorted(p.relative_to(root).as_posix() for p in written)
    assert rel == [
        "README.md",
        "hermes_drop_stale/__init__.py",
        "hermes_drop_stale/engine.py",
        "pyproject.toml",
        "tests/test_conformance.py",
        "tests/test_engine.py",
    ]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "hermes-drop-stale"
    assert meta["project"]["entry-points"]["hermes_host.context_engines"] == {
        "drop_stale": "hermes_drop_stale.engine:DropStaleEngine"
    }
    for path in written:
        text = path.read_text()
        assert "{{" not in text, f"unfilled token in {path}"
        if path.suffix == ".py":
            ast.parse(text, filename=str(path))
    engine = (root / "hermes_drop_stale" / "engine.py").read_text()
    assert "@hookimpl" in engine and "def select_context" in engine
    assert "deterministic = True" in engine
    assert "EngineConformance" in (root / "tests" / "test_conformance.py").read_text()
    readme = (root / "README.md").read_text()
    assert "select_context: [drop_stale]" in readme and "pytest" in readme


def test_every_template_is_rendered(tmp_path: Path) -> None:
    _, _, written = render("probe", tmp_path)
    assert len(written) == len(list(TEMPLATE_DIR.rglob("*.tmpl")))


def test_render_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "hermes-busy").mkdir()
    (tmp_path / "hermes-busy" / "keep.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="already exists and is not empty"):
        render("busy", tmp_path)
    assert (tmp_path / "hermes-busy" / "keep.txt").read_text() == "mine"


def test_cli_plugin_new(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["plugin", "new", "drop-stale", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Created hermes-drop-stale (engine 'drop_stale')" in result.output
    assert "hermes-host install -e" in result.output
    assert (tmp_path / "hermes-drop-stale" / "pyproject.toml").is_file()

    again = runner.invoke(cli, ["plugin", "new", "drop-stale", "--dir", str(tmp_path)])
    assert again.exit_code == 1
    assert "already exists" in again.output and "Traceback" not in again.output

    bad = runner.invoke(cli, ["plugin", "new", "Bad Name", "--dir", str(tmp_path)])
    assert bad.exit_code == 1 and "invalid engine name 'Bad Name'" in bad.output


def test_cli_plugin_new_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plugin", "new", "counter", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["name"] == "counter" and data["distribution"] == "hermes-counter"
    assert data["class"] == "CounterEngine"
    assert sorted(data["files"])[0] == "README.md" and "pyproject.toml" in data["files"]
    assert Path(data["root"]) == tmp_path / "hermes-counter"


@pytest.mark.parametrize(
    ("raw", "dist"),
    [
        ("compressor", "hermes-compressor"),
        ("hermes-compressor", "hermes-compressor"),
        ("retrieval", "hermes-retrieval"),
        ("topic-router", "hermes-topic-router"),
        ("topic_router", "hermes-topic-router"),
        ("host", "hermes-host"),
    ],
)
def test_a_scaffold_named_like_a_real_distribution_is_refused_issue_12(
    tmp_path: Path, raw: str, dist: str
) -> None:
    """issue 12: ``plugin new compressor`` scaffolded ``hermes-compressor``, which replaced
    the real default engine on install."""
    with pytest.raises(ScaffoldError, match=f"{dist} is already a distribution") as info:
        render(raw, tmp_path)
    assert "choose another name" in str(info.value)
    assert not any(tmp_path.iterdir())  # nothing written
    result = CliRunner().invoke(cli, ["plugin", "new", raw, "--dir", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{dist} is already a distribution" in result.output
    assert not any(tmp_path.iterdir())


def test_a_scaffold_colliding_with_any_installed_distribution_or_engine_is_refused_issue_12(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    info = site / "hermes_acme_probe-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-acme-probe\n"
                                   "Version: 1.2.3\n", encoding="utf-8")
    other = site / "acme_tools-0.1.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tools\nVersion: 0.1\n",
                                    encoding="utf-8")
    (other / "entry_points.txt").write_text(
        "[hermes_host.context_engines]\nsquash = acme_tools:Squash\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ScaffoldError, match=r"hermes-acme-probe is already a distribution "
                                            r"\(installed: hermes-acme-probe 1\.2\.3\)"):
        render("acme-probe", out)
    with pytest.raises(ScaffoldError, match=r"an installed engine is already called 'squash' "
                                            r"\(acme-tools 0\.1\)"):
        render("squash", out)
    assert not any(out.iterdir())
    assert render("acme-probe-2", out)[1].is_dir()  # a free name still works
