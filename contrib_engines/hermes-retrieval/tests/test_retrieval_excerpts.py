"""Excerpt trimming and novelty ranking on a real transcript (issue 14): an excerpt keeps the
lines that match the query or name something the window does not show, so a long tool output
brings back more of what the window lost per token than a fixed cut around the first hit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_host.messages import text_of
from hermes_host.transcripts import load_transcript
from hermes_retrieval.engine import _excerpt, _novel_names, _window_cut

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[3].parent / "shared" / "data" / "transcripts"
)
SESSION = TRANSCRIPTS / "claudecode-spotter-fa812bfe.jsonl"

pytestmark = pytest.mark.skipif(not SESSION.is_file(), reason=f"no transcript at {SESSION}")


def _long_outputs() -> list[str]:
    texts = [text_of(m) for m in load_transcript(SESSION).messages]
    return [t for t in texts if len(t) > 4000 and t.count("\n") > 40][:8]


def test_trimmed_excerpt_brings_more_unseen_names_than_a_fixed_cut() -> None:
    """Issue 14: against an empty-ish window, the trimmed excerpt of each long real output
    names at least as many things as the centred cut of the same size, and more in total;
    every kept line is a real line of the output."""
    outputs = _long_outputs()
    assert outputs, "the transcript has long tool outputs"
    visible = "unrelated window text"
    trimmed_total = cut_total = 0
    for text in outputs:
        trimmed = _excerpt(text, [], 1200, visible)
        cut = _window_cut(text, [], 1200)
        assert len(trimmed) <= 1200 + 40 * 3
        for line in trimmed.split("\n"):
            core = line.removesuffix(" …")
            assert core == "…" or core in text
        trimmed_total += len(_novel_names(trimmed, visible))
        cut_total += len(_novel_names(cut, visible))
    assert trimmed_total > cut_total


def test_names_the_window_shows_do_not_steer_the_trim() -> None:
    """Issue 14 (dedup against what is visible): when the window already shows every name
    of an output, the trim falls back to the lines matching the query term."""
    text = _long_outputs()[0]
    lines = text.split("\n")
    term_line = next(ln for ln in reversed(lines) if len(ln.split()) > 2)
    term = max(term_line.split(), key=len)
    excerpt = _excerpt(text, [term], 1200, visible=text)
    assert term.lower() in excerpt.lower()
    assert _novel_names(excerpt, text) == set()


def test_a_hit_the_window_shows_does_not_set_the_relevance_floor() -> None:
    """Issue 14: the window's own newest message often matches the turn's terms far better
    than any older one; the floor (``min_relative_score`` of the best hit) is taken from the
    best hit that could be sent, so older hits are not all dropped because of it."""
    from hermes_retrieval.engine import Retrieval
    from hermes_retrieval.excerpts import _norm
    from hermes_retrieval.search import _Candidate

    outputs = _long_outputs()
    in_window, older = outputs[0], outputs[1:4]
    window_texts = [_norm("the user asks about the parser"), _norm(in_window)]
    candidates = [
        _Candidate({"role": "tool", "content": in_window, "message_id": 1}, fused=20.0),
        *(_Candidate({"role": "tool", "content": t, "message_id": 2 + n, "active": False},
                     fused=2.0 - n * 0.1) for n, t in enumerate(older)),
    ]
    engine = Retrieval({"names_index": False})
    chosen, skipped, spent = engine._choose(candidates, window_texts, "\n".join(window_texts),
                                            3000)
    ids = [meta["message_id"] for _, meta in chosen]
    assert skipped >= 1 and 1 not in ids
    assert ids and set(ids) <= {2, 3, 4} and spent > 0
