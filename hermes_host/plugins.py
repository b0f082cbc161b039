"""Plugin discovery (entry points, stevedore) and registration (pluggy): the only stevedore user.

Two entry-point groups (R-14.2): ``hermes_host.context_engines`` and
``hermes_host.memory_providers``.  An entry point's *name* is what users type in
``config.yaml`` (``context.engine: compressor``); its value names a class that the host
instantiates (with ``options=`` — the ``engines.<name>`` block — when the constructor accepts
it) and registers with pluggy under that name.

Rules, each one a reason this module exists instead of ``pm.load_setuptools_entrypoints``:

* :func:`discover` reads entry-point *metadata* only: nothing is imported, so a broken or slow
  engine that the config does not select costs nothing.  The scan happens once per process.
* :func:`load_plugins` imports only what the config selects.  A selected engine that is not
  installed, fails to import or to instantiate is a clear :class:`PluginError` (the CLI prints
  it and exits 2).  A failing memory provider is recorded in ``failures`` and the host goes on.
* Two distributions exposing the same name in one group is an error
  (:class:`DuplicatePluginError`), never a silent "last one wins".
* ``HERMES_HOST_LOAD_PLUGINS`` (comma-separated names, ``""`` = none) hides every other entry
  point: bug reports and tests become reproducible.  Hidden plugins are listed as
  ``disabled`` and are never imported.
* ``HERMES_HOST_TRACE_PLUGINS=1`` switches on the trace (loading lines here; the hook-call
  trace is printed by the fence).
"""

from __future__ import annotations

import difflib
import importlib.metadata
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pluggy
from stevedore import ExtensionManager, NamedExtensionManager

from hermes_host import hookspecs
from hermes_host.config import HermesConfig
from hermes_host.tracing import TRACE_ENV, trace_enabled

__all__ = [
    "ENGINE_GROUP",
    "LOAD_PLUGINS_ENV",
    "PROVIDER_GROUP",
    "TRACE_ENV",
    "DuplicatePluginError",
    "EngineLoadError",
    "LoadedPlugins",
    "PluginError",
    "PluginInfo",
    "UnknownEngineError",
    "discover",
    "implemented_hooks",
    "inspect_plugins",
    "load_plugins",
    "new_plugin_manager",
    "reset_discovery_cache",
    "trace_enabled",
]

ENGINE_GROUP = "hermes_host.context_engines"
PROVIDER_GROUP = "hermes_host.memory_providers"
LOAD_PLUGINS_ENV = "HERMES_HOST_LOAD_PLUGINS"

Kind = Literal["engine", "memory_provider"]
Status = Literal["not loaded", "loaded", "failed", "disabled"]

_GROUP_OF_KIND: dict[str, str] = {"engine": ENGINE_GROUP, "memory_provider": PROVIDER_GROUP}
_KIND_OF_GROUP: dict[str, Kind] = {ENGINE_GROUP: "engine", PROVIDER_GROUP: "memory_provider"}
_ALL_HOOKS: tuple[str, ...] = (*hookspecs.LIFECYCLE_HOOKS, *hookspecs.MEMORY_HOOKS)


class PluginError(Exception):
    """A plugin problem the user must fix; ``str()`` is the user-facing message."""


class UnknownEngineError(PluginError):
    """The config selects an engine that no installed distribution provides."""

    def __init__(self, message: str, *, name: str, key: str, choices: Sequence[str]) -> None:
        super().__init__(message)
        self.name = name
        self.key = key
        self.choices = list(choices)


class EngineLoadError(PluginError):
    """A selected engine failed to import, instantiate or register."""

    def __init__(self, message: str, *, info: PluginInfo) -> None:
        super().__init__(message)
        self.info = info


class DuplicatePluginError(PluginError):
    """Two distributions expose the same entry-point name in one group."""


@dataclass
class PluginInfo:
    """What is known about one plugin; ``hooks`` is ``None`` until the plugin is imported."""

    name: str
    kind: Kind
    distribution: str | None
    version: str | None
    module: str
    hooks: list[str] | None = None
    status: Status = "not loaded"
    error: str | None = None

    def describe(self) -> str:
        """``'name' (distribution version)`` — how messages name a plugin."""
        if self.distribution:
            return f"{self.name!r} ({self.distribution} {self.version or '?'})"
        return f"{self.name!r} ({self.module})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "hooks": self.hooks,
            "status": self.status,
            "error": self.error,
        }


@dataclass
class LoadedPlugins:
    """The result of :func:`load_plugins`: a plugin manager holding exactly what config chose."""

    pm: pluggy.PluginManager
    engines: dict[str, object] = field(default_factory=dict)
    providers: dict[str, object] = field(default_factory=dict)
    infos: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginInfo] = field(default_factory=list)
    factories: dict[str, tuple[Any, dict[str, Any] | None]] = field(default_factory=dict)
    """Per entry-point plugin built from a class: ``(class, options)`` (``options`` is
    ``None`` when the constructor takes none), so a worker process can build its own."""


# --- discovery (metadata only) ----------------------------------------------------------

