"""What every importer shares: reading records with their line numbers, the error type, and
:class:`TranscriptBuilder`, which turns a stream of "this was said / this tool was called /
this is its result" into an OpenAI-format message list that ``hermes-host replay`` accepts.

Why a builder: each foreign format has its own idea of a turn, but the rules that make a
transcript replayable are the same for all of them — a system prompt only at the start, every
tool result answering a call that appears earlier (otherwise the loader refuses the file), no
empty messages, tool arguments as JSON strings.  Putting those rules in one place means a
format module only has to *recognise* records.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hermes_host import transcripts
from hermes_host.models import Message
from hermes_host.transcripts import (
    JSONInputError,
    TranscriptError,
    check_transcript,
    iter_jsonl_objects,
    load_json,
)

__all__ = [
    "ImportResult",
    "NoConversationError",
    "Record",
    "TranscriptBuilder",
    "TranscriptImportError",
    "as_arguments",
    "iter_json_records",
    "read_text",
]


_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATES_REPLACED = "lone surrogate (replaced by U+FFFD)"


class TranscriptImportError(TranscriptError):
    """A file cannot be imported; ``str()`` names the file, the line when known, and why."""


class NoConversationError(TranscriptImportError):
    """A log that holds no conversation (no user or assistant message converts);
    :attr:`skipped` counts what it holds instead — ``sidechain`` records make it a Claude
    Code sub-agent's own log, whose conversation belongs to another session."""

    def __init__(self, path: str | os.PathLike[str], skipped: Mapping[str, int]) -> None:
        self.skipped = dict(sorted(skipped.items()))
        held = ", ".join(f"{kind} ×{n}" for kind, n in self.skipped.items())
        super().__init__(
            path, None, "no conversation found (no user or assistant messages"
            + (f"; it holds {held}" if held else "") + "); is this the right --format?")


@dataclass(frozen=True)
class Record:
    """One JSON object of the input and the 1-based line it starts on."""

    line: int
    value: dict[str, Any]


@dataclass
class ImportResult:
    """The converted transcript and an account of what was left out."""

    source: Path
    format: str
    messages: list[Message]
    """OpenAI-format messages; a system prompt, when the source had one, comes first."""
    records: int = 0
    """Records read from the source."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Records (or blocks) not converted, by kind — e.g. ``summary``, ``reasoning``,
    ``orphan tool result``.  Nothing is dropped silently."""

    @property
    def has_system_prompt(self) -> bool:
        return bool(self.messages) and self.messages[0].get("role") == "system"

    def to_jsonl(self) -> str:
        """One JSON object per line, what ``hermes-host replay`` reads."""
        return "".join(
            json.dumps(m, ensure_ascii=False, allow_nan=False) + "\n" for m in self.messages
        )

    def summary(self) -> dict[str, Any]:
        roles = Counter(str(m.get("role")) for m in self.messages)
        return {
            "source": str(self.source),
            "format": self.format,
            "records": self.records,
            "messages": len(self.messages),
            "by_role": dict(sorted(roles.items())),
            "system_prompt": self.has_system_prompt,
            "skipped": dict(sorted(self.skipped.items())),
        }


def read_text(path: Path) -> str:
    """The file's text, or :class:`TranscriptImportError` naming what is wrong (missing,
    unreadable, not UTF-8 — with the line of the first bad byte)."""
    return transcripts.read_text(path, TranscriptImportError)


def iter_json_records(path: Path, text: str, *, allow_array: bool = False) -> Iterator[Record]:
    """JSONL records (one object per line), or — with ``allow_array`` — the objects of a
    top-level JSON array.  A broken line is an :class:`TranscriptImportError` naming that line."""
    stripped = text.lstrip()
    if allow_array and stripped.startswith("["):
        try:
            values = load_json(text)
        except json.JSONDecodeError as exc:
            raise TranscriptImportError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
        except JSONInputError as exc:
            raise TranscriptImportError(path, None, str(exc)) from None
        if not isinstance(values, list):
            raise TranscriptImportError(path, 1, "expected a JSON array of events")
        # Line numbers of array items are not tracked by json; report the item's position.
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise TranscriptImportError(
                    path, None, f"item {index} of the array is {type(value).__name__}, "
                    "expected an object"
                )
            yield Record(line=index + 1, value=value)
        return
    for number, value in iter_jsonl_objects(text, partial(TranscriptImportError, path)):
        yield Record(line=number, value=value)


