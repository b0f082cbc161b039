"""The second rule of needed-later recall, "the agent names it again" (issue 28,
docs/evaluation.md): an artifact of the history counts as needed later only when a later
*assistant* message names it in its own text or tool-call arguments — not when it merely
recurs in a later tool output or user message (which the original "any occurrence" rule
counts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hermes_host.evaluation import (
    AFTER_NTH,
    EvalRun,
    PointRecall,
    agent_text,
    extract_artifacts,
    message_text,
    needed_later_recall,
    needed_later_sets,
    summarise_runs,
)
from hermes_host.transcripts import load_transcript

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"
)
FILES = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _call(name: str, arguments: dict, content: str | None = None, cid: str = "c1") -> dict:
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": cid, "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def _tool(text: str, cid: str = "c1") -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text}


# History (before the compression at 3): src/alpha_mod.py, read_file (a tool name),
# src/gamma_mod.py, KeyError, beta_helper.
MESSAGES = [
    _u("fix the crash in src/alpha_mod.py"),                                      # 0
    _call("read_file", {"path": "src/alpha_mod.py"}),                             # 1
    _tool("src/alpha_mod.py calls beta_helper from src/gamma_mod.py: KeyError"),  # 2
    # --- compression at 3 ---
    # the agent names alpha (tool-call argument) and beta_helper (escaped JSON argument);
    # it calls read_file again, but a tool name is not something the agent names
    _call("read_file", {"path": "src/alpha_mod.py", "grep": "\nbeta_helper"}, cid="c2"),  # 3
    _tool("src/gamma_mod.py: 3 matches", cid="c2"),                               # 4: gamma
    _u("is the KeyError gone?"),                                                  # 5: KeyError
]


def test_agent_text_is_an_assistant_messages_content_and_arguments_only():
    message = _call("read_file", {"path": "src/alpha_mod.py"}, content="Reading alpha_helper")
    assert extract_artifacts(agent_text(message)) == {"src/alpha_mod.py", "alpha_helper"}
    # the tool name is in what a model reads (message_text), not in what the agent named
    assert "read_file" in extract_artifacts(message_text(message))
    assert agent_text(_tool("src/alpha_mod.py")) == ""
    assert agent_text(_u("src/alpha_mod.py")) == ""
    assert agent_text({"role": "system", "content": "src/alpha_mod.py"}) == ""


def test_repeated_only_in_a_later_tool_output_counts_only_under_the_old_rule():
    ((history, needed, needed_agent),) = needed_later_sets(MESSAGES, [3])
    assert history == {"src/alpha_mod.py", "read_file", "beta_helper", "src/gamma_mod.py",
                       "KeyError"}
    # any later occurrence: gamma (tool output 4), KeyError (user 5), read_file (tool name
    # of 3), alpha and beta_helper (arguments of 3)
    assert needed == history
    # the agent names again only alpha and beta_helper, both in tool-call arguments
    assert needed_agent == {"src/alpha_mod.py", "beta_helper"}
    assert "src/gamma_mod.py" in needed and "src/gamma_mod.py" not in needed_agent
    assert "KeyError" in needed and "KeyError" not in needed_agent


def test_named_in_a_later_tool_call_argument_counts_under_both_rules():
    # The summary shows gamma (tool output only) and alpha (named in an argument later).
    summary = [_u("Summary: src/alpha_mod.py crashed; src/gamma_mod.py was grepped.")]
    (point,) = needed_later_recall(MESSAGES, [(3, summary)])
    assert (point.needed, point.visible, point.in_context) == (5, 2, 2)
    assert (point.needed_agent, point.visible_agent, point.in_context_agent) == (2, 1, 1)
    assert point.recall == pytest.approx(2 / 5)
    assert point.recall_agent == pytest.approx(1 / 2)
    assert point.in_context_recall_agent == pytest.approx(1 / 2)
    # a request showing only what the agent never names again: the old rule still gives
    # it credit, the agent rule none
    gamma_only = [_u("src/gamma_mod.py had 3 matches; KeyError was raised.")]
    (point,) = needed_later_recall(MESSAGES, [(3, gamma_only)])
    assert point.recall == pytest.approx(2 / 5)
    assert point.recall_agent == 0.0
    d = point.as_dict()
    assert d["needed_agent"] == 2 and d["visible_agent"] == 0 and d["recall_agent"] == 0.0
    assert d["needed"] == 5 and d["recall"] == 0.4  # the old keys keep their meaning


def test_named_in_a_later_assistant_text_counts_and_a_system_prompt_artifact_never():
    messages = [
        _u("look at RepoMapper and src/alpha_mod.py"),
        _tool("RepoMapper.build() ok"),
        {"role": "assistant", "content": "RepoMapper is in src/alpha_mod.py, fine."},
    ]
    ((_, needed, needed_agent),) = needed_later_sets(messages, [2])
    assert needed == needed_agent == {"RepoMapper", "src/alpha_mod.py"}
    ((_, needed, needed_agent),) = needed_later_sets(
        messages, [2], system_prompt="the repo has src/alpha_mod.py"
    )
    assert needed == needed_agent == {"RepoMapper"}
    # nothing needed under either rule when the agent names nothing later
    ((_, needed, needed_agent),) = needed_later_sets(messages[:2], [1])
    assert needed == {"RepoMapper"} and needed_agent == set()


def _p(needed: int, visible: int, needed_agent: int, visible_agent: int,
       in_context_agent: int = 0) -> PointRecall:
    return PointRecall(10, 10, needed, visible, in_context=0, listed=needed, tokens=1000,
                       needed_agent=needed_agent, visible_agent=visible_agent,
                       in_context_agent=in_context_agent)


def _run(points: list[PointRecall]) -> EvalRun:
    return EvalRun(
        transcript="t.jsonl", engines="c", messages=10, turns=3, model_calls=1,
        tokens_per_call=[100], aux_llm_calls=0, compressions=len(points),
        compression_attempts=len(points), invariant_violations=0, points=points, seconds=0.1,
    )


def test_run_and_overall_figures_under_the_agent_rule():
    # Run A, 10 compressions: any rule needed 10, visible 10 at the 1st, 5 at the 10th;
    # agent rule needed 4, visible 4 at the 1st, 3 at the 10th (in context 2 everywhere).
    a = _run([_p(10, 10 if n == 1 else 5, 4, 4 if n == 1 else 3, 2) for n in range(1, 11)])
    # Run B, 1 compression that needs something under the old rule only.
    b = _run([_p(8, 2, 0, 0)])
    assert a.recall_after(1) == 1.0 and a.recall_after(10) == 0.5
    assert a.recall_after_agent(1) == 1.0 and a.recall_after_agent(10) == 0.75
    assert b.recall_after(1) == 0.25 and b.recall_after_agent(1) is None
    assert b.recall_agent is None and b.in_context_recall_agent is None
    # pooled over A's points: (4 + 9*3) / 40 = 31/40; in context 20/40
    assert a.recall_agent == pytest.approx(31 / 40)
    assert a.in_context_recall_agent == 0.5
    d = a.as_dict()
    assert d["needed_later_recall_agent"] == 0.775 and d["in_context_recall_agent"] == 0.5
    assert d["recall_after_compression_agent"] == {"1": 1.0, "5": 0.75, "10": 0.75, "25": None}
    assert d["in_context_recall_after_compression_agent"]["10"] == 0.5
    assert d["recall_after_compression"] == {"1": 1.0, "5": 0.5, "10": 0.5, "25": None}
    assert d["needed_later_recall"] == round(55 / 100, 4)  # the old key, the old meaning

    row = summarise_runs([a, b])["c"]
    # old rule: B reaches its 1st compression (needs 8), agent rule: B needs nothing there
    assert row["recall_after_compression"]["1"]["transcripts"] == 2
    assert row["recall_after_compression"]["1"]["pooled_recall"] == round(12 / 18, 4)
    after = row["recall_after_compression_agent"]
    assert set(after) == {str(n) for n in AFTER_NTH}
    assert after["1"]["transcripts"] == 1 and after["1"]["pooled_recall"] == 1.0
    assert after["10"] == {
        "transcripts": 1, "pooled_recall": 0.75, "median_recall": 0.75,
        "pooled_in_context_recall": 0.5, "pooled_recall_after_1st_same_transcripts": 1.0,
    }
    assert row["transcripts_with_recall_agent"] == 1
    assert row["pooled_needed_later_recall_agent"] == 0.775
    assert row["median_needed_later_recall_agent"] == 0.775
    assert row["pooled_in_context_recall_agent"] == 0.5
    # 10th ÷ 1st: agent rule 0.75 / 1.0 (A is the only run either way)
    assert row["recall_10th_over_1st_agent"] == {"all_transcripts": 0.75,
                                                 "same_transcripts": 0.75}
    # old rule: 0.5 over all runs' 1st (12/18) and over A's own 1st (1.0)
    assert row["recall_10th_over_1st"] == {"all_transcripts": round(0.5 / round(12 / 18, 4), 4),
                                           "same_transcripts": 0.5}
    assert row["pooled_needed_later_recall"] == round((55 + 2) / 108, 4)  # old key


@pytest.mark.skipif(not FILES, reason=f"no transcripts at {TRANSCRIPTS} (HERMES_HOST_TRANSCRIPTS)")
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_agent_rule_needed_set_is_a_subset_at_every_point_of_a_real_transcript(path: Path):
    transcript = load_transcript(path)
    messages = transcript.messages
    cuts = list(range(1, len(messages)))
    sets = needed_later_sets(messages, cuts, system_prompt=transcript.system_prompt or "")
    for cut, (history, needed, needed_agent) in zip(cuts, sets, strict=True):
        assert needed_agent <= needed <= history, (
            f"{path.name} at {cut}: agent-only {sorted(needed_agent - needed)[:5]}"
        )
    # where a later assistant message names a history artifact, both rules need it
    agents = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if agents and agents[-1] > 0:
        last = agents[-1]
        ((history, needed, needed_agent),) = needed_later_sets(
            messages, [last], system_prompt=transcript.system_prompt or ""
        )
        named = extract_artifacts(agent_text(messages[last])) & history
        assert named <= needed_agent <= needed


@pytest.mark.skipif(
    not (TRANSCRIPTS / "claudecode-spotter-fa812bfe.jsonl").is_file(),
    reason=f"claudecode-spotter-fa812bfe.jsonl not found in {TRANSCRIPTS}",
)
def test_a_directory_listing_run_again_is_needed_only_under_the_old_rule():
    """The session behind the 32K decay figure (docs/evaluation.md): an ``ls`` of
    node_modules the agent ran again later.  Its file names recur in a tool output, which
    the old rule counts as needed later; the agent never names one of them."""
    transcript = load_transcript(TRANSCRIPTS / "claudecode-spotter-fa812bfe.jsonl")
    messages = transcript.messages
    cuts = list(range(1, len(messages)))
    sets = needed_later_sets(messages, cuts, system_prompt=transcript.system_prompt or "")
    old_rule_only = [{a for a in needed - needed_agent if "node_modules" in a}
                     for _, needed, needed_agent in sets]
    assert max(len(names) for names in old_rule_only) >= 100
    assert not any("node_modules" in a for _, _, agent in sets for a in agent)
