"""What ``hermes-host config validate`` checks beyond the schema, every problem in one pass.

:func:`hermes_host.config.load_config` checks keys and types; :func:`load_plugins` stops at the
first engine it cannot load.  A config can pass both and still not work (issue 12), so
:func:`check_config` also reports:

* every selected engine that is not installed (not only the first);
* an ``engines.<name>`` block naming no installed engine or memory provider — its options
  would be silently ignored — with a did-you-mean;
* options of an installed engine the config does not select, validated by that engine's own
  constructor (its options model), so a block is right before it is switched on;
* a ``compress`` chain in which no engine implements ``compress``: nothing would ever shrink
  the window, which then grows past the model's context length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hermes_host.config import (
    ConfigError,
    HermesConfig,
    find_config_path,
    load_config,
    read_config_data,
)
from hermes_host.config.errors import did_you_mean
from hermes_host.llm.providers import BUILTIN_PROVIDERS, ProviderError, provider_infos
from hermes_host.plugins import (
    LoadedPlugins,
    PluginError,
    PluginInfo,
    discover,
    implemented_hooks,
    load_plugins,
)
from hermes_host.plugins.importing import _import
from hermes_host.plugins.info import _error_text
from hermes_host.plugins.loading import _instantiate, _options_for, _unknown_engine

__all__ = ["ConfigReport", "check_config"]


@dataclass
class ConfigReport:
    """The outcome of :func:`check_config`: no ``errors`` means the host can start."""

    path: Path | None
    config: HermesConfig | None = None
    loaded: LoadedPlugins | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_config(explicit: Path | None = None) -> ConfigReport:
    """Validate the config :func:`find_config_path` finds, collecting every problem."""
    path = find_config_path(explicit)
    report = ConfigReport(path=path)
    source = str(path) if path is not None else "defaults (no config file found)"
    try:
        report.config = load_config(explicit)
    except ConfigError as exc:
        report.errors.append(str(exc))
    cfg = report.config or _selection_only(explicit)
    if cfg is None:
        return report
    try:
        infos = [i for i in discover() if i.status != "disabled"]
    except PluginError as exc:
        report.errors.append(f"{source}: {exc}")
        return report
    problems = _selection_problems(cfg, infos)
    if not problems:
        try:
            report.loaded = load_plugins(cfg)
        except PluginError as exc:
            problems.append(str(exc))
        else:
            report.warnings.extend(f"{source}: {info.error}" for info in report.loaded.failures)
            problems.extend(_compress_problems(cfg, report.loaded, infos))
    problems.extend(_block_problems(cfg, infos))
    if report.config is not None:
        problems.extend(_provider_problems(report.config))
    report.errors.extend(f"{source}: {problem}" for problem in problems)
    if report.config is None:
        report.loaded = None  # a partial config: nothing to show as loaded
    return report


def _provider_problems(cfg: HermesConfig) -> list[str]:
    """``summarizer.provider`` and ``model.provider`` that name no installed model provider
    (issue 17): the host would only fail on the first summary or chat turn."""
    try:
        installed = {info.name for info in provider_infos()} | set(BUILTIN_PROVIDERS)
    except ProviderError as exc:
        return [str(exc)]
    chosen = [
        ("summarizer.provider", cfg.summarizer.provider),
        ("model.provider", cfg.model.provider),
    ]
    return [
        f"{key}: unknown model provider {name!r}"
        + did_you_mean(name, sorted(installed))
        + f"; installed: {', '.join(sorted(installed))}"
        for key, name in chosen
        if name != "auto" and name not in installed
    ]


def _selection_only(explicit: Path | None) -> HermesConfig | None:
    """When the whole file is invalid, its ``context``, ``engines`` and ``memory`` sections
    alone (if they are valid) still get the engine checks: errors come in one pass."""
    try:
        data = read_config_data(explicit)
    except (ConfigError, yaml.YAMLError):
        return None
    if not isinstance(data, dict):
        return None
    part = {key: data[key] for key in ("context", "engines", "memory") if key in data}
    try:
        return HermesConfig.model_validate(part)
    except ValueError:
        return None


def _selection_problems(cfg: HermesConfig, infos: list[PluginInfo]) -> list[str]:
    """Every selected engine that no installed distribution provides."""
    by_key: dict[tuple[str, str], PluginInfo] = {(i.kind, i.name): i for i in infos}
    hidden: dict[tuple[str, str], PluginInfo] = {
        (i.kind, i.name): i for i in discover() if i.status == "disabled"
    }
    return [
        str(_unknown_engine(cfg, name, by_key, hidden, {}))
        for name in cfg.context.engine_names()
        if ("engine", name) not in by_key
    ]


def _block_problems(cfg: HermesConfig, infos: list[PluginInfo]) -> list[str]:
    """``engines.<name>`` blocks that name nothing installed, or that an unselected engine's
    constructor rejects."""
    engines = sorted(i.name for i in infos if i.kind == "engine")
    providers = {i.name for i in infos if i.kind == "memory_provider"}
    hidden = {i.name for i in discover() if i.status == "disabled"}
    selected = set(cfg.context.engine_names()) | set(cfg.memory.providers)
    problems: list[str] = []
    unselected: list[str] = []
    for name in cfg.engines:
        if name in selected:
            continue  # load_plugins built it with these options (or reported why not)
        if name in engines:
            unselected.append(name)
        elif name not in providers and name not in hidden:
            hint = did_you_mean(name, [*engines, *providers])
            problems.append(
                f"engines.{name}: unknown engine {name!r}{hint}; its options would be ignored; "
                f"installed engines: {', '.join(engines) or 'none'}"
            )
    imported, failed = _import("engine", unselected)
    by_name = {i.name: i for i in infos if i.kind == "engine"}
    for name in unselected:
        info = by_name[name]
        if name in failed or name not in imported:
            why = _error_text(failed[name]) if name in failed else "entry point not found"
            problems.append(f"engines.{name} (not selected): engine {info.describe()} does "
                            f"not import, so its options cannot be checked: {why}")
            continue
        try:
            _instantiate(info, imported[name], _options_for(cfg, "engine", name))
        except Exception as exc:  # the engine's own options error
            problems.append(
                f"engines.{name} (not selected): engine {info.describe()} rejects these "
                f"options: {_error_text(exc)}"
            )
    return problems


def _compress_problems(
    cfg: HermesConfig, loaded: LoadedPlugins, infos: list[PluginInfo]
) -> list[str]:
    chain = cfg.context.chain("compress")
    if any("compress" in _hooks(loaded.engines.get(name)) for name in chain):
        return []
    key = "context.hooks.compress" if cfg.context.hooks.get("compress") else "context.engine"
    able = [i.name for i in infos if i.kind == "engine" and i.hooks and "compress" in i.hooks]
    if not able:  # ``discover`` imports nothing: ask the installed engines now
        able = _engines_that_compress(infos)
    return [
        f"{key}: no engine answers compress ({', '.join(chain)} does not implement it), so "
        "the window would grow without bound; select one that does for compress "
        f"(installed: {', '.join(able) or 'none'})"
    ]


def _hooks(engine: Any) -> list[str]:
    return implemented_hooks(engine) if engine is not None else []


def _engines_that_compress(infos: list[PluginInfo]) -> list[str]:
    names = [i.name for i in infos if i.kind == "engine"]
    imported, _failed = _import("engine", names)
    return sorted(name for name, plugin in imported.items() if "compress" in _hooks(plugin))