def as_arguments(value: Any) -> str:
    """Tool-call arguments as the JSON string OpenAI format wants."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


class TranscriptBuilder:
    """Collects messages in order and enforces what makes a transcript replayable.

    * system text is only accepted before the first conversation message (later system or
      developer text becomes a user note, so nothing is lost);
    * a tool result must answer a call seen earlier, else it is skipped and counted;
    * consecutive assistant pieces of one model response (same ``response_id``) merge into
      one message: text first, then every call, as the provider produced them;
    * empty text is not emitted.
    """

    def __init__(self, skipped: Counter[str]) -> None:
        self.skipped = skipped
        self._system: list[str] = []
        self.messages: list[Message] = []
        self._calls: dict[str, str] = {}  # call id -> tool name
        self._answered: set[str] = set()
        self._open_response: str | None = None

    # -- adding -------------------------------------------------------------------------

    def system(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if self.messages:
            self.user(f"[system note] {text}")
            return
        self._system.append(text)

    def user(self, text: str) -> None:
        self._open_response = None
        if text.strip():
            self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str | None, response_id: str | None = None) -> None:
        """Assistant text; pieces with the same ``response_id`` join one message."""
        text = (text or "").strip()
        if not text:
            return
        last = self._mergeable(response_id)
        if last is not None:
            last["content"] = "\n\n".join(p for p in (last.get("content") or "", text) if p)
            return
        self.messages.append({"role": "assistant", "content": text})
        self._open_response = response_id

    def tool_call(
        self, call_id: str, name: str, arguments: Any, response_id: str | None = None
    ) -> None:
        """An assistant tool call; joins the current assistant message when it belongs to
        the same model response (or that message has text only and no response id)."""
        call_id = call_id or f"call_unnamed_{len(self._calls) + 1}"
        if call_id in self._calls:  # its results could not be told apart
            self.skipped["duplicate tool call id"] += 1
            return
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name or "tool", "arguments": as_arguments(arguments)},
        }
        self._calls[call_id] = name or "tool"
        last = self._mergeable(response_id)
        if last is None and self.messages and response_id is None:
            prev = self.messages[-1]
            if prev.get("role") == "assistant" and not prev.get("tool_calls"):
                last = prev  # "thought, then the call" of one step
        if last is not None:
            last.setdefault("tool_calls", []).append(call)
            if not last.get("content"):
                last["content"] = None
            self._open_response = response_id
            return
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self._open_response = response_id

    def tool_result(self, call_id: str, content: str) -> None:
        if call_id not in self._calls:
            self.skipped["orphan tool result"] += 1
            return
        if call_id in self._answered:
            self.skipped["duplicate tool result"] += 1
            return
        self._answered.add(call_id)
        self._open_response = None
        self.messages.append({
            "role": "tool",
            "tool_call_id": call_id,
            "name": self._calls[call_id],
            "content": content,
        })

    def _mergeable(self, response_id: str | None) -> Message | None:
        if response_id is None or response_id != self._open_response or not self.messages:
            return None
        last = self.messages[-1]
        return last if last.get("role") == "assistant" else None

    # -- result -------------------------------------------------------------------------

    def finish(self, path: Path) -> list[Message]:
        """The message list (system prompt first), validated by the rules ``replay``
        applies; an error when nothing of the conversation was found."""
        if not any(m.get("role") in ("user", "assistant") for m in self.messages):
            raise NoConversationError(path, self.skipped)
        out: list[Message] = []
        if self._system:
            out.append({"role": "system", "content": "\n\n".join(self._system)})
        out.extend(self.messages)
        out = [self._without_surrogates(m) for m in out]
        check_transcript(out, path, error=TranscriptImportError)  # what replay accepts
        return out

    def _without_surrogates(self, value: Any) -> Any:
        """``value`` with each lone surrogate (half of a UTF-16 pair, e.g. an emoji a
        logger cut in two: ``"\\ud83d"``) replaced by U+FFFD, counted in ``skipped``.  Such
        text has no UTF-8 form: the transcript could not be written, stored or sent, and
        ``replay`` refuses it; an importer converts, so it repairs what it can."""
        if isinstance(value, str):
            if value.isascii():
                return value
            fixed, count = _SURROGATE.subn("\ufffd", value)
            if count:
                self.skipped[SURROGATES_REPLACED] += count
            return fixed
        if isinstance(value, dict):
            return {k: self._without_surrogates(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._without_surrogates(v) for v in value]
        return value
