"""``load_plugins``: import, build and register what the config selects, nothing else."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

from hermes_host import hookspecs
from hermes_host.config import HermesConfig
from hermes_host.config.errors import did_you_mean
from hermes_host.plugins.discovery import discover
from hermes_host.plugins.importing import _import, new_plugin_manager
from hermes_host.plugins.info import (
    LOAD_PLUGINS_ENV,
    EngineLoadError,
    Kind,
    LoadedPlugins,
    PluginError,
    PluginInfo,
    UnknownEngineError,
    _error_text,
)
from hermes_host.plugins.registration import _register, _trace

__all__ = ["load_plugins"]


def _accepts_options(factory: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return False
    return any(p.name == "options" or p.kind is p.VAR_KEYWORD for p in params)


def _options_for(config: HermesConfig, kind: Kind, name: str) -> dict[str, Any]:
    """The ``options=`` a plugin is built with: its ``engines.<name>`` block, and for the
    built-in ``markdown`` memory provider ``memory.directory`` (where its files live)."""
    options = dict(config.engines.get(name, {}))
    options.pop("fence", None)  # the host's (fence isolation), never the engine's
    if kind == "memory_provider" and name == "markdown" and config.memory.directory:
        options.setdefault("directory", config.memory.directory)
    return options


def _instantiate(info: PluginInfo, plugin: Any, options: Mapping[str, Any]) -> object:
    """An entry point names a class (R-14.2); a module or an object is registered as is."""
    if not inspect.isclass(plugin):
        return plugin
    factory: Callable[..., object] = plugin
    if _accepts_options(factory):
        return factory(options=dict(options))
    if options:
        raise TypeError(
            f"engines.{info.name} has options ({', '.join(options)}) but "
            f"{plugin.__name__}() does not accept an options= argument"
        )
    return factory()


def _config_key(config: HermesConfig, name: str) -> str:
    """The config key that selects engine ``name`` (for error messages, R-0.3)."""
    if config.context.engine == name and not all(
        config.context.hooks.get(h) for h in hookspecs.LIFECYCLE_HOOKS
    ):
        return "context.engine"
    for hook, chain in config.context.hooks.items():
        if name in chain:
            return f"context.hooks.{hook}"
    return "context.engine"


def load_plugins(
    config: HermesConfig, *, extra: Mapping[str, object] | None = None
) -> LoadedPlugins:
    """Import, instantiate and register what ``config`` selects; nothing else is imported.

    ``extra`` maps names to ready instances registered directly (tests, embedding, built-in
    plugins); an extra whose name is a selected engine or provider satisfies that selection.

    Raises :class:`UnknownEngineError` (selected engine not installed; lists the choices),
    :class:`EngineLoadError` (it fails to import, instantiate or register, or implements a
    misspelled hook), :class:`DuplicatePluginError`.  A failing or missing memory provider is
    recorded in ``failures`` and skipped.
    """
    extra = dict(extra or {})
    infos = discover()
    by_key: dict[tuple[str, str], PluginInfo] = {
        (i.kind, i.name): i for i in infos if i.status != "disabled"
    }
    disabled: dict[tuple[str, str], PluginInfo] = {
        (i.kind, i.name): i for i in infos if i.status == "disabled"
    }
    engine_names = config.context.engine_names()
    provider_names = list(dict.fromkeys(config.memory.providers))
    both = set(engine_names) & set(provider_names)
    if both:
        raise PluginError(
            f"memory.providers: {', '.join(sorted(both))} is also selected as an engine; "
            "a name can be one or the other"
        )

    loaded = LoadedPlugins(pm=new_plugin_manager())
    extra_infos: list[PluginInfo] = []
    for name, instance in extra.items():
        kind: Kind = "memory_provider" if name in provider_names else "engine"
        info = PluginInfo(
            name=name,
            kind=kind,
            distribution=None,
            version=None,
            module=f"{type(instance).__module__}.{type(instance).__qualname__}",
            status="loaded",
        )
        extra_infos.append(info)
        _register(loaded, info, instance, fatal=True)

    for kind, names in (("engine", engine_names), ("memory_provider", provider_names)):
        todo = [n for n in names if n not in extra and (kind, n) in by_key]
        for name in names:
            if name in extra or (kind, name) in by_key:
                continue
            if kind == "engine":
                raise _unknown_engine(config, name, by_key, disabled, extra)
            loaded.failures.append(_missing_provider(name, by_key, disabled))
        imported, failed = _import(kind, todo)
        for name in todo:
            info = by_key[(kind, name)]
            try:
                if name in failed:
                    raise failed[name]
                if name not in imported:
                    raise LookupError(f"entry point {info.module!r} was not found by stevedore")
                options = _options_for(config, kind, name)
                instance = _instantiate(info, imported[name], options)
                if inspect.isclass(imported[name]):
                    takes = _accepts_options(imported[name])
                    loaded.factories[name] = (imported[name], dict(options) if takes else None)
            except Exception as exc:
                info.status = "failed"
                info.error = _error_text(exc)
                if kind == "engine":
                    raise EngineLoadError(
                        f"{_config_key(config, name)}: engine {info.describe()} failed to "
                        f"load: {info.error}",
                        info=info,
                    ) from None
                loaded.failures.append(info)
                _trace(f"memory provider {info.describe()} failed: {info.error}")
                continue
            _register(loaded, info, instance, fatal=kind == "engine")

    loaded.pm.check_pending()
    loaded.infos = [*infos, *extra_infos]
    return loaded


def _unknown_engine(
    config: HermesConfig,
    name: str,
    by_key: Mapping[tuple[str, str], PluginInfo],
    disabled: Mapping[tuple[str, str], PluginInfo],
    extra: Mapping[str, object],
) -> UnknownEngineError:
    choices = sorted({n for (k, n) in by_key if k == "engine"} | set(extra))
    key = _config_key(config, name)
    listed = ", ".join(choices) if choices else "none (install an engine distribution)"
    if ("engine", name) in disabled:
        info = disabled[("engine", name)]
        why = (
            f"engine {info.describe()} is installed but hidden by "
            f"{LOAD_PLUGINS_ENV}={os.environ.get(LOAD_PLUGINS_ENV, '')!r}"
        )
    else:
        why = f"unknown engine {name!r}"
        why += did_you_mean(name, choices, cutoff=0.75)
    return UnknownEngineError(
        f"{key}: {why}; installed engines: {listed}", name=name, key=key, choices=choices
    )


def _missing_provider(
    name: str,
    by_key: Mapping[tuple[str, str], PluginInfo],
    disabled: Mapping[tuple[str, str], PluginInfo],
) -> PluginInfo:
    choices = sorted(n for (k, n) in by_key if k == "memory_provider")
    hidden = ("memory_provider", name) in disabled
    reason = (
        f"hidden by {LOAD_PLUGINS_ENV}"
        if hidden
        else f"not installed; installed memory providers: {', '.join(choices) or 'none'}"
    )
    base = disabled.get(("memory_provider", name))
    return PluginInfo(
        name=name,
        kind="memory_provider",
        distribution=base.distribution if base else None,
        version=base.version if base else None,
        module=base.module if base else "",
        status="disabled" if hidden else "failed",
        error=f"memory.providers: {name!r} {reason}",
    )
