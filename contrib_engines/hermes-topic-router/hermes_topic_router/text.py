"""Lexical topic profiles: tokens, TF-IDF weights and cosine similarity.

Deliberately small and deterministic: no model, no download, the same answer on every
machine, and a profile that serialises to plain JSON (term → count) for the engine's state.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

__all__ = ["cosine", "names", "tfidf", "tokens"]

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

_STOPWORDS = frozenset(
    """
    the and for are but not you your yours with this that these those from have has had was
    were will would could should can cannot can't don't does did doing done into onto over
    under than then them they their there here what when where which while who whom whose
    why how all any each every some such only own same also just very too more most much
    many other another again about above below after before because been being between both
    during further once out off our ours its it's his her hers him she he we us let lets
    let's okay yes yeah sure please thanks thank now still need want like make made use used
    using get got put see try tried think know look looks going way ways thing things one
    two able sorry hello hi hey fine good great well really maybe might must shall per via
    """.split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased content words of ``text``; ``snake_case`` also yields its parts."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        word = match.group(0).lower().strip("_")
        if len(word) < 3 or word in _STOPWORDS:
            continue
        out.append(word)
        if "_" in word:
            out.extend(p for p in word.split("_") if len(p) >= 3 and p not in _STOPWORDS)
    return out


def tfidf(
    counts: Mapping[str, float], df: Mapping[str, int], n_docs: int
) -> dict[str, float]:
    """Sublinear TF × smoothed IDF, L2-normalised."""
    weights: dict[str, float] = {}
    for term, tf in counts.items():
        if tf <= 0:
            continue
        idf = math.log((1 + n_docs) / (1 + df.get(term, 0))) + 1.0
        weights[term] = (1.0 + math.log(tf)) * idf
    norm = math.sqrt(sum(w * w for w in weights.values()))
    if norm == 0:
        return {}
    return {t: w / norm for t, w in weights.items()}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Dot product of two L2-normalised sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b.get(t, 0.0) for t, w in a.items())


def count(words: Iterable[str]) -> Counter[str]:
    return Counter(words)


_NAME = re.compile(
    r"\bhttps?://[^\s<>\"'`)\]}]+"  # URLs (a docs page, an issue)
    r"|(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,5}\b"  # dir/file.ext
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx|md|json|ya?ml|toml|rs|go|rb|ex|exs|sh|css|html)\b"
    r"|\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b"  # error classes
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"  # CamelCase
    r"|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+\b"  # camelCase (assertIsNone, useEffect)
    r"|\b_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}\b"  # snake_case
    # commit hashes and UUIDs: 7-40 hex digits with at least one digit and one letter
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
)


def names(text: str) -> list[str]:
    """The names of ``text`` a later turn may refer back to, in order: URLs, file paths,
    error classes, CamelCase / camelCase / snake_case symbols, commit hashes and UUIDs."""
    out: list[str] = []
    for match in _NAME.finditer(text):
        name = match.group(0)
        if name.startswith("http"):
            name = name.rstrip(".,;:!?")
        if len(name) >= 4:
            out.append(name)
    return out
