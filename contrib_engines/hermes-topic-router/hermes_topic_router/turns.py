"""A window as segments: the pinned head, the compaction summary, and turns (a user request
and everything up to the next one), each turn with a key that recognises it across calls."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from hermes_host.messages import is_summary, strip_reference_blocks, text_of
from hermes_host.models import Message

__all__ = ["Segment", "SegmentKind", "split_turns"]

SegmentKind = Literal["head", "summary", "turn"]


@dataclass
class Segment:
    """A run of window messages ``[start, end)``: the pinned head, a summary, or a turn."""

    kind: SegmentKind
    start: int
    end: int
    key: str = ""
    request: str = ""


def _turn_key(previous: str, text: str) -> str:
    """Identifies a turn across calls: its request and the request before it ("/undo" and
    "do that" recur, a pair of them rarely does)."""
    norm = " ".join(previous.split()) + "\x1e" + " ".join(text.split())
    return hashlib.blake2b(norm.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _starts_turn(message: Message) -> bool:
    # Every user message opens a turn: in a window the host normalised, console echoes
    # (aider's "aider_console" lines) are merged with the request next to them anyway.
    return bool(message.get("role") == "user")


def split_turns(messages: list[Message]) -> list[Segment]:
    """Split a window into head, summary and turn segments, in order.

    A turn's request text is its first message without any turn-scoped block an earlier
    engine in the chain prepended, so the turn is recognised again on the next call.
    """
    segments: list[Segment] = []
    for i, message in enumerate(messages):
        if i == 0 and message.get("role") == "system":
            segments.append(Segment("head", 0, 1))
        elif is_summary(message):
            segments.append(Segment("summary", i, i + 1))
        elif _starts_turn(message):
            text = strip_reference_blocks(text_of(message))
            segments.append(Segment("turn", i, i + 1, "", text))
        elif segments:
            segments[-1].end = i + 1
        else:
            segments.append(Segment("head", i, i + 1))
    previous = ""
    for seg in (s for s in segments if s.kind == "turn"):
        seg.key = _turn_key(previous, seg.request)
        previous = seg.request
    return segments
