"""hermes-compressor: the default context engine of hermes-host (SPEC sections 4–7, 10.3, 11).

Installed, it registers the entry point ``compressor`` in ``hermes_host.context_engines``;
the host loads :class:`~hermes_compressor.engine.Compressor` from there.
"""

from hermes_compressor.engine import Compressor
from hermes_compressor.options import EngineOptions, OptionsError

__all__ = ["Compressor", "EngineOptions", "OptionsError"]
