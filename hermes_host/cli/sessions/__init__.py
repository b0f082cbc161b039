"""``hermes-host sessions``: list, show, search, lineage, export and import stored sessions.

Every command takes ``--store PATH|URL`` (default: the configured store, ``store.url`` or
``$HERMES_HOST_HOME/state.db``; a URL of any installed backend, e.g.
``postgresql://…``), ``--config PATH`` and ``--json``.  Humans get rich tables; scripts get
JSON.  A store problem, bad input or an unknown session is a one-line error and exit code
2, never a traceback.

A conversation is the unit they speak (issue 30): ``show``, ``lineage``, ``export`` and
``search --session`` take a conversation id (the id an integration hands out), the id of any
session of it, a title or ``last``, and act on the whole conversation unless
``--only-session`` asks for the one session named; ``list`` lists conversations.
``requests`` and ``costs`` read the request manifests and compaction receipts (issue 29).
"""

from __future__ import annotations

import click

from .browse import lineage_cmd, list_cmd, search_cmd, show_cmd
from .requests import costs_cmd, requests_cmd
from .transfer import export_cmd, import_cmd

__all__ = ["sessions"]


@click.group("sessions")
def sessions() -> None:
    """Stored sessions: list, show, search, lineage, requests, costs, export, import.

    A conversation is named by its conversation id (the id an integration hands out), the
    id of any session of it, a title or `last`; each command acts on the whole
    conversation unless given --only-session."""


for _command in (list_cmd, show_cmd, search_cmd, lineage_cmd, requests_cmd, costs_cmd,
                 export_cmd, import_cmd):
    sessions.add_command(_command)
