"""A platform's continuation summary in the middle (issue 14: open threads, errors and
whether fixed): Claude Code's compaction leaves a user message "This session is being
continued from a previous conversation …" whose pending tasks, current work, next step and
fixed errors the offline summary keeps — its identifier index used to read only the
message's two ends (a preamble and a closing instruction)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from llm_helpers import load_transcript, transcript_files

from hermes_host.llm import OfflineSummarizer, SummaryJob
from hermes_host.llm.offline import parse_sections
from hermes_host.llm.offline.handover import (
    CONTINUATION_PREFIX,
    FIXED_LABEL,
    HANDOVER_LABELS,
    read_handover,
)
from hermes_host.messages import text_of

SESSIONS = ["claudecode-spotter-fa812bfe", "claudecode-spotter-258c7280",
            "claudecode-spotter-8463c716", "claudecode-spotter-ae4a77f8"]


def _session(name: str) -> tuple[list[dict[str, Any]], int]:
    path = next((p for p in transcript_files() if p.name == f"{name}.jsonl"), None)
    if path is None:
        pytest.skip(f"transcript {name} not present")
    msgs = load_transcript(path)
    at = next(i for i, m in enumerate(msgs) if text_of(m).startswith(CONTINUATION_PREFIX))
    return msgs, at


def _section(text: str, title: str) -> str:
    m = re.search(rf"(?m)^\d+\. {title}:\s*$", text, re.IGNORECASE)
    assert m, title
    nxt = re.search(r"(?m)^\d+\. [A-Z][A-Za-z &/-]+:\s*$", text[m.end():])
    return text[m.end(): m.end() + nxt.start() if nxt else len(text)]


def summarize(messages: list[dict[str, Any]], **job: Any) -> str:
    job.setdefault("budget_tokens", 3000)
    return OfflineSummarizer().summarize(SummaryJob(prompt="", messages=messages, **job))


@pytest.mark.parametrize("name", SESSIONS)
def test_the_open_threads_of_a_real_continuation_summary_are_read(name: str) -> None:
    msgs, at = _session(name)
    text = text_of(msgs[at])
    found = read_handover(text)
    assert found is not None
    current = " ".join(_section(text, "Current Work").replace("**", "").split())
    assert found.current and current.startswith(found.current.rstrip("…")[:60])
    fixes = _section(text, "Errors and Fixes")
    assert found.fixes and all(f.rstrip("…")[:40] in fixes.replace("**", "")
                               for f in found.fixes)
    assert found.next_step
    # any other message is not a continuation summary
    assert read_handover(text_of(msgs[at + 1])) is None
    assert read_handover("Please continue the conversation from where we left off.") is None


def test_the_summary_keeps_them_and_a_later_round_carries_them() -> None:
    msgs, at = _session("claudecode-spotter-fa812bfe")
    found = read_handover(text_of(msgs[at]))
    assert found is not None
    first = summarize(msgs[at - 6: at + 4])
    state = parse_sections(first)["Active State"]
    decisions = parse_sections(first)["Key Decisions"]
    assert f"- {HANDOVER_LABELS[1]}: {found.current}" in state.splitlines()
    assert f"- {HANDOVER_LABELS[2]}: {found.next_step}" in state.splitlines()
    assert f"- {FIXED_LABEL}: {found.fixes[0]}" in decisions.splitlines()
    # the next round has no continuation summary: the open threads are carried
    later = summarize(msgs[at + 4: at + 12], previous_summary=first)
    kept = [ln for ln in parse_sections(later)["Active State"].splitlines()
            if ln.startswith(tuple(f"- {label}" for label in HANDOVER_LABELS))]
    assert kept == [ln for ln in state.splitlines()
                    if ln.startswith(tuple(f"- {label}" for label in HANDOVER_LABELS))]
    assert f"- {FIXED_LABEL}: {found.fixes[0]}" in parse_sections(later)["Key Decisions"]
    # a newer continuation summary replaces them
    other, other_at = _session("claudecode-spotter-258c7280")
    newer = read_handover(text_of(other[other_at]))
    assert newer is not None
    replaced = summarize(other[other_at - 2: other_at + 2], previous_summary=later)
    state3 = parse_sections(replaced)["Active State"]
    assert f"- {HANDOVER_LABELS[1]}: {newer.current}" in state3.splitlines()
    assert found.current not in state3
