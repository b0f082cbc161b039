"""``hermes-host plugin new NAME``: start a new engine distribution (R-0.5)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hermes_host.scaffold import ScaffoldError, render

__all__ = ["plugin"]


@click.group()
def plugin() -> None:
    """Write your own engine: scaffold a distribution that is green out of the box."""


@plugin.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder in which the distribution folder hermes-NAME is created.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def new(name: str, directory: Path, as_json: bool) -> None:
    """Render a complete engine distribution for engine NAME.

    \b
    It holds pyproject.toml (with the hermes_host.context_engines entry point), a package
    with a documented select_context engine that elides stale tool outputs beyond the
    turn's budget, tests that run the conformance kit, and a README.

    \b
    Next steps:
      hermes-host install -e hermes-NAME     install it where hermes-host runs
      hermes-host engines list               it is listed under its entry-point name
      pytest hermes-NAME                     its tests and the conformance kit pass
    """
    try:
        names, root, written = render(name, directory)
    except ScaffoldError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write the distribution: {exc}") from None
    if as_json:
        click.echo(
            json.dumps(
                {
                    "name": names.name,
                    "distribution": names.dist,
                    "package": names.package,
                    "class": names.class_name,
                    "root": str(root),
                    "files": [str(p.relative_to(root)) for p in written],
                },
                indent=2,
            )
        )
        return
    click.echo(f"Created {names.dist} (engine {names.name!r}) in {root}")
    for path in written:
        click.echo(f"  {path.relative_to(root)}")
    click.echo(
        "\nNext:\n"
        f"  hermes-host install -e {root}\n"
        "  hermes-host engines list\n"
        f"  pytest {root}\n"
        f"Select it in config.yaml:  context: {{hooks: {{select_context: [{names.name}]}}}}"
    )