_scan_cache: list[PluginInfo] | None = None


def reset_discovery_cache() -> None:
    """Forget the entry-point scan (ours and stevedore's in-process cache); for tests."""
    global _scan_cache
    _scan_cache = None
    ExtensionManager.ENTRY_POINT_CACHE.clear()


def _allow_list() -> set[str] | None:
    """Names allowed by ``HERMES_HOST_LOAD_PLUGINS``; ``None`` when unset (all allowed)."""
    raw = os.environ.get(LOAD_PLUGINS_ENV)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _scan() -> list[PluginInfo]:
    """Every entry point of both groups, with its distribution; imports nothing."""
    global _scan_cache
    if _scan_cache is None:
        found: list[PluginInfo] = []
        for group, kind in _KIND_OF_GROUP.items():
            # entry_points() already de-duplicates one distribution seen twice on sys.path.
            for ep in importlib.metadata.entry_points(group=group):
                dist = ep.dist
                found.append(
                    PluginInfo(
                        name=ep.name,
                        kind=kind,
                        distribution=dist.name if dist is not None else None,
                        version=dist.version if dist is not None else None,
                        module=ep.value,
                    )
                )
        found.sort(key=lambda info: (info.kind != "engine", info.name))
        _scan_cache = found
    return [replace(info) for info in _scan_cache]


def discover() -> list[PluginInfo]:
    """Installed plugins of both groups, without importing any of them.

    Plugins hidden by ``HERMES_HOST_LOAD_PLUGINS`` are listed with status ``disabled``.
    Raises :class:`DuplicatePluginError` when two distributions expose one visible name.
    """
    allowed = _allow_list()
    infos = _scan()
    for info in infos:
        if allowed is not None and info.name not in allowed:
            info.status = "disabled"
    _check_duplicates(info for info in infos if info.status != "disabled")
    return infos


def _check_duplicates(infos: Iterable[PluginInfo]) -> None:
    seen: dict[tuple[str, str], PluginInfo] = {}
    for info in infos:
        key = (info.kind, info.name)
        first = seen.get(key)
        if first is None:
            seen[key] = info
            continue
        group = _GROUP_OF_KIND[info.kind]
        raise DuplicatePluginError(
            f"two distributions provide the {_kind_word(info.kind)} {info.name!r} "
            f"(entry-point group {group}): "
            f"{first.distribution} {first.version} ({first.module}) and "
            f"{info.distribution} {info.version} ({info.module}). "
            f"Uninstall one of them, or hide the name with {LOAD_PLUGINS_ENV}."
        )


def _kind_word(kind: str) -> str:
    return "engine" if kind == "engine" else "memory provider"


# --- importing (stevedore) --------------------------------------------------------------


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


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


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


# --- registration (pluggy) --------------------------------------------------------------


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


def _unknown_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """Hook implementations of ``plugin`` that match no hookspec (a typo, usually)."""
    unknown = []
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        impls = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
        if any(not impl.optionalhook for impl in impls):
            unknown.append(caller.name)
    return unknown


def _unknown_hook_message(info: PluginInfo, hooks: Sequence[str]) -> str:
    parts = []
    for hook in hooks:
        close = difflib.get_close_matches(hook, _ALL_HOOKS, n=1)
        parts.append(f"{hook!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (
        f"{_kind_word(info.kind)} {info.describe()} implements unknown hook "
        f"{', '.join(parts)}; known hooks: {', '.join(_ALL_HOOKS)}"
    )


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


def _trace(message: str) -> None:
    if trace_enabled():
        print(f"[hermes-host plugins] {message}", file=sys.stderr)


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


def _register(loaded: LoadedPlugins, info: PluginInfo, instance: object, *, fatal: bool) -> None:
    """Register one instance under its entry-point name; a provider that cannot be registered
    (bad hook signature, misspelled hook) is recorded as a failure when not ``fatal``."""
    pm = loaded.pm
    try:
        info.hooks = implemented_hooks(instance)
        pm.register(instance, name=info.name)
        unknown = _unknown_hooks(pm, instance)
        if unknown:
            pm.unregister(instance)
            raise PluginError(_unknown_hook_message(info, unknown))
    except Exception as exc:  # pluggy validation, a duplicate name, a raising attribute
        info.status = "failed"
        text = str(exc) if isinstance(exc, pluggy.PluginValidationError | PluginError) else (
            _error_text(exc)
        )
        info.error = "; ".join(line.strip() for line in text.splitlines() if line.strip())
        if fatal:
            raise EngineLoadError(
                f"{_kind_word(info.kind)} {info.describe()} cannot be registered: {info.error}",
                info=info,
            ) from None
        loaded.failures.append(info)
        _trace(f"{_kind_word(info.kind)} {info.describe()} failed: {info.error}")
        return
    info.status = "loaded"
    target = loaded.engines if info.kind == "engine" else loaded.providers
    target[info.name] = instance
    _trace(f"loaded {_kind_word(info.kind)} {info.describe()} hooks={info.hooks}")


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
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.75)
        if close:
            why += f" (did you mean {close[0]!r}?)"
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
