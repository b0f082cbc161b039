"""The built-in memory provider: ``MEMORY.md`` and ``USER.md`` in a directory (R-11.4, R-13.1).

``MEMORY.md`` holds what the agent learned about the project and its environment; ``USER.md``
what it learned about the user.  Both are plain markdown the user can edit.  The provider

* appends them to the system prompt snapshot when a session starts (``on_system_prompt``):
  the snapshot is frozen for the session, so prompt caching holds (R-1.3), and the summary
  prefix declares this memory authoritative (R-7.4);
* hands them to the summariser before a compression (``on_pre_compress``), so a summary never
  contradicts what memory says.

The directory is ``options["directory"]`` (from ``memory.directory`` in config.yaml), else
``$HERMES_HOST_HOME``.  Missing files simply contribute nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_host.config import hermes_home
from hermes_host.hookspecs import hookimpl
from hermes_host.models import PreCompressRequest, SessionEvent

__all__ = ["MEMORY_FILES", "MarkdownMemory"]

MEMORY_FILES: tuple[tuple[str, str], ...] = (
    ("MEMORY.md", "Persistent memory (MEMORY.md)"),
    ("USER.md", "About the user (USER.md)"),
)

_MAX_CHARS = 8_000
"""Per file: a memory file larger than this is cut (with a note) so it cannot eat the window."""


class MarkdownMemory:
    """Reads ``MEMORY.md`` / ``USER.md``; never writes them (the agent's tools do)."""

    name = "markdown"

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        directory = (options or {}).get("directory")
        self.directory = Path(directory).expanduser() if directory else hermes_home()

    def _blocks(self) -> list[str]:
        blocks: list[str] = []
        for filename, heading in MEMORY_FILES:
            path = self.directory / filename
            try:
                text = path.read_text(encoding="utf-8").strip()
            except (FileNotFoundError, IsADirectoryError):
                continue
            except (OSError, UnicodeDecodeError):
                # An unreadable memory file must not break the session; it contributes nothing.
                continue
            if not text:
                continue
            if len(text) > _MAX_CHARS:
                text = text[:_MAX_CHARS] + f"\n[... {filename} cut at {_MAX_CHARS} characters]"
            blocks.append(f"## {heading}\n\n{text}")
        return blocks

    @hookimpl
    def on_system_prompt(self, request: SessionEvent) -> str | None:
        blocks = self._blocks()
        if not blocks:
            return None
        return "# Memory (authoritative)\n\n" + "\n\n".join(blocks)

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> str | None:
        blocks = self._blocks()
        if not blocks:
            return None
        return (
            "The user's persistent memory below stays authoritative; the summary must not "
            "contradict it.\n\n" + "\n\n".join(blocks)
        )
