"""Loading and validating recorded OpenAI-format JSONL transcripts (``hermes-host replay``).

A transcript is one JSON object per line: ``role`` (system|user|assistant|tool), ``content``,
optional ``tool_calls``, ``tool_call_id`` and ``name``.  Real transcripts are messy on purpose
(adjacent user messages, calls that were never answered); that is accepted here and
normalised later when the host builds the window it sends.  What is *not* accepted, because
no faithful replay is possible, is rejected with a :class:`TranscriptError` naming the file
and the line: a line that is not JSON, an unknown role, a tool result whose call never
appears earlier, a structurally invalid message, or an empty file.

Messages are returned verbatim (every key kept, in order) so that the store can be compared
with the input file byte for byte.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hermes_host.messages import (
    MessageError,
    normalize_alternation,
    repair_tool_pairs,
    tool_call_ids,
    validate_messages,
)
from hermes_host.models import Message

__all__ = [
    "Transcript",
    "TranscriptError",
    "TranscriptTurn",
    "iter_jsonl_objects",
    "load_transcript",
    "read_text",
]


class TranscriptError(ValueError):
    """A transcript cannot be replayed; ``str()`` names the file and the line."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


@dataclass
class TranscriptTurn:
    """One turn of a transcript: the user message that opens it and what follows."""

    index: int
    messages: list[Message]
    lines: list[int]
    """1-based line numbers of ``messages`` in the file."""


@dataclass
class Transcript:
    """A validated transcript: the leading system prompt (if any) and the turns after it."""

    path: Path
    system_prompt: str | None
    messages: list[Message]
    """Every non-system message, verbatim, in file order."""
    lines: list[int]
    turns: list[TranscriptTurn] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return len(self.messages) + (1 if self.system_prompt is not None else 0)

    def normalisation_counts(self) -> dict[str, int]:
        """How many messages the host must normalise before sending (SPEC R-1.4, R-6.9).

        ``merged_adjacent``: same-role neighbours merged into one message;
        ``tool_pairs_repaired``: calls left without a result closed with a short note (or stray
        results dropped).  The store keeps the originals; only the window sent is normalised.
        """
        repaired, fixes = repair_tool_pairs(self.messages)
        _, merges = normalize_alternation(repaired)
        return {"merged_adjacent": merges, "tool_pairs_repaired": fixes}


def iter_jsonl_objects(
    text: str, on_error: Callable[[int, str], Exception]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for each non-blank line of JSONL ``text`` (1-based numbers).

    A line that is not JSON, or is JSON but not an object, raises ``on_error(line, reason)``:
    each reader (``replay``, the importers) turns it into its own exception type, while the
    wording of the reason stays the same everywhere.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = f"not a JSON object (JSONL expects one per line): {exc.msg}"
            raise on_error(number, reason) from None
        if not isinstance(value, dict):
            raise on_error(number, f"expected a JSON object, got {type(value).__name__}")
        yield number, value


def _system_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def read_text(path: Path, error: type[TranscriptError] = TranscriptError) -> str:
    """The file's text (a UTF-8 BOM dropped), or ``error`` naming what is wrong: missing,
    unreadable, a directory, or not UTF-8 (with the line of the first bad byte)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(path, None, "file not found") from None
    except IsADirectoryError:
        raise error(path, None, "is a directory, expected a file") from None
    except OSError as exc:
        raise error(path, None, f"cannot read file: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(path, raw[: exc.start].count(b"\n") + 1, "not valid UTF-8") from None


def load_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read and validate ``path``; raise :class:`TranscriptError` naming the line."""
    p = Path(path)
    text = read_text(p)

    system_prompt: str | None = None
    messages: list[Message] = []
    lines: list[int] = []
    seen_calls: set[str] = set()
    for number, message in iter_jsonl_objects(text, partial(TranscriptError, p)):
        try:
            validate_messages([message])
        except MessageError as exc:
            raise TranscriptError(p, number, exc.reason) from None
        role = message["role"]
        if role == "system":
            if messages or system_prompt is not None:
                raise TranscriptError(
                    p, number, "a system message is only allowed as the first message"
                )
            system_prompt = _system_text(message)
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise TranscriptError(p, number, "tool message without a tool_call_id")
            if call_id not in seen_calls:
                raise TranscriptError(
                    p, number, f"tool result {call_id!r} answers a call that never appears earlier"
                )
        seen_calls.update(tool_call_ids(message))
        messages.append(message)
        lines.append(number)

    if not messages:
        raise TranscriptError(
            p, None, "empty transcript: no user, assistant or tool messages to replay"
        )

    turns: list[TranscriptTurn] = []
    for message, number in zip(messages, lines, strict=True):
        if message["role"] == "user" or not turns:
            turns.append(TranscriptTurn(index=len(turns) + 1, messages=[], lines=[]))
        turns[-1].messages.append(message)
        turns[-1].lines.append(number)
    return Transcript(
        path=p, system_prompt=system_prompt, messages=messages, lines=lines, turns=turns
    )
