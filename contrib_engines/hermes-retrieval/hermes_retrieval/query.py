"""Turning a turn's text into weighted search terms.

Exact identifiers — file paths, URLs, error class names, ``snake_case`` / ``CamelCase`` /
dotted symbols, hex ids, command-line flags, back-quoted code — say precisely what a turn
is about, so they weigh most.  Plain keywords are a weak signal and are searched together in
one query.  Text from the recent context (the few messages before the incoming one) counts
at a lower weight than the incoming message itself.

Terms are handed to ``HistoryReader.search`` as plain text: the store quotes every word before
it reaches FTS5, so nothing a user types — quotes, ``NEAR``, ``*``, parentheses, ``-`` — is
ever parsed as query syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SearchTerm", "extract_terms", "names_in"]

# Order matters: earlier kinds claim their text first, so a URL is not also mined for paths.
_PATTERNS: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    ("url", 3.0, re.compile(r"https?://[^\s<>\"'`)\]]+")),
    ("path", 3.0, re.compile(
        r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]*\w"          # dir/sub/file.ext, ./x/y
        r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|md|json|jsonl|ya?ml|toml|txt|cfg|ini"
        r"|rs|go|java|kt|c|h|cc|cpp|hpp|rb|ex|exs|sh|sql|html|css|lock)\b"
    )),
    ("error", 3.0, re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Failure)\b")),
    ("code", 2.5, re.compile(r"`([^`\n]{3,80})`")),
    ("hex", 2.5, re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
    ("flag", 2.0, re.compile(r"(?<![\w-])--[a-z][a-z0-9-]{2,}")),
    ("dotted", 2.0, re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")),
    ("snake", 2.0, re.compile(r"\b_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")),
    ("camel", 2.0, re.compile(r"\b(?:[A-Z][a-z0-9]+){2,}\b|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b")),
    ("quoted", 1.5, re.compile(r"\"([^\"\n]{8,120})\"")),
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")

_STOPWORDS = frozenset(
    """
    about above after again against also always another anything around because been before
    being below between both cannot could does doing done down during each either else
    every from further have having here hers into itself just last less like make many more
    most much must need never next none only other ours over same shall should since some
    still such than that their them then there these they thing things this those though
    through under until upon very want were what when where which while whom whose will
    with within without would your yours yourself okay please thanks thank sure good great
    think know let's lets look looks going use used using work works file files code line
    lines change changes make made try tried again show shows showing now can't don't
    """.split()
)


@dataclass(frozen=True)
class SearchTerm:
    """One thing to look for: ``text`` as typed, its ``kind`` and its ``weight``."""

    text: str
    kind: str
    weight: float


def _has_token(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _identifiers(text: str, weight_scale: float) -> list[SearchTerm]:
    found: list[SearchTerm] = []
    claimed = [False] * len(text)
    for kind, weight, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            group = 1 if pattern.groups else 0
            start, end = match.span(group)
            if any(claimed[start:end]):
                continue
            value = match.group(group).strip().rstrip(".,;:")
            if len(value) < 3 or not _has_token(value):
                continue
            for i in range(start, end):
                claimed[i] = True
            found.append(SearchTerm(value, kind, weight * weight_scale))
    return found


def _keywords(text: str) -> list[str]:
    words: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word not in _STOPWORDS and word not in words:
            words.append(word)
    return words


def extract_terms(
    incoming: str,
    recent: list[str],
    *,
    max_identifiers: int = 10,
    max_keywords: int = 6,
    keyword_weight: float = 0.75,
) -> tuple[list[SearchTerm], list[SearchTerm]]:
    """The identifier terms (strongest first) and the keyword terms of a turn.

    ``incoming`` is the new user message; ``recent`` the text of the messages just before it
    (newest first), whose identifiers and keywords count at half weight.
    """
    terms: dict[str, SearchTerm] = {}
    sources = [(incoming, 1.0)] + [(t, 0.5) for t in recent]
    for text, scale in sources:
        for term in _identifiers(text, scale):
            key = term.text.lower()
            if key not in terms or terms[key].weight < term.weight:
                terms[key] = term
    ranked = sorted(terms.values(), key=lambda t: (-t.weight, -len(t.text)))
    # Longer keywords are usually rarer and more telling; the incoming message's come first.
    keywords: dict[str, SearchTerm] = {}
    for text, scale in sources:
        for word in sorted(_keywords(text), key=len, reverse=True):
            if word not in keywords:
                keywords[word] = SearchTerm(word, "keyword", keyword_weight * scale)
    return ranked[:max_identifiers], list(keywords.values())[:max_keywords]


_NAME_KINDS = frozenset({"url", "path", "error", "hex", "dotted", "snake", "camel"})


def names_in(text: str) -> list[str]:
    """The exact names of ``text`` — paths, URLs, error classes, hex ids, dotted, snake_case
    and CamelCase symbols — in order of appearance, without duplicates."""
    seen: dict[str, None] = {}
    for term in _identifiers(text, 1.0):
        if term.kind in _NAME_KINDS and len(term.text) >= 4:
            seen.setdefault(term.text, None)
    return list(seen)
