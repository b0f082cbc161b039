"""Step 1 — pruning without an LLM (R-6.1, R-6.8) and proactive pruning (R-11.1)."""

from __future__ import annotations

import json

import pytest
from compressor_helpers import RecordingSummarizer, compress_request, conversation, tool_turn
from hermes_host.messages import check_invariants, text_of
from hermes_host.models import CompressionSettings, PruneRequest

from hermes_compressor import Compressor
from hermes_compressor.describe import describe_result
from hermes_compressor.prune import (
    PruneStats,
    dedup_results,
    pressure_pass,
    remove_blank_echoes,
    truncate_call_args,
)


@pytest.mark.parametrize(
    ("name", "args", "content", "expected"),
    [
        (
            "Bash",
            {"command": "npm test"},
            "ok\n" * 46 + "Exit code 0",
            "[terminal] ran `npm test` -> exit 0, 47 lines output",
        ),
        (
            "execute_bash",
            {"command": "make"},
            "x\n[The command completed with exit code 2.]",
            "[terminal] ran `make` -> exit 2, 2 lines output",
        ),
        (
            "bash",
            {"command": "pytest"},
            "<returncode>1</returncode>\nfail",
            "[terminal] ran `pytest` -> exit 1, 2 lines output",
        ),
        (
            "Read",
            {"file_path": "config.py"},
            "x" * 3400,
            "[read_file] read config.py from line 1 (3,400 chars)",
        ),
        (
            "str_replace_editor",
            {"command": "view", "path": "/a.py", "view_range": [10, 20]},
            "y" * 10,
            "[read_file] read /a.py from line 10 (10 chars)",
        ),
        (
            "Write",
            {"file_path": "b.py", "content": "print(1)"},
            "File created",
            "[write_file] wrote b.py (8 chars) -> File created",
        ),
        (
            "Edit",
            {"file_path": "c.py", "old_string": "foo"},
            "ok",
            "[edit_file] edited c.py replacing `foo` -> ok",
        ),
        (
            "Grep",
            {"pattern": "TODO", "path": "src"},
            "a\nb\n\nc",
            "[search] Grep `TODO` in src -> 3 result lines",
        ),
        (
            "WebFetch",
            {"url": "https://example.com"},
            "z" * 50,
            "[web] WebFetch https://example.com -> 50 chars",
        ),
        (
            "browser_click",
            {"index": 4},
            'title: "Home"\n' + "q" * 20,
            "[browser] browser_click index=4 -> page 'Home', 34 chars",
        ),
        (
            "get_user_details",
            {"user_id": "u1"},
            "{}\n{}",
            "[get_user_details] user_id=u1 -> 5 chars, 2 lines",
        ),
    ],
)
def test_r6_1_informative_one_liners_per_tool_kind(
    name: str, args: dict[str, object], content: str, expected: str
) -> None:
    """R-6.1: each tool kind gets an informative one-liner, not a generic placeholder."""
    assert describe_result(name, json.dumps(args), content) == expected


def test_r6_1_one_liner_is_redacted() -> None:
    """Arguments may carry credentials; the one-liner never does."""
    secret = "sk-ant-api03-" + "Ab3" * 20
    line = describe_result(
        "Bash", json.dumps({"command": f"export ANTHROPIC_API_KEY={secret}"}), ""
    )
    assert secret not in line and "[REDACTED]" in line


def test_r6_1_dedup_keeps_newest_copy_with_200_char_floor() -> None:
    """R-6.1: identical results — only the newest full copy stays; short ones are untouched."""
    big = "same output\n" * 30
    msgs = (
        tool_turn(0, big)
        + tool_turn(1, "tiny")
        + tool_turn(2, big)
        + tool_turn(3, "tiny")
        + tool_turn(4, big)
    )
    stats = PruneStats()
    out = dedup_results(msgs, Compressor().count, start=0, min_chars=200, stats=stats)
    tool_texts = [text_of(m) for m in out if m["role"] == "tool"]
    assert tool_texts[4] == big
    assert tool_texts[0].startswith("[pruned tool output] [terminal] ran `ls 0`")
    assert "newest copy is kept" in tool_texts[2]
    assert tool_texts[1] == tool_texts[3] == "tiny"
    assert stats.pruned == 2 and stats.tokens_saved > 0


def test_r6_1_truncates_large_args_json_aware_and_keeps_invalid_json() -> None:
    """R-6.1: long tool-call arguments outside the tail are clipped inside the JSON (keys and
    structure kept); invalid JSON is left untouched."""
    long_text = "A" * 5000
    valid = tool_turn(0, "ok", name="Write", args={"file_path": "x.py", "content": long_text})
    invalid = tool_turn(1, "ok")
    invalid[1]["tool_calls"][0]["function"]["arguments"] = '{"content": "' + "B" * 5000
    msgs = valid + invalid
    out, clipped = truncate_call_args(msgs, start=0, end=len(msgs), max_chars=2000, keep_chars=300)
    assert clipped == 1
    args = json.loads(out[1]["tool_calls"][0]["function"]["arguments"])
    assert args["file_path"] == "x.py"
    assert args["content"].startswith("A" * 300) and "truncated 4,700 chars" in args["content"]
    assert (
        out[5]["tool_calls"][0]["function"]["arguments"]
        == msgs[5]["tool_calls"][0]["function"]["arguments"]
    )
    assert msgs[1]["tool_calls"][0]["function"]["arguments"].endswith('"}')  # input untouched


def test_r6_1_pending_call_arguments_never_clipped() -> None:
    """R-6.1: a call without a result yet (pending) keeps its full arguments."""
    msgs = [
        {"role": "user", "content": "write it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "p1",
                    "type": "function",
                    "function": {"name": "Write", "arguments": json.dumps({"content": "C" * 9000})},
                }
            ],
        },
    ]
    out, clipped = truncate_call_args(msgs, start=0, end=2, max_chars=2000, keep_chars=300)
    assert clipped == 0 and out[1] == msgs[1]


