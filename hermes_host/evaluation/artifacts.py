"""The artifacts of a text — file paths, identifiers, error class names, URLs, hex ids:
the concrete things an agent must not forget — and whether one is visible in a request, and
visible outside a bare list of names."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

from hermes_host.messages import text_of
from hermes_host.models import Message

_EXTENSIONS = (
    "py|pyi|pyx|js|jsx|mjs|ts|tsx|md|rst|json|jsonl|ya?ml|toml|txt|cfg|ini|conf|rs|go|java|kt"
    "|c|h|cc|cpp|hpp|rb|ex|exs|erl|sh|bash|sql|html|css|scss|lock|xml|csv|ipynb|pony|heex|eex"
)
# Kinds in claiming order: a URL's text is not mined again for paths, a path's not for names.
_ARTIFACT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+")),
    (
        "path",
        re.compile(
            r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.(?:" + _EXTENSIONS + r")\b"
            r"|(?<![\w/.-])[\w-]+\.(?:" + _EXTENSIONS + r")\b"
        ),
    ),
    ("error", re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b")),
    (
        "hex",
        re.compile(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
            r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
        ),
    ),
    (
        "camel",
        re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+\b"),
    ),
    ("snake", re.compile(r"\b_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}\b")),
)
_MIN_LEN = 4
_ESCAPE = re.compile(r"\\[nrt]")


def _unescaped(text: str) -> str:
    """``text`` with the escape sequences ``\\n``, ``\\r``, ``\\t`` of JSON and quoted
    strings (a tool call's arguments, a tool's JSON output) read as the whitespace they stand
    for, length kept: ``"…\\nApply the fix"`` holds no name ``nApply``, and ``"\\nfoo_bar"``
    holds ``foo_bar``."""
    return _ESCAPE.sub("  ", text) if "\\" in text else text


def _artifact_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, artifact)`` of every artifact occurrence of ``text`` (already
    :func:`_unescaped`), in text order."""
    spans: list[tuple[int, int, str]] = []
    if not text:
        return spans
    claimed = bytearray(len(text))
    for kind, pattern in _ARTIFACT_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if claimed.find(1, start, end) >= 0:
                continue
            value = match.group(0)
            if kind == "url":
                value = value.rstrip(".,;:!?")
            elif kind == "path" and value.startswith("./"):
                value = value[2:]
            if len(value) < _MIN_LEN:
                continue
            claimed[start:end] = b"\x01" * (end - start)
            spans.append((start, end, value))
    spans.sort()
    return spans


def extract_artifacts(text: str) -> set[str]:
    """The artifacts of ``text`` (see the module docstring), exactly as written.

    Paths lose a leading ``./``; URLs lose trailing punctuation; anything shorter than four
    characters is ignored (``a_b`` is not a fact worth remembering).
    """
    return {value for _, _, value in _artifact_spans(_unescaped(text))}


def message_text(message: Message) -> str:
    """Everything of ``message`` a model reads: content and tool-call names and arguments."""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def agent_text(message: Message) -> str:
    """What the agent itself wrote in ``message``: for an assistant message its content and
    its tool calls' arguments (not the tool names: calling ``bash`` names no artifact); for
    any other message (user, tool output, system) nothing.  The "agent names it again" rule
    of needed-later recall reads only this."""
    if message.get("role") != "assistant":
        return ""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            arguments = fn.get("arguments", "") if isinstance(fn, dict) else ""
            parts.append(arguments if isinstance(arguments, str) else str(arguments))
    return "\n".join(p for p in parts if p)


def _whole_token(artifact: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(artifact) + r"(?![A-Za-z0-9_])")


def artifact_visible(artifact: str, text: str) -> bool:
    """True when ``artifact`` occurs in ``text`` as a whole token (a path may be the tail of a
    longer path: ``repomap.py`` is visible in ``aider/repomap.py``)."""
    return _occurs(artifact, _unescaped(text))


def _occurs(artifact: str, text: str) -> bool:
    """:func:`artifact_visible` on a text already :func:`_unescaped` (done once per text)."""
    start = text.find(artifact)
    if start < 0:
        return False
    return _whole_token(artifact).search(text, start) is not None


_WORD_PIECE = re.compile(r"[A-Za-z0-9_]+")


def _visible(candidates: Iterable[str], text: str) -> set[str]:
    """``{a for a in candidates if artifact_visible(a, text)}``, fast for many candidates.

    A whole-token occurrence makes every ``[A-Za-z0-9_]`` run of the artifact a whole run of
    the text, so a candidate with a run the text lacks is skipped without a search."""
    text = _unescaped(text)
    pieces = set(_WORD_PIECE.findall(text))
    return {
        a for a in candidates
        if all(p in pieces for p in _WORD_PIECE.findall(a)) and _occurs(a, text)
    }


# A names list: artifacts with only list punctuation (or "and" / "or") between them.
_LIST_GAP = re.compile(r"(?:[\s,;|\"'`*•·.\d\-]|\band\b|\bor\b)*", re.IGNORECASE)
BARE_LIST_MIN = 4
"""Artifacts in a row, with nothing but list punctuation between them, that make a bare list."""


def _bare_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s artifact occurrences that stand in a *bare list*: a run of at
    least :data:`BARE_LIST_MIN` artifacts separated only by whitespace, ``, ; |``, quotes,
    bullets, digits, dots, hyphens and the words "and" / "or" — a names dump, an index of
    names, an ``ls`` listing.  Sorted by start.  ``text`` is already :func:`_unescaped`."""
    spans = _artifact_spans(text)
    bare: list[tuple[int, int]] = []
    run: list[tuple[int, int]] = []
    for start, end, _ in spans:
        if run and _LIST_GAP.fullmatch(text, run[-1][1], start) is None:
            if len(run) >= BARE_LIST_MIN:
                bare.extend(run)
            run = []
        run.append((start, end))
    if len(run) >= BARE_LIST_MIN:
        bare.extend(run)
    return bare


def _in_context(candidates: Iterable[str], text: str) -> set[str]:
    """The candidates (already known visible in ``text``) with at least one whole-token
    occurrence outside a bare list (:func:`_bare_spans`)."""
    return _in_context_of(candidates, _unescaped(text))


def _in_context_of(candidates: Iterable[str], text: str) -> set[str]:
    bare = _bare_spans(text)
    starts = [s for s, _ in bare]
    found: set[str] = set()
    for artifact in candidates:
        for match in _whole_token(artifact).finditer(text):
            at = bisect.bisect_right(starts, match.start()) - 1
            if at < 0 or match.end() > bare[at][1]:
                found.add(artifact)
                break
    return found


def artifact_in_context(artifact: str, text: str) -> bool:
    """True when ``artifact`` is visible in ``text`` (:func:`artifact_visible`) at least once
    outside a bare list of names: ``"src/app.py fails on import"`` shows ``src/app.py`` in
    context, ``"a.py, b.py, c.py, src/app.py"`` only lists it."""
    plain = _unescaped(text)
    return _occurs(artifact, plain) and bool(_in_context_of([artifact], plain))
