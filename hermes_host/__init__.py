"""hermes-host: keep everything in a store, send the model a bounded window.

Public API for engine authors::

    from hermes_host import hookimpl, CompressRequest, CompressResult
"""

import logging
from importlib.metadata import PackageNotFoundError, version

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

# A library logs, the application decides where to (the CLI: HERMES_HOST_TRACE_PLUGINS=1).
logging.getLogger(__name__).addHandler(logging.NullHandler())

try:
    __version__ = version("hermes-host")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

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
