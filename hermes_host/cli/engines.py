"""``hermes-host engines list``: what is installed, what config selects, and whether it loads.

Only the plugins the config selects are imported (their hooks and load status are shown);
the others are listed from entry-point metadata alone, unless ``--verbose`` asks to import
every plugin to list its hooks and show its import error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from hermes_host.config import ConfigError, HermesConfig, find_config_path, load_config
from hermes_host.plugins import LOAD_PLUGINS_ENV, PluginError, PluginInfo, inspect_plugins

from .config_cmd import config_option, fail, source_label, warn
from .config_cmd import console as make_console

__all__ = ["engines"]

_STATUS_STYLE = {"loaded": "green", "failed": "red", "disabled": "dim", "not loaded": ""}


def _selected(cfg: HermesConfig | None, info: PluginInfo) -> bool:
    if cfg is None:
        return False
    if info.kind == "engine":
        return info.name in cfg.context.engine_names()
    return info.name in cfg.memory.providers


@click.group("engines")
def engines() -> None:
    """Installed context engines and memory providers."""


@engines.command("list")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Import every plugin to list hooks and import errors."
)
def list_engines(config_path: Path | None, as_json: bool, verbose: bool) -> None:
    """List engines and memory providers: name, kind, distribution, version, hooks, status."""
    cfg: HermesConfig | None
    try:
        cfg = load_config(config_path)
    except ConfigError as exc:
        warn(f"{exc}\n(listing without a configuration: nothing is imported)")
        cfg = None
    try:
        infos = inspect_plugins(cfg, import_all=verbose)
    except PluginError as exc:
        fail(str(exc))
    rows: list[dict[str, Any]] = [
        {**info.as_dict(), "selected": _selected(cfg, info)} for info in infos
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _print_table(infos, rows)
    if cfg is not None:
        _warn_missing(cfg, infos, find_config_path(config_path))


def _print_table(infos: list[PluginInfo], rows: list[dict[str, Any]]) -> None:
    console = make_console()
    if not infos:
        console.print("No engines or memory providers are installed.")
        return
    table = Table("", "name", "kind", "distribution", "version", "hooks", "status")
    for column in table.columns:
        # A listing shows whole names, never "hermes-retri…": short cells never wrap, long
        # ones fold.
        column.no_wrap = column.header in ("", "name", "version", "status")
        column.overflow = "fold"
    for info, row in zip(infos, rows, strict=True):
        hooks = "(not imported)" if info.hooks is None else "\n".join(info.hooks) or "none"
        style = _STATUS_STYLE.get(info.status, "")
        table.add_row(
            "*" if row["selected"] else "",
            info.name,
            "engine" if info.kind == "engine" else "memory",
            info.distribution or "-",
            info.version or "-",
            hooks,
            Text(info.status, style=style),
        )
    console.print(table)
    console.print("* selected by the configuration")
    for info in infos:
        if info.error:
            console.print(Text(f"{info.name}: {info.error}", style="red"))


def _warn_missing(cfg: HermesConfig, infos: list[PluginInfo], path: Path | None) -> None:
    status: dict[tuple[str, str], str] = {(i.kind, i.name): i.status for i in infos}
    wanted = [("engine", n) for n in cfg.context.engine_names()]
    wanted += [("memory_provider", n) for n in cfg.memory.providers]
    for kind, name in wanted:
        word = "engine" if kind == "engine" else "memory provider"
        if (kind, name) not in status:
            warn(f"{source_label(path)}: {word} {name!r} is selected but not installed")
        elif status[(kind, name)] == "disabled":
            warn(f"{source_label(path)}: {word} {name!r} is selected but hidden by "
                 f"{LOAD_PLUGINS_ENV}")
