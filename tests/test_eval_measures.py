"""In-context recall, precision, recall per 1,000 tokens and recall after the n-th
compression on small hand-computed examples (docs/evaluation.md, issue 14)."""

from __future__ import annotations

import pytest

from hermes_host.evaluation import (
    AFTER_NTH,
    BARE_LIST_MIN,
    EvalRun,
    PointRecall,
    artifact_in_context,
    needed_later_recall,
    summarise_runs,
)
from hermes_host.tokens import count_messages


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _a(text: str) -> dict:
    return {"role": "assistant", "content": text}


@pytest.mark.parametrize(
    ("artifact", "text", "expected"),
    [
        # prose around the name: in context
        ("src/app.py", "src/app.py fails on import", True),
        # four names with only ", " between them: a bare list, even behind a header
        ("src/app.py", "Names: a_one.py, b_two.py, c_three.py, src/app.py", False),
        # three in a row are a short enumeration, not a dump (BARE_LIST_MIN is 4)
        ("c_three.py", "Edited a_one.py, b_two.py and c_three.py", True),
        # "and" / "or", bullets, newlines and digits are list punctuation too
        ("d_four.py", "Edited a_one.py, b_two.py and c_three.py or d_four.py", False),
        ("src/app.py", "- a_one.py\n- b_two.py\n* c_three.py\n1. src/app.py", False),
        # a word between two names breaks the list: the second run has only 3
        ("src/app.py", "a_one.py, b_two.py, fixed c_three.py, d_four.py, src/app.py", True),
        # one occurrence with context is enough, wherever the bare list is
        ("src/app.py", "a_one.py, b_two.py, c_three.py, src/app.py\nThen src/app.py broke",
         True),
        # ... but a newline is list punctuation: without "Then" the second occurrence
        # continues the list (five in a row)
        ("src/app.py", "a_one.py, b_two.py, c_three.py, src/app.py\nsrc/app.py broke",
         False),
        # a path tail inside a listed longer path is only listed as well
        ("repomap.py", "aider/repomap.py, a_one.py, b_two.py, c_three.py", False),
        # not visible at all
        ("src/app.py", "nothing here", False),
    ],
)
def test_bare_list_is_not_context(artifact, text, expected):
    assert BARE_LIST_MIN == 4
    assert artifact_in_context(artifact, text) is expected


MESSAGES = [
    _u("open src/alpha_mod.py and src/beta_mod.py"),       # 0
    _a("AlphaParser lives in src/alpha_mod.py"),           # 1
    _u("also check gamma_helper"),                         # 2  --- compression at 3
    _a("gamma_helper is fine; back to src/alpha_mod.py"),  # 3
    _u("does AlphaParser still raise KeyError?"),          # 4
]
# History before 3 (the "listable" artifacts): src/alpha_mod.py, src/beta_mod.py,
# AlphaParser, gamma_helper.  Needed later (occur again in 3..4): src/alpha_mod.py,
# AlphaParser, gamma_helper — 3.  src/beta_mod.py is history nobody needs again.


def test_names_dump_has_full_recall_but_nothing_in_context():
    # Every history artifact, comma-separated: the old recall is fooled (3/3 = 1.0).
    # All four stand in one bare list, so none is in context: in-context recall 0/3,
    # recall per 1K tokens 0.  listed = 4 (all history), visible 3 → precision 3/4.
    dump = [_u("Names: src/alpha_mod.py, src/beta_mod.py, AlphaParser, gamma_helper")]
    (point,) = needed_later_recall(MESSAGES, [(3, dump)])
    assert (point.needed, point.visible, point.in_context, point.listed) == (3, 3, 0, 4)
    assert point.recall == 1.0
    assert point.in_context_recall == 0.0
    assert point.precision == 0.75
    assert point.recall_per_1k_tokens == 0.0
    assert point.tokens == count_messages(dump)


