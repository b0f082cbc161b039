"""Where ``config.yaml`` and ``state.db`` live: the lookup order of R-14.5."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_config_path", "hermes_home"]


def hermes_home() -> Path:
    return Path(os.environ.get("HERMES_HOST_HOME") or Path.home() / ".hermes-host").expanduser()


def find_config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use under R-14.5's order, or ``None`` (defaults apply)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("HERMES_HOST_CONFIG")
    if env:
        return Path(env)
    for candidate in (Path("config.yaml"), hermes_home() / "config.yaml"):
        if candidate.is_file():
            return candidate
    return None
