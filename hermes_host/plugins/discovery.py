"""Discovery: the entry points of both groups, read as metadata; nothing is imported."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterable
from dataclasses import replace

from stevedore import ExtensionManager

from hermes_host.plugins.info import (
    _GROUP_OF_KIND,
    _KIND_OF_GROUP,
    LOAD_PLUGINS_ENV,
    DuplicatePluginError,
    PluginInfo,
    _kind_word,
)

__all__ = ["discover", "reset_discovery_cache"]


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
