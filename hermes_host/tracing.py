"""The one switch for the plugin and fence traces: ``HERMES_HOST_TRACE_PLUGINS=1``.

Its own module so the command line can read it without importing the plugin machinery."""

from __future__ import annotations

import os

__all__ = ["TRACE_ENV", "trace_enabled"]

TRACE_ENV = "HERMES_HOST_TRACE_PLUGINS"


def trace_enabled() -> bool:
    """Whether ``HERMES_HOST_TRACE_PLUGINS`` asks for the plugin trace."""
    return os.environ.get(TRACE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
