"""Where the hermes-host configuration and store of a Hermes home are (see :mod:`.engine`)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["locate"]


def locate(hermes_home: str | os.PathLike[str] | None = None) -> tuple[Path | None, Path]:
    """``(config file or None, hermes-host home)`` for a Hermes home (see the module doc)."""
    env_home = os.environ.get("HERMES_HOST_HOME")
    if env_home:
        home = Path(env_home).expanduser()
    else:
        base = hermes_home or os.environ.get("HERMES_HOME") or Path.home() / ".hermes"
        home = Path(base).expanduser() / "hermes-host"
    env_config = os.environ.get("HERMES_HOST_CONFIG")
    if env_config:
        return Path(env_config).expanduser(), home
    candidate = home / "config.yaml"
    return (candidate if candidate.is_file() else None), home
