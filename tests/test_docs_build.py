"""The documentation builds with warnings as errors, and every command it shows exists."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path

import click
import pytest
from conformance_helpers import REPO, run

from hermes_host.cli import cli

DOCS = REPO / "docs"
OPTIONAL_PAGES = {"embedding.md", "evaluation.md", "benchmarks.md"}


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("material", reason="mkdocs-material not installed (pip install .[docs])")
    proc = run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tutorial = (tmp_path / "site" / "tutorial" / "index.html").read_text()
    assert "CountTrigger" in tutorial and "should_compress" in tutorial
    assert "--8&lt;--" not in tutorial, "snippets were included"
    assert 'class="mermaid"' in (tmp_path / "site" / "lifecycle" / "index.html").read_text()
    for page in OPTIONAL_PAGES:
        built = tmp_path / "site" / page.removesuffix(".md") / "index.html"
        assert built.exists() == (DOCS / page).exists(), page


def _nav_hook():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", DOCS / "mkdocs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_nav_hook_drops_only_missing_pages(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# a")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# b")
    nav = [
        {"A": "a.md"},
        {"Group": [{"B": "sub/b.md"}, {"Gone": "sub/gone.md"}]},
        {"Empty": [{"Gone": "gone.md"}]},
        {"Site": "https://example.org/"},
        "a.md",
    ]
    kept = _nav_hook()._prune(nav, tmp_path)
    assert kept == [
        {"A": "a.md"},
        {"Group": [{"B": "sub/b.md"}]},
        {"Site": "https://example.org/"},
        "a.md",
    ]


def test_every_required_nav_page_exists() -> None:
    text = (REPO / "mkdocs.yml").read_text()
    pages = re.findall(r":\s+([\w/.-]+\.md)\s*$", text, flags=re.M)
    assert "hooks.md" in pages and "reference/cli.md" in pages
    for page in pages:
        assert (DOCS / page).is_file() or page in OPTIONAL_PAGES, page


_COMMAND = re.compile(r"^\s*(hermes-host [^\n#]*)", re.M)
_MY_PAGES = ["index.md", "quickstart.md", "lifecycle.md", "testing.md", "tutorial/index.md"]


def _shown_commands() -> list[tuple[str, str]]:
    found = []
    for page in _MY_PAGES:
        text = (DOCS / page).read_text()
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, flags=re.S):
            found += [(page, m.strip()) for m in _COMMAND.findall(block)]
    return found


def test_docs_show_commands() -> None:
    assert len(_shown_commands()) >= 8


@pytest.mark.parametrize(("page", "line"), _shown_commands())
def test_every_documented_command_and_option_exists(page: str, line: str) -> None:
    words = shlex.split(line.split("&&")[0])[1:]
    command: click.Command = cli
    ctx = click.Context(cli)
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        sub = command.get_command(ctx, words[0])
        assert sub is not None, f"{page}: `{line}`: no command {words[0]!r}"
        command, words = sub, words[1:]
        ctx = click.Context(command, parent=ctx)
    declared = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    declared |= {"-h", "--help"}
    for word in words:
        if word.startswith("-"):
            assert word.split("=")[0] in declared, f"{page}: `{line}`: unknown option {word}"
