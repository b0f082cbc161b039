"""``config.yaml``: pydantic models, the one loader, and errors that name file, key and value.

Lookup order (R-14.5): ``--config PATH``, else ``$HERMES_HOST_CONFIG``, else ``./config.yaml``,
else ``$HERMES_HOST_HOME/config.yaml``; with none of them the defaults apply.
``HERMES_HOST_HOME`` defaults to ``~/.hermes-host`` and also holds ``state.db``.

Which engine answers which lifecycle hook (R-14.8)::

    context:
      engine: compressor              # answers every lifecycle hook by default
      hooks:                          # optional, per hook, ordered
        select_context: [topic_router, retrieval]

For a hook listed under ``context.hooks`` the list is used as given; otherwise the chain is
``[context.engine]``.  ``select_context`` runs the chain in order, each engine receiving the
previous one's messages; the other lifecycle hooks ask the engines in order and take the first
non-``None`` answer.
"""


from hermes_host.config.engine_options import UNKNOWN_OPTION, parse_engine_options
from hermes_host.config.errors import ConfigError
from hermes_host.config.loading import load_config, parse_config, read_config_data
from hermes_host.config.locations import find_config_path, hermes_home
from hermes_host.config.sections import (
    BreakerSection,
    ContextSection,
    FenceSection,
    HermesConfig,
    HooksSection,
    Isolation,
    MemorySection,
    ModelSection,
    SessionResetSection,
    SessionsSection,
    StoreSection,
)
from hermes_host.config.strict_yaml import MAX_YAML_NODES

# The section models and parse_config were importable from the one module before; they are
# listed here now that the package re-exports them.
__all__ = [
    "MAX_YAML_NODES",
    "UNKNOWN_OPTION",
    "BreakerSection",
    "ConfigError",
    "ContextSection",
    "FenceSection",
    "HermesConfig",
    "HooksSection",
    "Isolation",
    "MemorySection",
    "ModelSection",
    "SessionResetSection",
    "SessionsSection",
    "StoreSection",
    "find_config_path",
    "hermes_home",
    "load_config",
    "parse_config",
    "parse_engine_options",
    "read_config_data",
]
