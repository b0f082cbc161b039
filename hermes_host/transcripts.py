"""Loading and validating recorded OpenAI-format JSONL transcripts (``hermes-host replay``).

A transcript is one JSON object per line: ``role`` (system|user|assistant|tool), ``content``,
optional ``tool_calls``, ``tool_call_id`` and ``name``.  Real transcripts are messy on purpose
(adjacent user messages, calls that were never answered); that is accepted here and
normalised later when the host builds the window it sends.  What is *not* accepted, because
no faithful replay is possible, is rejected with a :class:`TranscriptError` naming the file
and the line: a line that is not JSON (or holds ``NaN``/``Infinity``, or nests deeper than
:data:`MAX_JSON_DEPTH`), an unknown role, a system message after the first message, a tool
result whose call never appears earlier, a structurally invalid message, or an empty file.
:func:`check_transcript` holds these rules; ``replay``, ``sessions import`` and the
importers all apply it, so what one accepts the others accept.

Messages are returned verbatim (every key kept, in order) so that the store can be compared
with the input file byte for byte.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
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
from hermes_host.messages.invariants import MAX_MESSAGE_DEPTH
from hermes_host.models import Message

__all__ = [
    "MAX_JSON_DEPTH",
    "JSONInputError",
    "Transcript",
    "TranscriptError",
    "TranscriptTurn",
    "check_transcript",
    "iter_jsonl_objects",
    "load_json",
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


MAX_JSON_DEPTH = MAX_MESSAGE_DEPTH
"""Deepest nesting of arrays and objects accepted in input JSON.  A real message is a few
levels deep; thousands of levels are an attack on the parser (``RecursionError``) and on
everything that walks a message later (copies, the store's codec, the wire)."""


class JSONInputError(ValueError):
    """Syntactically valid JSON that is refused: ``NaN``/``Infinity`` (which strict JSON —
    the export, most providers — cannot carry) or nesting deeper than :data:`MAX_JSON_DEPTH`.
    ``str()`` is the reason, worded for the user."""


_NON_FINITE = "non-finite numbers (NaN, Infinity) are not valid JSON and cannot be exported"


def _reject_constant(name: str) -> float:
    raise JSONInputError(f"{name} is not allowed: {_NON_FINITE}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise JSONInputError(f"number {text[:40]} is out of range: {_NON_FINITE}")
    return value


_TOO_LONG_INT = (
    "an integer of more than {limit:,} digits is not accepted (Python's limit on converting "
    "digits to a number)"
)
_TOO_DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects"


def _deeper_than(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in (item.values() if isinstance(item, dict) else item))
    return False


def load_json(text: str) -> Any:
    """``json.loads`` for untrusted input: a :class:`JSONInputError` for ``NaN``,
    ``Infinity``, out-of-range numbers, integers longer than Python converts (4,300 digits by
    default) and nesting deeper than :data:`MAX_JSON_DEPTH` (``json.JSONDecodeError`` for
    broken syntax, as usual)."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise JSONInputError(_TOO_DEEP) from None
    except (json.JSONDecodeError, JSONInputError):
        raise
    except ValueError:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        raise JSONInputError(_TOO_LONG_INT.format(limit=sys.get_int_max_str_digits())) from None
    # Nesting needs as many brackets: most text skips the walk.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _deeper_than(value, MAX_JSON_DEPTH):
        raise JSONInputError(_TOO_DEEP)
    return value


def iter_jsonl_objects(
    text: str, on_error: Callable[[int, str], Exception]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for each non-blank line of JSONL ``text`` (1-based numbers).

    A line that is not JSON, is refused by :func:`load_json`, or is JSON but not an object,
    raises ``on_error(line, reason)``: each reader (``replay``, the importers) turns it into
    its own exception type, while the wording of the reason stays the same everywhere.
    """
    # "\n" only (a "\r" before it dropped): str.splitlines() also breaks at U+2028, U+2029
    # and U+0085, which JSON writers leave unescaped inside strings (ensure_ascii=False).
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            value = load_json(line)
        except json.JSONDecodeError as exc:
            reason = f"not a JSON object (JSONL expects one per line): {exc.msg}"
            raise on_error(number, reason) from None
        except JSONInputError as exc:
            raise on_error(number, str(exc)) from None
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


def check_transcript(
    messages: Sequence[Any],
    path: str | os.PathLike[str],
    lines: Sequence[int] | None = None,
    error: Callable[[Path, int | None, str], Exception] = TranscriptError,
) -> None:
    """Raise ``error(path, line, reason)`` unless ``messages`` is a transcript that can be
    replayed faithfully: each message structurally valid, a system message only first, every
    tool result answering a call that appears earlier, and at least one non-system message.
    ``lines[i]`` is the line of ``messages[i]`` in the file (none known: ``None``)."""
    p = Path(path)
    seen_calls: set[str] = set()
    for index, message in enumerate(messages):
        line = lines[index] if lines is not None else None
        try:
            validate_messages([message])
        except MessageError as exc:
            raise error(p, line, exc.reason) from None
        role = message["role"]
        if role == "system" and index:
            raise error(p, line, "a system message is only allowed as the first message")
        if role == "tool":
            call_id = message["tool_call_id"]
            if call_id not in seen_calls:
                raise error(
                    p, line, f"tool result {call_id!r} answers a call that never appears earlier"
                )
        seen_calls.update(tool_call_ids(message))
    if all(m["role"] == "system" for m in messages):
        raise error(p, None, "empty transcript: no user, assistant or tool messages to replay")


def load_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read and validate ``path``; raise :class:`TranscriptError` naming the line."""
    p = Path(path)
    numbered = list(iter_jsonl_objects(read_text(p), partial(TranscriptError, p)))
    all_messages = [m for _, m in numbered]
    check_transcript(all_messages, p, [n for n, _ in numbered])

    system_prompt: str | None = None
    messages: list[Message] = []
    lines: list[int] = []
    for number, message in numbered:
        if message["role"] == "system":  # only ever the first (check_transcript)
            system_prompt = _system_text(message)
        else:
            messages.append(message)
            lines.append(number)

    turns: list[TranscriptTurn] = []
    for message, number in zip(messages, lines, strict=True):
        if message["role"] == "user" or not turns:
            turns.append(TranscriptTurn(index=len(turns) + 1, messages=[], lines=[]))
        turns[-1].messages.append(message)
        turns[-1].lines.append(number)
    return Transcript(
        path=p, system_prompt=system_prompt, messages=messages, lines=lines, turns=turns
    )
