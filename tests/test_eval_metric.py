"""The needed-later recall metric on synthetic request sequences (docs/evaluation.md)."""

from __future__ import annotations

import pytest

from hermes_host.config import HermesConfig
from hermes_host.evaluation import (
    EngineSet,
    EvalRun,
    PointRecall,
    artifact_visible,
    extract_artifacts,
    message_text,
    needed_later_recall,
    parse_engine_sets,
    summarise_runs,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see aider/repomap.py and ./scripts/run.sh", {"aider/repomap.py", "scripts/run.sh"}),
        ("edit config.yaml then README.md", {"config.yaml", "README.md"}),
        ("raised AttributeError and ValueError", {"AttributeError", "ValueError"}),
        ("class RepoMap uses getRepoMap", {"RepoMap", "getRepoMap"}),
        ("set map_tokens and __init_subclass__", {"map_tokens", "__init_subclass__"}),
        ("docs at https://example.com/a/b.html.", {"https://example.com/a/b.html"}),
        ("commit 3aafe00 and id 8cc42b0bd39d04e71e509d7d58e6782ab435329f",
         {"3aafe00", "8cc42b0bd39d04e71e509d7d58e6782ab435329f"}),
        ("uuid ae4a77f8-aedd-4bc1-888f-c94edc91af04 here",
         {"ae4a77f8-aedd-4bc1-888f-c94edc91af04"}),
        ("plain words only, nothing to remember here", set()),
        ("a_b is too short, deadbeef has no digit, 1234567 has no letter", set()),
        # JSON escapes are whitespace: no "nApply" from "\\nApply", and "\\tfoo_bar" is foo_bar
        (r'{"plan": "Steps:\nApply the fix\n\tfoo_bar then\r\nRun"}', {"foo_bar"}),
    ],
)
def test_extract_artifacts_finds_each_kind(text, expected):
    assert extract_artifacts(text) == expected


def test_a_name_after_an_escape_is_visible_where_it_was_mined():
    """Mining and the visibility test read escapes alike: a name mined from a tool call's
    JSON arguments is visible in the same text."""
    text = message_text({"role": "assistant", "content": "", "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": "Edit", "arguments": '{"new_string": "x\\nload_settings(p)"}'}}]})
    assert "load_settings" in extract_artifacts(text)
    assert artifact_visible("load_settings", text)
    assert not artifact_visible("nload_settings", text)


def test_a_url_is_not_mined_again_for_paths():
    found = extract_artifacts("fetch https://github.com/org/repo/blob/main/src/app.py now")
    assert found == {"https://github.com/org/repo/blob/main/src/app.py"}


def test_message_text_includes_tool_call_arguments():
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": '{"path": "src/main_loop.py"}'}}]}
    assert "src/main_loop.py" in extract_artifacts(message_text(message))


@pytest.mark.parametrize(
    ("artifact", "text", "visible"),
    [
        ("repomap.py", "opened aider/repomap.py", True),
        ("map_tokens", "the repo_map_tokens setting", False),
        ("map_tokens", "set map_tokens=0", True),
        ("RepoMap", "RepoMapper is different", False),
        ("RepoMap", "", False),
    ],
)
def test_visibility_is_whole_token(artifact, text, visible):
    assert artifact_visible(artifact, text) is visible


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _a(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_needed_later_recall_counts_only_artifacts_used_again():
    messages = [
        _u("open src/alpha_mod.py and src/beta_mod.py"),       # 0
        _a("AlphaParser lives in src/alpha_mod.py"),           # 1
        _u("also check gamma_helper"),                         # 2  --- compression at 3
        _a("gamma_helper is fine; back to src/alpha_mod.py"),  # 3
        _u("does AlphaParser still raise KeyError?"),          # 4
    ]
    # Before 3: alpha_mod.py, beta_mod.py, AlphaParser, gamma_helper.
    # Used after: gamma_helper, alpha_mod.py, AlphaParser (beta_mod.py never again;
    # KeyError is new after the point, so not "needed").
    request = [
        {"role": "system", "content": "system"},
        _u("summary: we edited src/alpha_mod.py"),
        _a("ok"),
        _u("also check gamma_helper"),
    ]
    (point,) = needed_later_recall(messages, [(3, request)])
    assert point.needed == 3
    assert point.visible == 2
    assert point.missing_examples == ["AlphaParser"]
    assert point.recall == pytest.approx(2 / 3)


def test_system_prompt_artifacts_are_never_at_risk():
    messages = [_u("read tools/run_all.py and app_main.py"), _a("done"),
                _u("run tools/run_all.py again and app_main.py")]
    (point,) = needed_later_recall(
        messages, [(2, [_u("nothing")])], system_prompt="You may run tools/run_all.py."
    )
    assert point.needed == 1 and point.visible == 0
    assert point.missing_examples == ["app_main.py"]


def test_several_points_and_no_need_give_none():
    messages = [_u("plain"), _a("plain"), _u("plain again")]
    (point,) = needed_later_recall(messages, [(2, [_u("x")])])
    assert point.needed == 0 and point.recall is None


def _run(label: str, points: list[PointRecall], calls: list[int]) -> EvalRun:
    return EvalRun(
        transcript="t.jsonl", engines=label, messages=10, turns=3, model_calls=len(calls),
        tokens_per_call=calls, aux_llm_calls=1, compressions=len(points),
        compression_attempts=len(points), invariant_violations=0, points=points, seconds=0.1,
    )


def test_summary_takes_the_median_of_per_transcript_recall():
    runs = [
        _run("c", [PointRecall(5, 5, 10, 2)], [100, 200]),
        _run("c", [PointRecall(5, 5, 10, 6), PointRecall(8, 9, 10, 6)], [300]),
        _run("c", [PointRecall(5, 5, 4, 4)], [100]),
        _run("c", [], [50]),  # no compression: left out of recall, counted for tokens
        _run("c+r", [PointRecall(5, 5, 10, 9)], [120]),
    ]
    overall = summarise_runs(runs)
    assert overall["c"]["median_needed_later_recall"] == 0.6
    assert overall["c"]["transcripts_with_recall"] == 3 and overall["c"]["transcripts"] == 4
    assert overall["c"]["pooled_needed_later_recall"] == round(18 / 34, 4)
    assert overall["c"]["mean_tokens_per_call"] == 150.0
    assert overall["c"]["mean_tokens_per_turn"] == 750 / 12
    assert runs[0].as_dict()["tokens_sent"]["mean_per_turn"] == 100.0
    assert overall["c+r"]["median_needed_later_recall"] == 0.9


def test_engine_sets_parse_and_apply_R_14_8():
    sets = parse_engine_sets("compressor, compressor+topic_router+retrieval")
    assert [s.label for s in sets] == ["compressor", "compressor+topic_router+retrieval"]
    config = sets[1].apply(HermesConfig())
    assert config.context.engine == "compressor"
    assert config.context.chain("select_context") == ["topic_router", "retrieval"]
    assert sets[0].apply(config).context.chain("select_context") == ["compressor"]
    assert EngineSet("x").label == "x"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("compressor,,x", "empty engine set"), ("a+a", "names an engine twice"),
     ("compressor+re trieval", "is not an engine name")],
)
def test_bad_engine_sets_are_named(spec, needle):
    with pytest.raises(ValueError, match=needle):
        parse_engine_sets(spec)
