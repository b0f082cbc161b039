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


from hermes_host.plugins import info
from hermes_host.plugins.discovery import discover, reset_discovery_cache
from hermes_host.plugins.importing import implemented_hooks, inspect_plugins, new_plugin_manager
from hermes_host.plugins.info import *  # noqa: F403  (the groups, value types and errors)
from hermes_host.plugins.loading import load_plugins
from hermes_host.tracing import TRACE_ENV, trace_enabled

__all__ = [
    "TRACE_ENV",
    "discover",
    "implemented_hooks",
    "inspect_plugins",
    "load_plugins",
    "new_plugin_manager",
    "reset_discovery_cache",
    "trace_enabled",
]
__all__ += info.__all__