def test_prose_is_in_context_and_precise():
    # Two needed artifacts said something about (src/alpha_mod.py, gamma_helper), no
    # unneeded history: visible 2, in context 2, listed 2 → recall 2/3, in-context 2/3,
    # precision 2/2 = 1.0, per 1K = (2/3) / (tokens / 1000).
    prose = [_u("We fixed src/alpha_mod.py; gamma_helper checks the input.")]
    (point,) = needed_later_recall(MESSAGES, [(3, prose)])
    assert (point.needed, point.visible, point.in_context, point.listed) == (3, 2, 2, 2)
    assert point.recall == pytest.approx(2 / 3)
    assert point.in_context_recall == pytest.approx(2 / 3)
    assert point.precision == 1.0
    assert point.tokens == count_messages(prose)
    assert point.recall_per_1k_tokens == pytest.approx((2 / 3) * 1000 / point.tokens)
    d = point.as_dict()
    assert d["in_context"] == 2 and d["listed"] == 2 and d["precision"] == 1.0
    assert d["in_context_recall"] == round(2 / 3, 4)


def test_a_name_said_something_about_counts_even_if_also_listed():
    # AlphaParser has prose around it once; the index line lists all four (one bare list:
    # "Index" is a word, so the run starts after it and has 4 names).  visible 3 (all
    # needed), in context 1 (AlphaParser), listed 4 → in-context 1/3, precision 3/4.
    request = [_u("AlphaParser raised on empty input.\n"
                  "Index: src/alpha_mod.py, src/beta_mod.py, AlphaParser, gamma_helper")]
    (point,) = needed_later_recall(MESSAGES, [(3, request)])
    assert (point.visible, point.in_context, point.listed) == (3, 1, 4)
    assert point.in_context_recall == pytest.approx(1 / 3)
    assert point.precision == 0.75


def test_system_prompt_artifacts_are_not_listed_history():
    # src/beta_mod.py is in the system prompt: neither needed nor listed.  The request shows
    # it and src/alpha_mod.py → listed 1 (alpha), visible 1 → precision 1.0.
    request = [_u("src/beta_mod.py and src/alpha_mod.py are open")]
    (point,) = needed_later_recall(MESSAGES, [(3, request)], system_prompt="see src/beta_mod.py")
    assert (point.needed, point.visible, point.listed) == (3, 1, 1)
    assert point.precision == 1.0


def test_empty_request_has_no_precision():
    (point,) = needed_later_recall(MESSAGES, [(3, [_u("nothing to see")])])
    assert point.listed == 0 and point.precision is None
    assert point.in_context_recall == 0.0 and point.recall_per_1k_tokens == 0.0


def _p(needed: int, visible: int, in_context: int, listed: int, tokens: int) -> PointRecall:
    return PointRecall(10, 10, needed, visible, in_context=in_context, listed=listed,
                       tokens=tokens)


def _run(label: str, points: list[PointRecall]) -> EvalRun:
    return EvalRun(
        transcript="t.jsonl", engines=label, messages=10, turns=3, model_calls=1,
        tokens_per_call=[100], aux_llm_calls=0, compressions=len(points),
        compression_attempts=len(points), invariant_violations=0, points=points, seconds=0.1,
    )


def test_per_transcript_pooling_of_the_new_measures():
    # P1: needed 10, visible 8, in context 4, listed 16, 2,000 tokens
    # P2: needed 30, visible 12, in context 6, listed 24, 4,000 tokens
    # P3: needs nothing (left out of per-1K); listed 10, visible 0, 100,000 tokens
    run = _run("c", [_p(10, 8, 4, 16, 2000), _p(30, 12, 6, 24, 4000), _p(0, 0, 0, 10, 100_000)])
    # P1 alone: in-context 4/10 = 0.4 over 2 (thousand tokens) = 0.2; precision 8/16
    assert run.points[0].recall_per_1k_tokens == pytest.approx(0.2)
    assert run.points[0].precision == 0.5
    # pooled recall (8+12)/(10+30) = 0.5; in context (4+6)/40 = 0.25
    assert run.recall == 0.5 and run.in_context_recall == 0.25
    # precision pools every point with a listing: (8+12+0)/(16+24+10) = 20/50 = 0.4
    assert run.precision == 0.4
    # per 1K: 0.25 / mean tokens of the needy points (2000+4000)/2 = 3 thousand → 1/12
    assert run.recall_per_1k_tokens == pytest.approx(0.25 / 3)
    d = run.as_dict()
    assert d["in_context_recall"] == 0.25 and d["precision"] == 0.4
    assert d["recall_per_1k_tokens"] == round(0.25 / 3, 4)
    assert d["needed_later_recall"] == 0.5  # the old key, the old meaning


