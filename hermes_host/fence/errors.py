"""Error text of a fenced call: the plugin's message without the request's contents.

Text found in the request is redacted from exception messages, then
:func:`hermes_host.redact.redact` removes anything that looks like a credential, and the
text is bounded (300 characters; a logged traceback keeps its last 4,000).
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from hermes_host.fence.snapshot import _PLAIN_TYPES
from hermes_host.redact import redact

__all__ = ["MAX_ERROR_CHARS", "redact_request_text", "traceback_text"]

MAX_ERROR_CHARS = 300
MAX_TRACEBACK_CHARS = 4_000  # the tail of a logged traceback (the frames nearest the raise)


def _request_strings(request: BaseModel) -> list[str]:
    """Every string leaf of the request's plain data (for redacting error messages)."""
    found: list[str] = []

    def walk(value: Any, depth: int) -> None:
        if depth > 50:
            return
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, BaseModel):
            for item in value.__dict__.values():
                walk(item, depth + 1)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(key, depth + 1)
                walk(item, depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item, depth + 1)

    for value in request.__dict__.values():
        if isinstance(value, _PLAIN_TYPES):
            walk(value, 0)
    return found


_WORD = re.compile(r"[^\s'\"`,;()\[\]{}<>]+")
_REDACTED = "[redacted]"


def redact_request_text(text: str, request: BaseModel, limit: int = MAX_ERROR_CHARS) -> str:
    """Remove request text from an exception message: whole string leaves of 6+ characters,
    and any long word (12+ chars, or 8+ with a digit — keys and tokens look like that) that
    occurs anywhere in the request; then credentials (:func:`hermes_host.redact.redact`).
    The result has at most ``limit`` characters."""
    text = text[: limit * 4]  # bound the work: an exception may quote megabytes
    leaves = sorted({s for s in _request_strings(request) if len(s) >= 6}, key=len, reverse=True)
    for leaf in leaves:
        if leaf in text:
            text = text.replace(leaf, _REDACTED)
    haystack = "\n".join(leaves)

    def word(match: re.Match[str]) -> str:
        token = match.group(0)
        secretish = len(token) >= 12 or (len(token) >= 8 and any(c.isdigit() for c in token))
        return _REDACTED if secretish and token != _REDACTED and token in haystack else token

    text = redact(_WORD.sub(word, text))
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def traceback_text(exc: BaseException, request: BaseModel) -> str:
    """``exc``'s traceback for the log: redacted like its message, the tail kept."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # an exception whose __str__ raises, a broken frame
        return f"(no traceback: {type(exc).__name__} could not be formatted)"
    if len(text) > MAX_TRACEBACK_CHARS * 4:
        text = text[-MAX_TRACEBACK_CHARS * 4 :]
    text = redact_request_text(text, request, limit=MAX_TRACEBACK_CHARS * 4)
    return text if len(text) <= MAX_TRACEBACK_CHARS else "..." + text[-MAX_TRACEBACK_CHARS:]