def test_r6_1_args_inside_tail_are_not_clipped_by_compress(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """Through compress: arguments in the protected tail stay whole, outside are clipped."""
    msgs = conversation(12, output_chars=300)
    big_args = {"file_path": "x.py", "content": "D" * 6000}
    msgs[-4:] = tool_turn(99, "done", name="Write", args=big_args)
    msgs[6:10] = tool_turn(98, "done", name="Write", args=big_args)
    result = engine.compress(request=compress_request(msgs, engine=engine))
    assert result.outcome == "summarised"
    tail_call = next(
        m for m in result.messages if m.get("tool_calls") and m["tool_calls"][0]["id"] == "call_99"
    )
    assert json.loads(tail_call["tool_calls"][0]["function"]["arguments"]) == big_args
    middle_call = next(
        m
        for m in recorder.jobs[0].messages
        if m.get("tool_calls") and m["tool_calls"][0]["id"] == "call_98"
    )
    # the prompt an LLM reads shows the clip; the job's messages (what an extractive
    # summariser reads, at no token cost) carry the call whole (issue 14: a clipped write
    # left the summary's "what changed" with the first 300 characters of the file)
    assert "truncated 5,700 chars" in recorder.jobs[0].prompt
    whole = json.loads(middle_call["tool_calls"][0]["function"]["arguments"])
    assert whole == big_args


def test_r6_1_pressure_pass_demotes_finished_outputs_in_overfull_tail() -> None:
    """R-6.1: a tail over 1.5× its budget has large finished outputs demoted to a one-liner
    plus a short recent excerpt, oldest first; the newest unanswered output stays whole."""
    count = Compressor().count
    msgs = tool_turn(0, "old-" * 2000 + "TAIL-END") + tool_turn(1, "mid-" * 2000)
    last = tool_turn(2, "new-" * 2000)[:3]  # no assistant answer after the last output
    msgs += last
    stats = PruneStats()
    out = pressure_pass(msgs, count, tail_start=0, budget=1000, excerpt_chars=100, stats=stats)
    assert text_of(out[2]).startswith("[pruned tool output] [terminal]")
    assert text_of(out[2]).endswith("old-" * 23 + "TAIL-END")
    assert text_of(out[-1]) == "new-" * 2000
    assert stats.pruned >= 1
    # under the ceiling nothing changes
    untouched = pressure_pass(
        msgs, count, tail_start=0, budget=10**6, excerpt_chars=100, stats=PruneStats()
    )
    assert untouched == msgs


def test_r6_8_blank_echoes_removed_even_when_aborted() -> None:
    """R-6.8: blank platform echo user messages go in phase 1; an aborted compression still
    returns the list without them (compress() is not all-or-nothing)."""
    msgs = conversation(10)
    msgs.insert(5, {"role": "user", "content": "   "})
    msgs.insert(9, {"role": "user", "content": None})
    kept, removed = remove_blank_echoes(msgs)
    assert removed == 2 and len(kept) == len(msgs) - 2
    from compressor_helpers import BrokenSummarizer
    from hermes_host.llm.base import TransientSummaryError

    engine = Compressor(summarizer=BrokenSummarizer(TransientSummaryError("429")))
    settings = CompressionSettings(abort_on_summary_failure=True)
    result = engine.compress(request=compress_request(msgs, engine=engine, compression=settings))
    assert result.outcome == "aborted"
    assert not any(
        m["role"] == "user" and not (m.get("content") or "").strip() for m in result.messages
    )
    assert check_invariants(result.messages) == []
    assert len(result.messages) == len(msgs) - 2


def _prune_request(msgs: list[dict[str, object]], **kw: object) -> PruneRequest:
    engine = Compressor()
    return PruneRequest(
        session_id="s",
        messages=msgs,
        current_tokens=sum(engine.count(m) for m in msgs),
        context_length=kw.pop("context_length", 200_000),
        **kw,
    )  # type: ignore[arg-type]


def test_r11_1_proactive_prune_reclaims_large_old_outputs() -> None:
    """R-11.1: outputs >= min_output_chars outside the tail become one-liners when at least
    min_reclaim_tokens are reclaimed; the result keeps every invariant."""
    msgs = [{"role": "system", "content": "s"}]
    for i in range(10):
        msgs += tool_turn(
            i, f"{i}-unique-output " * 900, name="Read", args={"file_path": f"f{i}.py"}
        )
    engine = Compressor()
    result = engine.prune_tool_results_only(request=_prune_request(msgs, context_length=60_000))
    assert result is not None and result.pruned > 0 and result.tokens_saved >= 4096
    assert check_invariants(result.messages) == []
    assert len(result.messages) == len(msgs)
    pruned = [
        m for m in result.messages if text_of(m).startswith("[pruned tool output] [read_file]")
    ]
    assert len(pruned) == result.pruned
    assert text_of(result.messages[-2]) == msgs[-2]["content"]  # newest output in the tail


def test_r11_1_proactive_prune_declines_small_reclaims() -> None:
    """R-11.1: below min_output_chars or min_reclaim_tokens → None (nothing to do)."""
    msgs = [{"role": "system", "content": "s"}, *conversation(10, output_chars=3000)[1:]]
    engine = Compressor()
    assert engine.prune_tool_results_only(request=_prune_request(msgs)) is None
    big = [{"role": "system", "content": "s"}, *conversation(10, output_chars=9000)[1:]]
    strict = _prune_request(big, context_length=60_000, min_reclaim_tokens=10**7)
    assert engine.prune_tool_results_only(request=strict) is None
