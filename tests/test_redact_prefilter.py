"""The prefilter of :func:`redact_counted` only skips texts no pass would change (R-7.1).

``redact_counted`` first asks ``might_change`` (two scans) and runs the ~90 passes only when
it says yes; issue 15 needs this, as most texts of a long session hold no secret.  Skipping
a text the passes would change is a leak, so every text here is redacted both ways (with the
prefilter, and by every pass without it) and must come out the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_helpers import load_transcript, transcript_params, transcript_texts
from secret_forms import FORMS, NEGATIVES

from hermes_host.redact.passes import _all_passes, might_change, redact_counted
from hermes_host.testing.secrets_corpus import secret_corpus


def _unfiltered(text: str) -> tuple[str, int]:
    return _all_passes(text, text.lower()) if text else (text, 0)


SECRET_TEXTS = [f.text for f in FORMS] + [text for text, _ in secret_corpus()] + [
    text for text, _ in secret_corpus(seed=7)
]


def test_every_secret_text_passes_the_prefilter_r7_1() -> None:
    assert len(SECRET_TEXTS) > 300
    changed = 0
    for text in SECRET_TEXTS:
        full = _unfiltered(text)
        if full[0] != text:
            changed += 1
            assert might_change(text), text
        assert redact_counted(text) == full, text
    assert changed == len(SECRET_TEXTS)  # every one of them holds a secret


@pytest.mark.parametrize("case", ["upper", "title", "swap"])
def test_case_variants_of_secret_texts_redact_the_same_r7_1(case: str) -> None:
    for text in SECRET_TEXTS:
        variant = getattr(text, case if case != "swap" else "swapcase")()
        assert redact_counted(variant) == _unfiltered(variant), variant


def test_look_alikes_and_plain_text_are_skipped_unchanged_r7_1() -> None:
    for _, text in NEGATIVES:
        assert redact_counted(text) == _unfiltered(text)
    plain = "ran the tests: 14 passed in 0.31s; next, read src/app/models.py lines 1-80"
    assert not might_change(plain)
    assert redact_counted(plain) == (plain, 0)


@pytest.mark.parametrize("path", transcript_params())
def test_real_transcript_texts_redact_the_same_r7_1(path: Path) -> None:
    texts = transcript_texts(load_transcript(path))
    for text in texts:
        assert redact_counted(text) == _unfiltered(text)


_FRAGMENTS = st.sampled_from([f.text for f in FORMS] + [t for _, t in NEGATIVES])


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=40),
    fragment=_FRAGMENTS,
    cut=st.integers(min_value=0, max_value=400),
    after=st.text(max_size=40),
)
def test_pieces_of_secret_forms_in_any_text_redact_the_same_r7_1(
    before: str, fragment: str, cut: int, after: str
) -> None:
    # a form cut short or glued into arbitrary text: the prefilter may not miss what the
    # passes would find in it
    text = before + fragment[: cut or None] + after
    assert redact_counted(text) == _unfiltered(text)
