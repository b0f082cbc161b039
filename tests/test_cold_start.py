"""Cold start (issue 15): nothing heavy is imported until a command needs it.

Each check runs a fresh interpreter (a subprocess) and reads its ``sys.modules`` at the end,
so what an earlier test imported cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import click
import pytest

import hermes_host
from hermes_host.cli import _COMMANDS, cli

HEAVY = ("anthropic", "openai", "tiktoken", "tiktoken_ext", "PIL")
"""The provider SDKs, tiktoken and its encodings, and Pillow."""


def _modules_after(code: str) -> set[str]:
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json as _json, sys as _sys
        _sys.stdout.write("\\n@@MODULES@@" + _json.dumps(sorted(_sys.modules)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return set(json.loads(out.rsplit("@@MODULES@@", 1)[1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_hermes_host_imports_nothing_heavy() -> None:
    """Issue 15: `import hermes_host` imports no SDK, tokenizer or imaging library — and not
    even pydantic: the public names are imported on first use."""
    modules = _modules_after("import hermes_host")
    assert _heavy(modules) == []
    assert "pydantic" not in modules
    assert "hermes_host.models" not in modules


def _cli_run(*argv: str) -> str:
    return f"""
        import sys
        sys.argv = ["hermes-host", *{list(argv)!r}]
        from hermes_host.cli import cli
        try:
            cli()
        except SystemExit:
            pass
    """


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("engines", "--help")])
def test_the_help_path_imports_nothing_heavy(argv: tuple[str, ...]) -> None:
    """Issue 15: printing help imports no SDK, tokenizer or imaging library, and no other
    command's module (each noun module is imported when its command runs)."""
    modules = _modules_after(_cli_run(*argv))
    assert _heavy(modules) == []
    loaded = {m.rsplit(".", 1)[1] for m in modules if m.startswith("hermes_host.cli.")}
    expected = {"engines", "config_cmd"} if argv[0] == "engines" else set()
    assert loaded == expected
    if argv == ("--help",):
        assert not {"pydantic", "rich", "hermes_host.host", "hermes_host.store"} & modules


def test_engines_list_imports_no_sdk() -> None:
    """Issue 15: `engines list` lists model providers from metadata, without their SDKs."""
    modules = _modules_after(_cli_run("engines", "list"))
    assert not {"anthropic", "openai", "PIL"} & {m.split(".")[0] for m in modules}


def test_every_command_is_listed_with_its_own_short_help() -> None:
    """The top-level help lists the commands without importing them, from the table in
    hermes_host.cli; this keeps that table equal to each command's own help."""
    ctx = click.Context(cli)
    assert sorted(_COMMANDS) == cli.list_commands(ctx)
    for name, (_module, _attr, short_help) in _COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.get_short_help_str(limit=10**6) == short_help, name


def test_public_names_resolve_lazily() -> None:
    """R-14.3: every name of `hermes_host.__all__` is importable, and an unknown one is an
    AttributeError (not a silent None)."""
    for name in hermes_host.__all__:
        assert getattr(hermes_host, name) is not None, name
    assert set(hermes_host.__all__) <= set(dir(hermes_host))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = hermes_host.no_such_name  # type: ignore[attr-defined]
