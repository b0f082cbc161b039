"""What the summariser is given and how its budget is sized (issue 14: artifacts needed
later were lost before any summary was written — step 1's one-liners stood for every old
tool output, and a budget measured on them starved the summary).

* An extractive (offline) summariser's job carries the newest pruned outputs as their
  bounded originals, with true sizes; an LLM's prompt still shows the one-liners.
* Its budget is a share of the middle as it was before step 1.
* A request quoted with its headings escaped counts as verbatim; an earlier
  ``Latest user request:`` block is replaced.
"""

from __future__ import annotations

import json
import re

from compressor_helpers import RecordingSummarizer, compress_request, tool_turn
from hermes_host.llm.offline.actions import bounded_output, output_size
from hermes_host.messages import text_of
from hermes_host.models import CompressionSettings, Message

from hermes_compressor import Compressor
from hermes_compressor.originals import with_originals
from hermes_compressor.summary import LATEST_REQUEST_LABEL, ensure_latest_request, section_body


def _module(i: int, lines: int = 400) -> str:
    """A file read: a definition of its own near the top, a long body, an error at the end."""
    body = "\n".join(f"    value_{i}_{n} = compute_{n}(x)" for n in range(lines))
    return (f"def load_settings_{i}(path):\n{body}\n"
            f"ValueError: bad setting in module_{i}")


def _window(turns: int = 24) -> list[Message]:
    window: list[Message] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        window += tool_turn(i, _module(i), name="Read",
                            args={"file_path": f"src/pkg/module_{i}.py"},
                            user=f"look at module {i}")
    return window


def test_the_offline_summariser_reads_the_originals_and_an_llm_the_one_liners() -> None:
    recorder = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
    result = engine.compress(request=compress_request(_window(), engine=engine))
    assert result is not None and result.outcome == "summarised", result.notes
    (job,) = recorder.jobs
    tools = [text_of(m) for m in job.messages if m.get("role") == "tool"]
    assert tools, "the middle had tool outputs"
    # the job's newest tool outputs are the originals' two ends, not "[pruned tool output] …"
    # (older ones, past the originals' character budget, keep their one-liner)
    given = [not t.startswith("[pruned tool output]") for t in tools]
    assert given[-1] and sum(given) >= 10
    assert given == sorted(given)  # the originals are the newest ones
    originals = [t for t, g in zip(tools, given, strict=True) if g]
    assert all(re.search(r"^def load_settings_\d+\(path\):", t) for t in originals)
    assert all("ValueError: bad setting" in t for t in originals)
    # …and say how much of the original they leave out, so sizes stay true
    for text in originals:
        lines, chars = output_size(text)
        i = int(re.search(r"load_settings_(\d+)", text).group(1))  # type: ignore[union-attr]
        original = _module(i)
        assert (lines, chars) == (original.count("\n") + 1, len(original))
    # the prompt an LLM would read still carries step 1's one-liners only
    assert re.search(r"\[TOOL RESULT \w+, pruned\]: read src/pkg/module_\d+\.py", job.prompt)
    assert "value_0_200" not in job.prompt


def test_originals_are_bounded_newest_first() -> None:
    original = _window(6)
    pruned = [dict(m, content="[pruned tool output] [read_file] read x (9 chars)")
              if m.get("role") == "tool" else m for m in original]
    one = len(bounded_output(_module(0)))
    out = with_originals(pruned, pruned, original, max_chars=2 * one + 10)
    given = [i for i, m in enumerate(out) if m.get("role") == "tool"
             and not text_of(m).startswith("[pruned")]
    tool_rows = [i for i, m in enumerate(original) if m.get("role") == "tool"]
    assert given == tool_rows[-2:]  # the two newest fit, the older keep their one-liner
    assert pruned[tool_rows[-1]]["content"].startswith("[pruned")  # input not mutated


def test_the_offline_budget_is_a_share_of_the_middle_before_pruning() -> None:
    """With one-liners for a budget, a tool-heavy middle got a summary target near the
    minimum; measured on the originals, it grows with what the middle says.  (The window's
    compression target is set to the whole trigger here, so it does not cap either budget.)"""
    budgets = {}
    roomy = CompressionSettings(target_percent=1.0)
    for calls_llm in (False, True):
        recorder = RecordingSummarizer(calls_llm=calls_llm)
        engine = Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
        result = engine.compress(
            request=compress_request(_window(), engine=engine, compression=roomy)
        )
        assert result is not None and result.outcome == "summarised", result.notes
        budgets[calls_llm] = recorder.jobs[0].budget_tokens
    assert budgets[False] > 2 * budgets[True]


def test_a_request_quoted_with_escaped_headings_is_verbatim() -> None:
    request = "Fix the parser\n### Steps\nrun `make`"
    summary = ("## Historical Task Snapshot\nFix the parser\n\\### Steps\nrun `make`\n\n"
               "## Goal\nFix the parser\n\n## Constraints & Preferences\nNone.")
    assert ensure_latest_request(summary, request) == summary


def test_an_earlier_latest_request_block_is_replaced() -> None:
    summary = ("## Historical Task Snapshot\nstart\n\n## Goal\nkeep me\n"
               f"{LATEST_REQUEST_LABEL} old request\nits second line\n\n"
               "## Constraints & Preferences\nNone.")
    out = ensure_latest_request(summary, "new request\n### Heading\nbody")
    goal = section_body(out, "## Goal")
    assert goal is not None
    assert goal.splitlines() == ["keep me", f"{LATEST_REQUEST_LABEL} new request",
                                 "\\### Heading", "body"]
    assert "old request" not in out and "its second line" not in out


def test_originals_given_back_are_redacted_r7_1() -> None:
    """The original outputs bypass the middle's redaction (they come from before step 1):
    each is redacted as it is given back."""
    secret = 'DB_PASSWORD="hunter2-correct-horse-battery"'
    original = [{"role": "tool", "tool_call_id": "c1", "content": f"{secret}\nok"}]
    pruned = [dict(original[0], content="[pruned tool output] [bash] ran (2 lines)")]
    out = with_originals(pruned, pruned, original)
    assert "hunter2" not in text_of(out[0]) and "DB_PASSWORD=" in text_of(out[0])
    assert original[0]["content"].startswith(secret)  # input not mutated


def test_call_arguments_given_back_are_redacted_r7_1() -> None:
    """The clipped call's original arguments come from before step 1 too: redacted as they
    are given back, the rest of the message (its content) as the middle had it."""
    secret = 'DB_PASSWORD="hunter2-correct-horse-battery"'
    args = {"file_path": "config/settings.py", "content": f"{secret}\n" + "x = 1\n" * 600}
    call = {"id": "c1", "type": "function",
            "function": {"name": "Write", "arguments": json.dumps(args)}}
    original = [{"role": "assistant", "content": "Writing the settings.", "tool_calls": [call]}]
    clipped = {**call, "function": {"name": "Write", "arguments": json.dumps(
        {"file_path": "config/settings.py", "content": "x…[truncated 3,640 chars]"})}}
    pruned = [{**original[0], "tool_calls": [clipped]}]
    out = with_originals(pruned, pruned, original)
    given = json.loads(out[0]["tool_calls"][0]["function"]["arguments"])
    assert given["content"].endswith("x = 1\n" * 3) and given["content"].count("x = 1") == 600
    assert "hunter2" not in given["content"] and "DB_PASSWORD=" in given["content"]
    assert out[0]["content"] == "Writing the settings."
    assert "hunter2" in original[0]["tool_calls"][0]["function"]["arguments"]  # not mutated
