"""``hermes-host sessions``: list, show, search, lineage, export and import stored sessions.

Every command takes ``--store PATH|URL`` (default: the configured store, ``store.url`` or
``$HERMES_HOST_HOME/state.db``; a URL of any installed backend, e.g.
``postgresql://…``), ``--config PATH`` and ``--json``.  Humans get rich tables; scripts get
JSON.  A store problem or bad input is a one-line error and exit code 2 (1 for
"no such session"), never a traceback.
"""

from __future__ import annotations

import click

from .browse import lineage_cmd, list_cmd, search_cmd, show_cmd
from .transfer import export_cmd, import_cmd

__all__ = ["sessions"]


@click.group("sessions")
def sessions() -> None:
    """Stored sessions: list, show, search, lineage, export, import."""


for _command in (list_cmd, show_cmd, search_cmd, lineage_cmd, export_cmd, import_cmd):
    sessions.add_command(_command)
