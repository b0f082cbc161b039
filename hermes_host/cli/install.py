"""``hermes-host install`` / ``uninstall``: pip into the interpreter that runs hermes-host.

As ``llm install`` does, this runs ``sys.executable -m pip``, so an engine always lands in the
environment where the host will look for it — not in whatever ``pip`` is first on ``PATH``.
Afterwards it shows what changed among the installed engines and memory providers, read by a
fresh interpreter (entry points are scanned once per process, so this process cannot see
them change).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import click

__all__ = ["install", "installed_plugins", "uninstall"]

GROUPS = ("hermes_host.context_engines", "hermes_host.memory_providers")
_PROTECTED = {"hermes-host", "hermes_host"}

_SCAN = """
import json, sys
from importlib.metadata import entry_points
out = {}
for group in sys.argv[1:]:
    for ep in entry_points(group=group):
        dist = ep.dist
        out[group + ":" + ep.name] = {
            "group": group, "name": ep.name, "value": ep.value,
            "distribution": dist.metadata["Name"] if dist else None,
            "version": dist.version if dist else None,
        }
print(json.dumps(out))
"""


def installed_plugins(python: str | None = None) -> dict[str, dict[str, Any]]:
    """Engines and memory providers visible to a fresh ``python`` (default: this one),
    keyed ``"<group>:<name>"``."""
    proc = subprocess.run(
        [python or sys.executable, "-c", _SCAN, *GROUPS],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise click.ClickException(
            "could not list installed engines: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
        )
    data: dict[str, dict[str, Any]] = json.loads(proc.stdout)
    return data


def _describe(entry: dict[str, Any]) -> str:
    kind = "engine" if entry["group"].endswith("context_engines") else "memory provider"
    source = f"{entry['distribution']} {entry['version']}" if entry["distribution"] else "?"
    return f"{kind} {entry['name']!r} ({source})"


def _report_changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> None:
    changes: list[str] = []
    for key in sorted(after.keys() - before.keys()):
        changes.append(f"  + {_describe(after[key])}")
    for key in sorted(before.keys() - after.keys()):
        changes.append(f"  - {_describe(before[key])}")
    for key in sorted(before.keys() & after.keys()):
        if (before[key]["version"], before[key]["value"]) != (
            after[key]["version"],
            after[key]["value"],
        ):
            changes.append(
                f"  ~ {_describe(after[key])} (was {before[key]['version']})"
            )
    if changes:
        click.echo("Changes to installed engines:")
        for line in changes:
            click.echo(line)
    else:
        click.echo("No change to installed engines.")
    click.echo("See them all with: hermes-host engines list")


def _pip(args: list[str]) -> None:
    command = [sys.executable, "-m", "pip", *args]
    click.echo("$ " + " ".join(["python -m pip", *args]), err=True)
    code = subprocess.call(command)
    if code != 0:
        raise click.ClickException(f"pip {args[0]} failed (exit {code}); see its output above")


@click.command()
@click.argument("packages", nargs=-1)
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade packages to the latest version.")
@click.option(
    "-e", "--editable", "editable", multiple=True, help="Install a project in editable mode."
)
@click.option("--no-deps", is_flag=True, help="Do not install dependencies.")
@click.option(
    "--no-build-isolation",
    is_flag=True,
    help="Build with the packages already installed (offline machines).",
)
def install(
    packages: tuple[str, ...],
    upgrade: bool,
    editable: tuple[str, ...],
    no_deps: bool,
    no_build_isolation: bool,
) -> None:
    """Install engine distributions into the environment that runs hermes-host.

    PACKAGES are anything pip accepts: names, paths, wheels, URLs.  Afterwards the engines
    and memory providers that appeared, disappeared or changed version are listed.
    """
    if not packages and not editable:
        raise click.UsageError("name at least one package (or -e PATH)")
    args = ["install"]
    args += ["--upgrade"] if upgrade else []
    args += ["--no-deps"] if no_deps else []
    args += ["--no-build-isolation"] if no_build_isolation else []
    for path in editable:
        args += ["-e", path]
    args += list(packages)
    before = installed_plugins()
    _pip(args)
    _report_changes(before, installed_plugins())


@click.command()
@click.argument("packages", nargs=-1, required=True)
def uninstall(packages: tuple[str, ...]) -> None:
    """Uninstall engine distributions from the environment that runs hermes-host."""
    protected = [p for p in packages if p.lower() in _PROTECTED]
    if protected:
        raise click.ClickException(
            "refusing to uninstall hermes-host itself from inside hermes-host; "
            "use: python -m pip uninstall hermes-host"
        )
    before = installed_plugins()
    _pip(["uninstall", "-y", *packages])
    _report_changes(before, installed_plugins())
