"""What is known about one plugin, and the errors that name one (R-14.2, R-0.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pluggy

from hermes_host import hookspecs

__all__ = [
    "ENGINE_GROUP",
    "LOAD_PLUGINS_ENV",
    "PROVIDER_GROUP",
    "DuplicatePluginError",
    "EngineLoadError",
    "LoadedPlugins",
    "PluginError",
    "PluginInfo",
    "UnknownEngineError",
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


def _kind_word(kind: str) -> str:
    return "engine" if kind == "engine" else "memory provider"


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
