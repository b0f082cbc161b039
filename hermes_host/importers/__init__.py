"""Importers: other agents' session logs → the OpenAI-format JSONL ``hermes-host replay`` reads.

So users can replay their *own* history through the host and its engines.  One module per
format; each exposes ``import_<format>(path) -> ImportResult``:

* ``claude-code`` — Claude Code session logs (:mod:`.claude_code`);
* ``codex`` — Codex CLI rollouts, current and older layouts (:mod:`.codex`);
* ``openhands`` — OpenHands event streams, a JSON array or JSONL (:mod:`.openhands`).

Records a format defines but that are not conversation (summaries, reasoning, UI events…)
are skipped and *counted* in :attr:`ImportResult.skipped`; a line that is not JSON is a
:class:`TranscriptImportError` naming the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hermes_host.importers.base import ImportResult, NoConversationError, TranscriptImportError
from hermes_host.importers.claude_code import import_claude_code
from hermes_host.importers.codex import import_codex
from hermes_host.importers.openhands import import_openhands

__all__ = [
    "FORMATS",
    "ImportResult",
    "NoConversationError",
    "TranscriptImportError",
    "import_claude_code",
    "import_codex",
    "import_file",
    "import_openhands",
]

FORMATS: dict[str, Callable[[Path], ImportResult]] = {
    "claude-code": import_claude_code,
    "codex": import_codex,
    "openhands": import_openhands,
}
"""Format name (as typed on the command line) → importer."""


def import_file(format: str, path: str | os.PathLike[str]) -> ImportResult:
    """Convert ``path`` written in ``format`` (a key of :data:`FORMATS`)."""
    try:
        importer = FORMATS[format]
    except KeyError:
        raise TranscriptImportError(
            path, None, f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}"
        ) from None
    return importer(Path(path))
