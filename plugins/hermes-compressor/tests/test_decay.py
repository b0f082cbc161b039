"""Recall that decays across re-summaries (issue 14, "after the 10th ÷ after the 1st"): what
the offline summariser is given of an update round's middle, and what it says of it.

Measured on the 22 shared transcripts (offline summariser, compressor alone): a whole-file
``Write`` clipped by step 1 to its first 300 characters left the summary with the names at
the top of the file; given back whole, recall after the 10th compression went from 0.73 to
0.76 at 16K.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from compressor_helpers import (
    RecordingSummarizer,
    compress_request,
    load_normalised,
    transcripts_dir,
)
from hermes_host.llm.offline import parse_sections
from hermes_host.llm.offline.actions import _DEFINES_RE
from hermes_host.messages import text_of
from hermes_host.models import Message

from hermes_compressor import Compressor
from hermes_compressor.options import EngineOptions

SESSION = "claudecode-spotter-8463c716"


def _messages() -> list[Message]:
    path = transcripts_dir() / f"{SESSION}.jsonl"
    if not path.is_file():
        pytest.skip(f"transcript {path} not present (set HERMES_HOST_TRANSCRIPTS)")
    return load_normalised(path)


def _big_write(messages: list[Message]) -> tuple[int, dict[str, Any]]:
    """The first whole-file ``Write`` long enough for step 1 to clip, and its arguments."""
    limit = EngineOptions().max_tool_arg_chars
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments")
            if fn.get("name") == "Write" and isinstance(args, str) and len(args) > limit \
                    and _DEFINES_RE.search(json.loads(args)["content"]):
                return i, json.loads(args)
    raise AssertionError("the session has a long Write")


def _window(messages: list[Message], write_at: int) -> list[Message]:
    # the write well inside the middle: the tail keeps at least protect_last_n messages
    return messages[: write_at + 40]


def test_a_clipped_call_is_given_whole_to_the_offline_summariser() -> None:
    """Step 1 clips long call arguments outside the tail (R-6.1); an LLM's prompt keeps the
    clip, an extractive summariser's job carries the call as the agent made it."""
    messages = _messages()
    at, args = _big_write(messages)
    recorder = RecordingSummarizer(calls_llm=False)
    engine = Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
    result = engine.compress(request=compress_request(_window(messages, at), engine=engine))
    assert result is not None and result.outcome == "summarised", result.notes
    (job,) = recorder.jobs
    given = [json.loads(c["function"]["arguments"]) for m in job.messages
             for c in m.get("tool_calls") or []
             if c["function"]["name"] == "Write"
             and json.loads(c["function"]["arguments"]).get("file_path") == args["file_path"]]
    assert given and given[-1]["content"] == args["content"]
    # the prompt an LLM would read carries step 1's clip
    assert "…[truncated" in job.prompt
    assert args["content"][1000:1200] not in job.prompt


def test_a_rewritten_file_adds_what_it_did_not_define_before() -> None:
    """The summary's line for a whole-file rewrite names what the new text added — the
    functions defined past the top of the file that the earlier read of it did not define —
    not the definitions the file already had (issue 14: files touched with what changed)."""
    messages = _messages()
    at, args = _big_write(messages)
    path = args["file_path"]
    read_ids = {c["id"] for m in messages[:at] for c in m.get("tool_calls") or []
                if c["function"]["name"] == "Read"
                and json.loads(c["function"]["arguments"]).get("file_path") == path}
    before = {n for m in messages[:at] if m.get("tool_call_id") in read_ids
              for n in _DEFINES_RE.findall(text_of(m))}
    assert before, "the session read the file before rewriting it"
    new = [n for n in dict.fromkeys(_DEFINES_RE.findall(args["content"])) if n not in before]
    assert new
    engine = Compressor()  # the offline summariser
    result = engine.compress(request=compress_request(_window(messages, at), engine=engine))
    assert result is not None and result.outcome == "summarised", result.notes
    summary = next(text_of(m) for m in result.messages if "## Completed Actions" in text_of(m))
    actions = parse_sections(summary)["Completed Actions"]
    tail = path.rsplit("/", 3)[-3:]
    line = next(ln for ln in actions.splitlines()
                if " WROTE `" in f" {ln}" and "/".join(tail) in ln)
    added = re.findall(r"`([^`]+)`", line.split("; adds ", 1)[1].split(";")[0])
    assert added and not set(added) & before, line
    assert sum(n in new for n in added) >= 3, line


