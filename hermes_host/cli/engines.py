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
from hermes_host.llm import effective_provider
from hermes_host.llm.base import SummaryError
from hermes_host.llm.providers import provider_infos
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


def _model_rows(cfg: HermesConfig | None) -> list[dict[str, Any]]:
    """Model providers (metadata only: a listing imports none of them)."""
    chosen = set()
    if cfg is not None:
        chosen = {effective_provider(cfg.summarizer), cfg.model.provider}
    rows = []
    for info in provider_infos():
        uses = []
        if cfg is not None and info.name == effective_provider(cfg.summarizer):
            uses.append("summarizer")
        if cfg is not None and info.name == cfg.model.provider:
            uses.append("chat")
        rows.append({**info.as_dict(), "hooks": None, "status": "not loaded", "error": None,
                     "selected": info.name in chosen, "used_for": uses})
    return rows


def _store_rows(cfg: HermesConfig | None) -> list[dict[str, Any]]:
    """Installed store backends, one per URL scheme (metadata only: nothing is imported)."""
    from hermes_host.store.registry import installed_stores, url_scheme

    chosen = (url_scheme(cfg.store_url()) or "sqlite") if cfg is not None else "sqlite"
    return [
        {"name": backend.scheme, "kind": "store", "distribution": backend.distribution,
         "version": backend.version, "hooks": None, "status": "not loaded", "error": None,
         "selected": backend.scheme == chosen, "target": backend.target,
         "url": f"{backend.scheme}://…"}
        for backend in installed_stores()
    ]


def _print_stores(rows: list[dict[str, Any]]) -> None:
    table = Table("", "store", "distribution", "version", "class")
    for row in rows:
        table.add_row("*" if row["selected"] else "", row["url"],
                      row["distribution"] or "built in", row["version"] or "-", row["target"])
    make_console().print(table)


def _print_models(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    console = make_console()
    table = Table("", "model provider", "distribution", "version", "used for")
    for row in rows:
        table.add_row("*" if row["selected"] else "", row["name"], row["distribution"] or "-",
                      row["version"] or "-", ", ".join(row["used_for"]) or "-")
    console.print(table)


@click.group("engines")
def engines() -> None:
    """Installed context engines, memory providers, model providers and stores."""


@engines.command("list")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Import every plugin to list hooks and import errors."
)
def list_engines(config_path: Path | None, as_json: bool, verbose: bool) -> None:
    """List engines, memory providers, model providers and store backends: name, kind,
    distribution, version, hooks, status (model providers: what the config uses them for;
    stores: the URL scheme each opens)."""
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
    try:
        models = _model_rows(cfg)
    except SummaryError as exc:  # two distributions expose one model provider name
        fail(str(exc))
    stores = _store_rows(cfg)
    if as_json:
        click.echo(json.dumps(rows + models + stores, indent=2))
        return
    _print_table(infos, rows)
    _print_models(models)
    _print_stores(stores)
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
