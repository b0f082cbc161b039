"""What the router reads of a message: redacted first (its state is persisted, so term
profiles, labels, digests and the note's names never hold a secret, R-7.1) and bounded."""

from __future__ import annotations

import functools

from hermes_host.redact import REDACTED, redact
from hermes_topic_router.text import names

__all__ = ["REPLY_CHARS", "TOOL_CHARS", "message_names", "redacted", "redacted_head"]

REPLY_CHARS = 6000  # of one turn's replies folded into its topic's profile
TOOL_CHARS = 300  # of each tool output (mostly noise for topic vocabulary)
_REDACTED_STEM = REDACTED.rstrip("]")  # a name cut at the marker's "]" (a URL)
_REDACT_MARGIN = 512  # redacted past a cut, so a secret straddling it is still recognised


@functools.lru_cache(maxsize=1024)
def redacted(text: str) -> str:
    """Everything the router keeps (term profiles, labels, digests) comes from redacted text:
    its state is persisted.  Cached: one request is read by several steps of a turn."""
    return redact(text)


def redacted_head(text: str, limit: int) -> str:
    """The first ``limit`` chars of ``text``, redacted *before* the cut."""
    return redact(text[: limit + _REDACT_MARGIN])[:limit]


@functools.lru_cache(maxsize=4096)
def message_names(text: str) -> frozenset[str]:
    """The names one message mentions.  Left-out turns are the same messages turn after turn,
    so this is cached by text (it depends on nothing else).  Names come from the redacted
    text: a bare hex id is a commit hash or the value of an ``API_KEY=`` line, and only the
    line's context tells which."""
    return frozenset(n for n in names(redact(text)) if _REDACTED_STEM not in n)
