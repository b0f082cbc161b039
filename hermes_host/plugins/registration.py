"""Registration with pluggy: one instance under its entry-point name, misspelled hooks refused."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pluggy

from hermes_host.config.errors import did_you_mean
from hermes_host.plugins.importing import implemented_hooks
from hermes_host.plugins.info import (
    _ALL_HOOKS,
    EngineLoadError,
    LoadedPlugins,
    PluginError,
    PluginInfo,
    _error_text,
    _kind_word,
)
from hermes_host.tracing import trace_enabled

__all__: list[str] = []


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
        parts.append(f"{hook!r}" + did_you_mean(hook, _ALL_HOOKS))
    return (
        f"{_kind_word(info.kind)} {info.describe()} implements unknown hook "
        f"{', '.join(parts)}; known hooks: {', '.join(_ALL_HOOKS)}"
    )


def _trace(message: str) -> None:
    if trace_enabled():
        print(f"[hermes-host plugins] {message}", file=sys.stderr)


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
