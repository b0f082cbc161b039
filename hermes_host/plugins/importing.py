"""Importing with stevedore: only the named entry points, failures returned, never raised."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import pluggy
from stevedore import ExtensionManager, NamedExtensionManager

from hermes_host import hookspecs
from hermes_host.config import HermesConfig
from hermes_host.plugins.discovery import discover
from hermes_host.plugins.info import _ALL_HOOKS, _GROUP_OF_KIND, PluginInfo, _error_text

__all__ = ["implemented_hooks", "inspect_plugins", "new_plugin_manager"]


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager that knows every hermes-host hookspec and holds no plugin."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def implemented_hooks(plugin: object) -> list[str]:
    """Names of the hooks ``plugin`` (class, instance or module) implements, in spec order;
    misspelled hook names are included as written, so a listing shows them."""
    pm = new_plugin_manager()
    names = [name for name in dir(plugin) if pm.parse_hookimpl_opts(plugin, name) is not None]
    known = [hook for hook in _ALL_HOOKS if hook in names]
    return known + sorted(name for name in names if name not in _ALL_HOOKS)


def _import(kind: str, names: Sequence[str]) -> tuple[dict[str, Any], dict[str, BaseException]]:
    """Import the named entry points of one group with stevedore; failures are returned,
    never raised, and nothing outside ``names`` is imported."""
    failures: dict[str, BaseException] = {}
    if not names:
        return {}, failures

    def on_failure(
        _manager: ExtensionManager[Any], ep: importlib.metadata.EntryPoint, exc: BaseException
    ) -> None:
        failures[ep.name] = exc

    manager: NamedExtensionManager[Any] = NamedExtensionManager(
        namespace=_GROUP_OF_KIND[kind],
        names=list(names),
        invoke_on_load=False,
        on_load_failure_callback=on_failure,
        on_missing_entrypoints_callback=None,
    )
    return {ext.name: ext.plugin for ext in manager.extensions}, failures


def inspect_plugins(
    config: HermesConfig | None = None, *, import_all: bool = False
) -> list[PluginInfo]:
    """:func:`discover`, then import what ``config`` selects (or every visible plugin with
    ``import_all``) to fill in ``hooks``, ``status`` and ``error``.  Nothing is instantiated
    and nothing raises for a broken plugin: this is what ``engines list`` shows."""
    infos = discover()
    wanted: dict[str, set[str]] = {"engine": set(), "memory_provider": set()}
    if config is not None:
        wanted["engine"].update(config.context.engine_names())
        wanted["memory_provider"].update(config.memory.providers)
    for kind in wanted:
        visible = [i for i in infos if i.kind == kind and i.status != "disabled"]
        names = [i.name for i in visible if import_all or i.name in wanted[kind]]
        loaded, failed = _import(kind, names)
        for info in visible:
            if info.name in loaded:
                info.hooks = implemented_hooks(loaded[info.name])
                info.status = "loaded"
            elif info.name in failed:
                info.status = "failed"
                info.error = _error_text(failed[info.name])
    return infos
