"""Excerpt text: redaction in batches, normalised digests, and trimming a stored message to
the lines that matter (matched terms, names the window no longer shows)."""

from __future__ import annotations

import hashlib

from hermes_host.redact import REDACTED, redact
from hermes_retrieval.query import names_in

_REDACT_MARGIN = 512  # redacted past a cut, so a secret straddling it is still recognised
_REDACTED_STEM = REDACTED.rstrip("]")  # a name cut at the marker's "]" (a URL)
_LINE_CHARS = 240  # an excerpt line longer than this is cut


_SEP = "\n\x00\n"  # between texts redacted together: no rule matches across it
_BATCH = 256


def _redact_many(texts: list[str]) -> list[str]:
    """``[redact(t) for t in texts]``, a batch at a time: one call per batch instead of one
    per (mostly short) message.  A batch whose separators did not survive (a match spanning
    two texts) is redacted text by text."""
    out: list[str] = []
    for i in range(0, len(texts), _BATCH):
        batch = texts[i : i + _BATCH]
        parts = redact(_SEP.join(batch)).split(_SEP)
        out.extend(parts if len(parts) == len(batch) else (redact(t) for t in batch))
    return out


def _redacted_head(text: str, limit: int) -> str:
    """The first ``limit`` chars of ``text``, redacted *before* the cut: cut first, a token
    loses the end that makes it recognisable (or a bare value the line that names it)."""
    return redact(text[: limit + _REDACT_MARGIN])[:limit]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _digest(text: str) -> str:
    return hashlib.blake2b(_norm(text).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _novel_names(text: str, visible: str) -> set[str]:
    """The names of ``text`` (paths, symbols, errors …) that ``visible`` does not contain."""
    return {n for n in names_in(text) if n not in visible}


def _excerpt(content: str, terms: list[str], limit: int, visible: str = "") -> str:
    """At most ``limit`` chars of ``content``: the lines that match a term or name something
    ``visible`` (the window) does not show, with one line of context each, in their order;
    gaps are marked ``…``.  Text without such lines is cut around the first matched term."""
    text = content.strip()
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    lowered = [ln.lower() for ln in lines]
    wanted = [t.lower() for t in terms]
    scores = []
    for raw, low in zip(lines, lowered, strict=True):
        hit = any(t in low for t in wanted)
        novel = len(_novel_names(raw[:_LINE_CHARS], visible)) if visible else 0
        scores.append(3.0 * hit + min(novel, 4))
    if len(lines) < 3 or not any(scores):
        return _window_cut(text, terms, limit)
    keep: set[int] = set()
    size = 0
    for i in sorted(range(len(lines)), key=lambda i: (-scores[i], i)):
        if scores[i] <= 0:
            break
        for j in (i, i - 1, i + 1):
            if 0 <= j < len(lines) and j not in keep:
                step = min(len(lines[j]), _LINE_CHARS) + 1
                if size + step > limit:
                    continue
                keep.add(j)
                size += step
        if size >= limit:
            break
    if not keep:
        return _window_cut(text, terms, limit)
    out: list[str] = []
    last = -1
    for j in sorted(keep):
        if j != last + 1:
            out.append("…")
        line = lines[j]
        out.append(line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + " …")
        last = j
    if last != len(lines) - 1:
        out.append("…")
    return "\n".join(out)


def _window_cut(content: str, terms: list[str], limit: int) -> str:
    """At most ``limit`` chars of ``content``, centred on the first matched term."""
    if len(content) <= limit:
        return content.strip()
    lowered = content.lower()
    positions = [p for p in (lowered.find(t.lower()) for t in terms) if p >= 0]
    at = min(positions) if positions else 0
    start = max(0, min(at - limit // 3, len(content) - limit))
    piece = content[start : start + limit].strip()
    prefix = "… " if start > 0 else ""
    suffix = " …" if start + limit < len(content) else ""
    return f"{prefix}{piece}{suffix}"
