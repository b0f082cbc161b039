"""The metric must not be gameable by a names dump (issue 14): on the real transcripts, at
three cut points of each, a request carrying every artifact seen so far, comma-separated,
scores worse on the new measures than a request of the same token size carrying the most
recent messages verbatim — although the old needed-later recall gives the dump 1.0."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_host.evaluation import (
    BARE_LIST_MIN,
    EvalRun,
    PointRecall,
    extract_artifacts,
    message_text,
    needed_later_recall,
)
from hermes_host.tokens import count_text
from hermes_host.transcripts import load_transcript

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"
)
FILES = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
CUTS = (0.25, 0.5, 0.75)

pytestmark = pytest.mark.skipif(
    not FILES, reason=f"no transcripts at {TRANSCRIPTS} (HERMES_HOST_TRANSCRIPTS)"
)


def _newest(text: str, tokens: int) -> str:
    """The longest tail of ``text`` within ``tokens`` tokens (the most recent messages
    verbatim, the oldest of them cut at the front)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if count_text(text[mid:]) > tokens:
            lo = mid + 1
        else:
            hi = mid
    return text[lo:]


def _pool(points: list[PointRecall]) -> EvalRun:
    """The points as one run, pooled the way ``hermes-host eval`` pools a transcript's."""
    return EvalRun(
        transcript="t", engines="e", messages=0, turns=0, model_calls=0, tokens_per_call=[],
        aux_llm_calls=0, compressions=len(points), compression_attempts=len(points),
        invariant_violations=0, points=points, seconds=0.0,
    )


def _dump_and_excerpt(path: Path) -> list[tuple[PointRecall, PointRecall]]:
    transcript = load_transcript(path)
    messages = transcript.messages
    system = transcript.system_prompt or ""
    fixed = extract_artifacts(system)
    pairs = []
    for cut in CUTS:
        point = int(len(messages) * cut)
        seen = set().union(*(extract_artifacts(message_text(m)) for m in messages[:point]))
        names = sorted(seen - fixed)
        if point < 2 or len(names) < BARE_LIST_MIN:
            continue
        dump = ", ".join(names)
        history = "\n".join(message_text(m) for m in messages[:point])
        excerpt = _newest(history, count_text(dump))
        pairs.append((point, dump, excerpt))
    results = needed_later_recall(
        messages,
        [(p, [{"role": "user", "content": text}]) for p, *texts in pairs for text in texts],
        system_prompt=system,
    )
    return list(zip(results[0::2], results[1::2], strict=True))


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_a_names_dump_scores_worse_than_excerpts_of_the_same_size(path: Path):
    cases = _dump_and_excerpt(path)
    assert cases, f"{path.name}: no cut point with history"
    for dump, excerpt in cases:
        # the same budget: the excerpt is never larger than the dump
        assert excerpt.tokens <= dump.tokens
        if not dump.needed:
            continue
        # the old metric is fooled: every needed name is "visible" in the dump ...
        assert dump.recall == 1.0
        # ... but none is said anything about: one bare list
        assert dump.in_context == 0 and dump.recall_per_1k_tokens == 0.0
        # the dump lists all history, so its precision is the base rate needed / seen
        assert dump.precision == dump.needed / dump.listed
    dumps, excerpts = _pool([d for d, _ in cases]), _pool([e for _, e in cases])
    assert dumps.recall == 1.0, "the old needed-later recall prefers the dump"
    assert dumps.recall_per_1k_tokens == 0.0
    assert excerpts.recall_per_1k_tokens is not None and excerpts.recall_per_1k_tokens > 0
    assert dumps.precision is not None and excerpts.precision is not None
    assert excerpts.precision > dumps.precision
