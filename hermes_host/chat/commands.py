"""The slash commands of ``hermes-host chat`` (R-12.1): their table, and parsing a line into a
:class:`Command` (``/compress`` arguments too)."""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandSpec:
    """One slash command: its name, aliases, argument synopsis and one-line help."""

    name: str
    usage: str
    help: str
    aliases: tuple[str, ...] = ()


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("compress", "[here [N]] [--preview] [focus…]",
                "compress now (clears the cooldown); `here N` keeps the last N turns; "
                "--preview shows the effect without committing; words favour a topic",
                ("compact",)),
    CommandSpec("new", "[name]", "end this session and start a fresh one", ("reset",)),
    CommandSpec("undo", "[N]", "remove the last N turns (default 1) from the window; the "
                "store keeps them"),
    CommandSpec("branch", "[name]", "fork: a new session whose parent is this one, with this "
                "window copied", ("fork",)),
    CommandSpec("status", "", "session, model, context use, compressions, select_context"),
    CommandSpec("resume", "[name|id]", "switch to a stored session and show its recap"),
    CommandSpec("sessions", "", "list recent sessions"),
    CommandSpec("title", "[name]", "show or set this session's title"),
    CommandSpec("help", "", "this list"),
    CommandSpec("quit", "", "leave (the session stays in the store)", ("exit", "q")),
)

_BY_NAME: dict[str, CommandSpec] = {}
for _spec in COMMANDS:
    _BY_NAME[_spec.name] = _spec
    for _alias in _spec.aliases:
        _BY_NAME[_alias] = _spec


class CommandError(ValueError):
    """A slash command could not be understood; ``str()`` says how to fix it."""


@dataclass(frozen=True)
class Command:
    """A parsed slash command: the canonical ``name`` and its arguments."""

    name: str
    args: tuple[str, ...] = ()
    raw_args: str = ""
    """Everything after the command word, verbatim (titles keep their spacing)."""


def parse_command(line: str) -> Command | None:
    """``None`` when ``line`` is a message (no leading ``/``, or an escaped ``//``);
    otherwise the :class:`Command`, or :class:`CommandError` for an unknown one (with a
    suggestion)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    word, _, rest = text[1:].partition(" ")
    word = word.lower()
    spec = _BY_NAME.get(word)
    if spec is None:
        close = difflib.get_close_matches(word, list(_BY_NAME), n=1, cutoff=0.6)
        hint = f" — did you mean /{_BY_NAME[close[0]].name}?" if close else "."
        shown = f"/{word}" if word else "/"
        raise CommandError(f"unknown command {shown}{hint} Type /help for the list.")
    rest = rest.strip()
    try:
        args = tuple(shlex.split(rest))
    except ValueError:
        args = tuple(rest.split())
    return Command(spec.name, args, rest)


@dataclass(frozen=True)
class CompressArgs:
    """``/compress [here [N]] [--preview] [focus…]``."""

    keep_last_turns: int | None = None
    preview: bool = False
    focus: str | None = None


def parse_compress_args(args: Sequence[str]) -> CompressArgs:
    """Parse ``/compress`` arguments; ``here`` without N keeps the last turn."""
    rest = list(args)
    preview = False
    while "--preview" in rest:
        rest.remove("--preview")
        preview = True
    unknown = [a for a in rest if a.startswith("--")]
    if unknown:
        raise CommandError(f"/compress: unknown option {unknown[0]}; usage: "
                           f"/compress {_BY_NAME['compress'].usage}")
    keep: int | None = None
    if rest and rest[0].lower() == "here":
        rest.pop(0)
        keep = 1
        if rest and rest[0].lstrip("-").isdigit():
            keep = int(rest.pop(0))
            if keep < 0:
                raise CommandError("/compress here N: N must be 0 or more")
    focus = " ".join(rest).strip() or None
    return CompressArgs(keep_last_turns=keep, preview=preview, focus=focus)