def test_recall_after_the_nth_compression_per_transcript_and_pooled():
    # Run A: 10 compressions; the n-th has needed 10 and visible 11 - n (10, 9, …, 1).
    a = _run("c", [_p(10, 11 - n, 0, 20, 1000) for n in range(1, 11)])
    # Run B: 5 compressions, needed 20 each; visible 16 at the 1st, 4 at the 5th.
    b = _run("c", [_p(20, v, 0, 20, 1000) for v in (16, 12, 10, 8, 4)])
    # Run C: 1 compression that needs nothing: no recall after the 1st (left out).
    c = _run("c", [_p(0, 0, 0, 5, 1000)])
    assert a.recall_after(1) == 1.0 and a.recall_after(5) == 0.6 and a.recall_after(10) == 0.1
    assert a.recall_after(25) is None
    assert b.recall_after(5) == 0.2 and b.recall_after(10) is None
    assert c.recall_after(1) is None
    assert a.as_dict()["recall_after_compression"] == {"1": 1.0, "5": 0.6, "10": 0.1, "25": None}
    assert AFTER_NTH == (1, 5, 10, 25)
    after = summarise_runs([a, b, c])["c"]["recall_after_compression"]
    # 1st: A 10/10 and B 16/20 → pooled 26/30; median of (1.0, 0.8) = 0.9
    assert after["1"]["transcripts"] == 2
    assert after["1"]["pooled_recall"] == round(26 / 30, 4)
    assert after["1"]["median_recall"] == 0.9
    # 5th: A 6/10, B 4/20 → pooled 10/30; the same two transcripts at their 1st: 26/30
    assert after["5"]["pooled_recall"] == round(10 / 30, 4)
    assert after["5"]["pooled_recall_after_1st_same_transcripts"] == round(26 / 30, 4)
    # 10th: only A (1/10); A at its 1st: 10/10 — the like-for-like ratio is 0.1
    assert after["10"]["transcripts"] == 1
    assert after["10"]["pooled_recall"] == 0.1
    assert after["10"]["pooled_recall_after_1st_same_transcripts"] == 1.0
    assert after["25"] == {
        "transcripts": 0, "pooled_recall": None, "median_recall": None,
        "pooled_in_context_recall": None, "pooled_recall_after_1st_same_transcripts": None,
    }


def test_overall_median_and_pooled_of_the_new_measures():
    # T1: needed 10, visible 10, in context 2, listed 40, 1,000 tokens
    #     → in-context 0.2, precision 0.25, per 1K 0.2
    # T2: needed 30, visible 15, in context 12, listed 20, 3,000 tokens
    #     → in-context 0.4, precision 0.75, per 1K 0.4/3
    # T3: no compression point: left out of every median
    runs = [_run("c", [_p(10, 10, 2, 40, 1000)]), _run("c", [_p(30, 15, 12, 20, 3000)]),
            _run("c", [])]
    row = summarise_runs(runs)["c"]
    assert row["median_in_context_recall"] == 0.3            # (0.2 + 0.4) / 2
    assert row["pooled_in_context_recall"] == 0.35           # 14 / 40
    assert row["median_precision"] == 0.5                    # (0.25 + 0.75) / 2
    assert row["pooled_precision"] == 0.4167                 # 25 / 60
    assert row["median_recall_per_1k_tokens"] == round((0.2 + 0.4 / 3) / 2, 4)
    # pooled: 14/40 over the mean request of 2,000 tokens = 0.35 / 2
    assert row["pooled_recall_per_1k_tokens"] == 0.175
    assert row["pooled_needed_later_recall"] == 0.625        # 25 / 40, the old key
