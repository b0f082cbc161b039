"""Compression that forgets less (issue 14): the newest real request survives verbatim,
short sessions compress, the summariser never sees private reasoning, an echoed prefix is
not doubled, and the summary's ceiling scales with the window.

The transcript tests replay real sessions from ``../shared/data/transcripts`` through the
real host (SQLite store, fence, default compressor with the offline summariser).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compressor_helpers import (
    RecordingSummarizer,
    compress_request,
    transcripts_dir,
)
from hermes_host.host import ContextHost
from hermes_host.llm.offline import request_text
from hermes_host.messages import (
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    is_summary,
    normalize_alternation,
    segments_of,
    text_of,
)
from hermes_host.models import Message
from hermes_host.replay import replay_transcript
from hermes_host.transcripts import load_transcript

from hermes_compressor import Compressor
from hermes_compressor.compaction import summary_ceiling
from hermes_compressor.options import EngineOptions
from hermes_compressor.summary import postprocess, strip_reasoning, summary_text


def _transcript(name: str) -> Path:
    path = transcripts_dir() / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"transcript {path} not present (set HERMES_HOST_TRANSCRIPTS)")
    return path


def _host(tmp_path: Path, context_length: int) -> ContextHost:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"model:\n  context_length: {context_length}\nsummarizer:\n  provider: offline\n",
        encoding="utf-8",
    )
    return ContextHost.from_config(config, store=tmp_path / "state.db")


@pytest.mark.parametrize(
    "name", ["claudecode-spotter-ae4a77f8", "claudecode-spotter-fa812bfe"]
)
def test_the_newest_real_request_survives_every_compression_verbatim(
    tmp_path: Path, name: str
) -> None:
    """Issue 14: on ae4a77f8 "continue implementation" was glued onto a continuation notice
    by the alternation merge and vanished; on fa812bfe the snapshot took a
    ``<task-notification>`` for a request.  Before every send after a compression, the
    newest request the user wrote so far is in the request word for word (its first 1,500
    characters)."""
    transcript = load_transcript(_transcript(name))
    messages = transcript.messages
    checked: list[int] = []
    missing: list[tuple[int, str]] = []

    def on_request(index: int, request: list[Message], _decisions: object) -> None:
        if not any(is_summary(m) for m in request):
            return
        requests = [t for m in messages[:index] if (t := request_text(m)) is not None]
        if not requests:
            return
        wanted = requests[-1][:1500]
        checked.append(index)
        if wanted not in "\n".join(text_of(m) for m in request):
            missing.append((index, wanted[:80]))

    with _host(tmp_path, 16_000) as host:
        result = replay_transcript(host, transcript, on_request=on_request)
    assert sum(1 for c in result.compressions if c.status == "committed") >= 3
    assert len(checked) > 10
    assert missing == []


def test_a_request_merged_after_a_platform_notice_is_still_a_request() -> None:
    notice = {"role": "user", "content": "This session is being continued from a previous "
              "conversation that ran out of context. The summary below covers it.\n\nMore."}
    caveat = {"role": "user", "content": "<local-command-stdout>Compacted</local-command-stdout>"}
    ask = {"role": "user", "content": "continue implementation"}
    merged, merges = normalize_alternation([notice, caveat, ask])
    assert merges == 2 and len(merged) == 1
    assert segments_of(merged[0]) == [notice["content"], caveat["content"], ask["content"]]
    assert request_text(merged[0]) == "continue implementation"
    # the segment record is private metadata: a content edit that breaks it falls back to
    # the whole text (a notice), never to a wrong split
    edited = {**merged[0], "content": merged[0]["content"] + "!"}
    assert segments_of(edited) == [edited["content"]]
    assert request_text({"role": "user", "content": "<task-notification>done"}) is None


def test_a_short_session_over_its_threshold_is_compressed(tmp_path: Path) -> None:
    """Issue 14: sweagent-gpt4-pydicom-1458 at 16K had two no-ops at turn 2 (system prompt and
    one huge task message), which blocked automatic compression for the rest of the
    session: the window climbed to 87 % and stayed.  Anti-thrash now re-arms once the window
    has grown materially, and a window with no middle keeps only its last three messages."""
    path = _transcript("sweagent-gpt4-pydicom-1458")
    with _host(tmp_path, 16_000) as host:
        result = replay_transcript(host, load_transcript(path))
    committed = [c for c in result.compressions if c.status == "committed"]
    assert committed, [c.message for c in result.compressions]
    assert result.final_window_tokens < 0.6 * 16_000
    assert result.invariant_violations == 0


def _short_window(big: int = 6000) -> list[Message]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in parser.py. " + "detail " * big},
        {"role": "assistant", "content": "I will look at parser.py first."},
        {"role": "user", "content": "ok, go on"},
        {"role": "assistant", "content": "Reading it now."},
        {"role": "user", "content": "and run the tests after"},
    ]


def test_a_forced_compress_makes_progress_on_a_short_session() -> None:
    """More than a head and three tail messages: the first-round head (system + 3) would
    leave no middle; the head shrinks to the system prompt and the middle is summarised."""
    recorder = RecordingSummarizer()
    engine = Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
    window = _short_window()
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None
    assert result.outcome == "summarised", result.notes
    assert len(recorder.jobs) == 1
    assert any(is_summary(m) for m in result.messages)
    # the last three stay (the summary, pinned to user after the system prompt, merges into
    # the first of them: a user message)
    assert result.messages[-2:] == window[-2:]
    assert text_of(result.messages[-3]).endswith("ok, go on")
    assert sum(engine.count(m) for m in result.messages) < sum(engine.count(m) for m in window)


def test_too_few_messages_is_still_a_noop() -> None:
    engine = Compressor(summarizer=RecordingSummarizer())
    window = _short_window()[:4]  # system + 3: nothing can be both middle and tail
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None and result.outcome == "noop"


def test_private_reasoning_never_reaches_the_summariser() -> None:
    """R-6.11 / issue 14: ``<think>`` and ``<reasoning>`` blocks in the turns being
    summarised are stripped before the prompt is built (they were only stripped from the
    summariser's answer)."""
    recorder = RecordingSummarizer()
    engine = Compressor(summarizer=recorder, fallback=RecordingSummarizer(calls_llm=False))
    window: list[Message] = [{"role": "system", "content": "sys"}]
    for i in range(30):
        window.append({"role": "user", "content": f"step {i}: " + "word " * 200})
        window.append({
            "role": "assistant",
            "content": f"<think>PRIVATE-PLAN-{i} weigh options</think>Did step {i}. "
            f"<reasoning>HIDDEN-{i}</reasoning>Next." + (" <thinking>OPEN-{i}" if i == 3 else ""),
        })
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None and result.outcome == "summarised"
    job = recorder.jobs[0]
    seen = job.prompt + json.dumps(job.messages)
    assert "Did step 3. Next." in seen and "Did step 12. Next." in seen
    for marker in ("PRIVATE-PLAN-", "HIDDEN-", "OPEN-3", "<think>", "<reasoning>"):
        assert marker not in seen


def test_strip_reasoning_leaves_other_messages_alone() -> None:
    user = {"role": "user", "content": "<think>the user may write this</think>"}
    plain = {"role": "assistant", "content": "no tags here"}
    out = strip_reasoning([user, plain])
    assert out[0] is user and out[1] is plain


@pytest.mark.parametrize("echo", [SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX,
                                  SUMMARY_PREFIX + "\n\n" + SUMMARY_PREFIX])
def test_an_echoed_prefix_is_not_carried_into_the_block(echo: str) -> None:
    raw = f"{echo}\n\n## Historical Task Snapshot\nfix the bug\n\n## Goal\nfix it"
    body = postprocess(raw, source_text="fix the bug", snapshot_fallback=None, max_chars=10_000)
    assert body.startswith("## Historical Task Snapshot")
    block = summary_text(body, continuation=False)
    assert block.count(SUMMARY_PREFIX) == 1
    assert LEGACY_SUMMARY_PREFIX not in block


@pytest.mark.parametrize(
    ("context_length", "emit_limit", "expected"),
    [
        (16_000, None, 3_000),  # the floor, not 5 % (800)
        (32_000, None, 3_000),  # the floor, not 5 % (1,600)
        (8_000, None, 1_000),  # a small window: 5 % is 400, under min_summary_tokens
        (200_000, None, 10_000),  # 5 % of the window, not summarizer.max_tokens
        (1_000_000, None, 12_000),  # capped by max_summary_tokens
        (1_000_000, 4_096, 4_096),  # an LLM summariser: what it may emit in one answer
        (1_000_000, 32_000, 12_000),
    ],
)
def test_the_summary_ceiling_scales_with_the_window(
    context_length: int, emit_limit: int | None, expected: int
) -> None:
    assert summary_ceiling(context_length, EngineOptions(), emit_limit=emit_limit) == expected


@pytest.mark.parametrize(("room", "expected"), [(2_000, 2_000), (200, 1_000), (50_000, 3_000)])
def test_the_compression_target_caps_the_summary_above_its_floor(room: int, expected: int) -> None:
    """Issue 28: what ``compression.target_percent`` leaves after head and tail caps the
    summary, never below ``min_summary_tokens`` (1,000, Hermes Agent's floor) and never above
    the window's own ceiling (3,000 at 16K)."""
    assert summary_ceiling(16_000, EngineOptions(), emit_limit=None, room=room) == expected
