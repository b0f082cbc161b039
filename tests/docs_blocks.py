"""The shell blocks of a documentation page, as a newcomer would type them (issue 30).

A fenced block in ``sh``, ``bash``, ``shell`` or ``console`` is a command block.  An HTML
comment right above a fence (invisible on the rendered page) tells the docs test about it:

``<!-- docs-test: skip — WHY -->``: the test does not run the block, and reports why (it
needs a real API key, a running server, the whole test suite…).

A fenced block with ``title="PATH"`` (any language) is a file the page has the reader write:
the test writes it where that file already is (the scaffold made it), else at ``PATH``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SHELL = frozenset({"sh", "bash", "shell", "console"})
_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")
_MARK = re.compile(r"<!--\s*docs-test:\s*(?P<what>skip)\s*[—:-]\s*(?P<why>.+?)\s*-->", re.S)


@dataclass
class Block:
    """One fenced block of a page."""

    page: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    title: str | None
    text: str
    skip: str | None = None
    """Why the docs test does not run it (from the marker comment), or ``None``."""

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order, with its marker if it has one."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match or not match["info"].strip():
            i += 1
            continue
        info = match["info"].strip()
        lang = info.split()[0]
        title = re.search(r'title="([^"]+)"', info)
        start, indent = i, len(match["indent"])
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        i += 1
        block = Block(page, start + 1, lang, title[1] if title else None, "\n".join(body) + "\n")
        above = _comment_above(lines, start)
        mark = _MARK.search(above) if above else None
        if mark:
            block.skip = " ".join(mark["why"].split())
        found.append(block)
    return found


def _comment_above(lines: list[str], fence: int) -> str | None:
    """The HTML comment ending on the last non-blank line above line ``fence``, if any."""
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0 or not lines[j].rstrip().endswith("-->"):
        return None
    end = j
    while j >= 0 and "<!--" not in lines[j]:
        j -= 1
    return "\n".join(lines[j:end + 1]) if j >= 0 else None


def target(title: str, workdir: Path) -> Path:
    """Where a titled block goes: the file of that relative path the reader already has
    (in ``workdir`` or one directory down, where the scaffold put it), else
    ``workdir / title``."""
    for base in [workdir, *sorted(p for p in workdir.iterdir() if p.is_dir())]:
        if (base / title).is_file():
            return base / title
    return workdir / title
