"""hermes-host: keep everything in a store, send the model a bounded window.

Public API for engine authors::

    from hermes_host import hookimpl, CompressRequest, CompressResult

The names below are imported on first use (PEP 562), so ``import hermes_host`` — and every
command line run that does not need them — stays cheap (issue 15's cold start).
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_host.hookspecs import hookimpl, hookspec
    from hermes_host.models import (
        CompressDecision,
        CompressionSettings,
        CompressRequest,
        CompressResult,
        GuardState,
        HistoryReader,
        Message,
        PreCompressRequest,
        PruneRequest,
        PruneResult,
        SelectRequest,
        SelectResult,
        SessionEvent,
        ShouldCompressRequest,
        SummarizerSettings,
    )

    __version__: str

# A library logs, the application decides where to (the CLI: HERMES_HOST_TRACE_PLUGINS=1).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "CompressDecision",
    "CompressRequest",
    "CompressResult",
    "CompressionSettings",
    "GuardState",
    "HistoryReader",
    "Message",
    "PreCompressRequest",
    "PruneRequest",
    "PruneResult",
    "SelectRequest",
    "SelectResult",
    "SessionEvent",
    "ShouldCompressRequest",
    "SummarizerSettings",
    "__version__",
    "hookimpl",
    "hookspec",
]

_HOME = {name: "hermes_host.models" for name in __all__}
_HOME.update(hookimpl="hermes_host.hookspecs", hookspec="hermes_host.hookspecs")
del _HOME["__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-host")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _HOME:
        value = getattr(import_module(_HOME[name]), name)
    else:
        raise AttributeError(f"module 'hermes_host' has no attribute {name!r}")
    globals()[name] = value  # once imported, an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
