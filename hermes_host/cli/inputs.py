"""Commands that read many input files — ``import`` and ``sessions import`` (issue 30,
deliverable 5): each FILE argument is a file, or a directory searched (recursively) for the
files of the kind the command reads, so a whole ``~/.claude/projects`` or
``~/.codex/sessions`` is one command."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["expand_inputs", "unique_name"]


def _found(directory: Path, patterns: Sequence[str]) -> list[Path]:
    """The files under ``directory`` matching any of ``patterns``, sorted by path; hidden
    files and directories (``.git``…) are not searched."""
    found = {
        path for pattern in patterns for path in directory.rglob(pattern)
        if path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(directory).parts)
    }
    return sorted(found)


def expand_inputs(
    args: Iterable[Path], patterns: Sequence[str], *, skip: Path | None = None
) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files the arguments name, in order, each once (a file named twice, or also found in
    a named directory, is read once), and each argument that names nothing with its error
    line: a path that does not exist, or a directory holding no file matching ``patterns``.
    Files a directory search finds under ``skip`` (the command's own output directory, when
    it lies inside an input directory: a second run must not read the first one's
    transcripts as logs) are not inputs."""
    skipped = skip.resolve() if skip is not None else None
    files: list[Path] = []
    seen: set[Path] = set()
    errors: list[tuple[Path, str]] = []
    kinds = " or ".join(patterns)
    for arg in args:
        if arg.is_dir():
            members = _found(arg, patterns)
            if skipped is not None and skipped != arg.resolve():  # -o inside this directory
                members = [path for path in members
                           if not path.resolve().is_relative_to(skipped)]
            if not members:
                errors.append((arg, f"{arg}: a directory with no {kinds} file in it"))
        elif arg.exists():
            members = [arg]
        else:
            errors.append((arg, f"{arg}: no such file or directory"))
            continue
        for path in members:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                files.append(path)
    return files, errors


def unique_name(stem: str, suffix: str, taken: set[str]) -> str:
    """``stem + suffix``, or ``stem-2 + suffix``, ``-3``… when a file of this run already has
    that name (two directories' ``output.jsonl``); the name is added to ``taken``."""
    name, n = f"{stem}{suffix}", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}{suffix}"
    taken.add(name)
    return name
