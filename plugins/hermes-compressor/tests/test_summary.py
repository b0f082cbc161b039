"""Steps 4 and 5 — the summary prompt, post-processing and injection (R-6.4–R-6.11, R-7)."""

from __future__ import annotations

import datetime as dt

import pytest
from compressor_helpers import (
    SECTIONS,
    RecordingSummarizer,
    compress_request,
    conversation,
    tool_turn,
)
from hermes_host.llm.base import SummaryJob
from hermes_host.messages import (
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_METADATA_KEY,
    SUMMARY_PREFIX,
    check_invariants,
    is_summary,
    text_of,
)
from hermes_host.models import Message

from hermes_compressor import Compressor
from hermes_compressor.prompt import CRON_GOAL, CRON_QUESTIONS, PREAMBLE
from hermes_compressor.summary import (
    CONTINUATION_TEXT,
    SUMMARY_END_MARKER,
    choose_role,
    extract_previous,
    inject,
    postprocess,
)


def _compress(engine: Compressor, msgs: list[Message], **kw: object):
    return engine.compress(request=compress_request(msgs, engine=engine, **kw))


def test_r7_1_r7_2_preamble_and_eleven_sections_in_order(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-7.1/R-7.2: the prompt opens with the preamble (no secrets rule included) and lists
    the eleven sections in order, ending with the target size and 'be concrete'."""
    result = _compress(engine, conversation(20))
    assert result.outcome == "summarised" and result.llm_calls == 1
    prompt = recorder.jobs[0].prompt
    assert prompt.startswith(PREAMBLE)
    assert "NEVER include API keys, tokens, passwords, secrets, credentials" in prompt
    positions = [prompt.index(title) for title in SECTIONS]
    assert positions == sorted(positions)
    assert f"Target ~{recorder.jobs[0].budget_tokens} tokens" in prompt
    assert "Be CONCRETE" in prompt
    assert "Create a structured checkpoint summary" in prompt
    assert "TURNS TO SUMMARIZE:" in prompt


def test_r7_3_temporal_anchoring_with_date_and_omitted_without(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-7.3: today's date anchors completed actions; without a date the rule is omitted
    entirely (no empty placeholder)."""
    _compress(engine, conversation(20), today=dt.date(2026, 12, 2))
    assert "TEMPORAL ANCHORING: The current date is 2026-12-02." in recorder.jobs[0].prompt
    assert "on 2026-12-02." in recorder.jobs[0].prompt
    assert recorder.jobs[0].today == dt.date(2026, 12, 2)
    _compress(engine, conversation(20), today=None)
    assert "TEMPORAL ANCHORING" not in recorder.jobs[1].prompt
    assert "current date is" not in recorder.jobs[1].prompt.lower()


def test_r6_6_r6_10_update_round_uses_previous_summary(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-6.6/R-6.10: the 2nd round gets PREVIOUS SUMMARY + NEW TURNS TO INCORPORATE with the
    update wording; the old block leaves the window; exactly one summary remains."""
    first = _compress(engine, conversation(20))
    grown = first.messages + conversation(20)[1:]
    second = _compress(engine, grown, compression_count=1)
    prompt = recorder.jobs[1].prompt
    assert "You are updating a context compaction summary" in prompt
    assert "PRESERVE" in prompt and "continue the numbering" in prompt
    assert "PREVIOUS SUMMARY:" in prompt and "NEW TURNS TO INCORPORATE:" in prompt
    assert "PROCESSED" in (recorder.jobs[1].previous_summary or "")
    assert not any(is_summary(m) for m in recorder.jobs[1].messages)
    assert sum(1 for m in second.messages if is_summary(m)) == 1
    assert check_invariants(second.messages) == []


def test_r7_4_r7_5_prefix_end_marker_and_metadata(engine: Compressor) -> None:
    """R-7.4/R-7.5/R-6.11: the block starts with SUMMARY_PREFIX, ends with the end marker
    and carries the _compressed_summary metadata key."""
    result = _compress(engine, conversation(20))
    block = next(m for m in result.messages if is_summary(m))
    assert block[SUMMARY_METADATA_KEY] is True
    assert block["content"].startswith(SUMMARY_PREFIX)
    assert block["content"].rstrip().endswith(SUMMARY_END_MARKER)


def test_r7_4_legacy_prefix_block_is_recognised_and_replaced(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-7.4: a `[CONTEXT SUMMARY]:` block from an older version is the previous summary."""
    msgs = conversation(20)
    msgs.insert(1, {"role": "user", "content": f"{LEGACY_SUMMARY_PREFIX} old facts: port 8421"})
    msgs.insert(2, {"role": "assistant", "content": "noted"})
    result = _compress(engine, msgs, compression_count=1)
    assert "old facts: port 8421" in (recorder.jobs[0].previous_summary or "")
    assert sum(1 for m in result.messages if is_summary(m)) == 1
    assert not any(LEGACY_SUMMARY_PREFIX in text_of(m) for m in result.messages)


@pytest.mark.parametrize(
    ("prev", "nxt", "role", "merge"),
    [
        ("system", "assistant", "user", False),  # pinned to user after the system prompt
        (None, "assistant", "user", False),
        ("assistant", "assistant", "user", False),
        ("tool", "assistant", "user", False),
        ("user", "user", "assistant", False),
        ("user", "assistant", "assistant", True),  # flip impossible: both collide → merge
        ("assistant", "user", "user", True),
        ("system", "user", "user", True),  # pinned, cannot flip
        ("tool", "user", "assistant", False),  # flip allowed after a tool result
    ],
)
def test_r6_11_summary_role_choice_flip_and_merge(
    prev: str | None, nxt: str, role: str, merge: bool
) -> None:
    """R-6.11: the summary role alternates with both neighbours; Anthropic's first message is
    pinned to user; when no role fits the summary merges into the first tail message."""
    assert choose_role(prev, nxt) == (role, merge)


def test_r6_10_merged_summary_is_unwrapped_next_round() -> None:
    """R-6.10: a summary merged into a tail message is unwrapped (original text kept) and
    taken as the previous summary; a standalone one is dropped."""
    head = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]
    tail = [{"role": "user", "content": "latest question"}, {"role": "assistant", "content": "x"}]
    merged = inject(head, "## Goal\nship it", tail, continuation=False)
    assert len(merged) == 5 and is_summary(merged[3]) and merged[3]["role"] == "user"
    assert check_invariants(merged) == []
    extracted = extract_previous(merged)
    assert extracted.previous_summary == "## Goal\nship it"
    assert extracted.messages[3] == {"role": "user", "content": "latest question"}
    standalone = inject(
        head[:1], "## Goal\nB", [{"role": "assistant", "content": "y"}], continuation=False
    )
    again = extract_previous(standalone)
    assert again.previous_summary == "## Goal\nB" and len(again.messages) == 2


def test_r7_6_synthetic_continuation_when_no_user_turn_survives() -> None:
    """R-7.6: an unattended session (no user turn) gets the continuation text right after
    the summary, so alternation holds and the model has a turn to answer."""
    msgs: list[Message] = [{"role": "system", "content": "cron job"}]
    for i in range(20):
        msgs += tool_turn(i, "data " * 200)[1:3]
    msgs.append({"role": "assistant", "content": "all done"})
    recorder = RecordingSummarizer()
    engine = Compressor(summarizer=recorder)
    result = _compress(engine, msgs)
    assert result.outcome == "summarised"
    assert check_invariants(result.messages) == []
    block = next(m for m in result.messages if is_summary(m))
    assert block["role"] == "user"
    assert not any(m["role"] == "user" for m in result.messages if m is not block)
    assert block["content"].endswith(CONTINUATION_TEXT)
    assert CRON_GOAL in recorder.jobs[0].prompt and CRON_QUESTIONS in recorder.jobs[0].prompt
    # and the continuation does not survive as a user turn when unwrapped next round
    assert len(extract_previous(result.messages).messages) == len(result.messages) - 1


def test_r6_11_postprocess_strips_think_redacts_restores_markers_grounds_snapshot() -> None:
    """R-6.11: <think> removed, secrets redacted, [SKILL_PRUNED] markers restored verbatim,
    an ungrounded snapshot ('User asked: …') replaced by the verbatim request."""
    secret = "ghp_" + "Zx9" * 12
    raw = (
        "<think>private reasoning</think>\n## Historical Task Snapshot\nUser asked: fix it\n"
        f"## Critical Context\ntoken {secret}\n## Pruned Skills\nNone."
    )
    source = "please fix the flaky test in tests/test_io.py\n[SKILL_PRUNED: pdf-tools v2]"
    out = postprocess(
        raw,
        source_text=source,
        snapshot_fallback="please fix the flaky test in tests/test_io.py",
        max_chars=10_000,
    )
    assert "<think>" not in out and "private reasoning" not in out
    assert secret not in out and "[REDACTED]" in out
    assert "[SKILL_PRUNED: pdf-tools v2]" in out.split("## Pruned Skills", 1)[1]
    assert "User asked" not in out
    assert "please fix the flaky test in tests/test_io.py" in out
    grounded = postprocess(
        "## Historical Task Snapshot\nplease fix the flaky test in tests/test_io.py",
        source_text=source,
        snapshot_fallback="X",
        max_chars=10_000,
    )
    assert "X" not in grounded


def test_r13_2_skill_markers_survive_compress_verbatim(engine: Compressor) -> None:
    """R-13.2: markers in the middle reach the summary verbatim even if the LLM drops them."""
    msgs = conversation(20)
    msgs[6]["content"] = "loaded [SKILL_PRUNED: browser-automation (3,100 tokens)] earlier"
    result = _compress(engine, msgs)
    block = next(m for m in result.messages if is_summary(m))
    assert "[SKILL_PRUNED: browser-automation (3,100 tokens)]" in block["content"]


def test_focus_topic_gets_most_of_the_budget(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-12.1 `/compress <focus>`: the prompt tells the summariser to give the topic most of
    the summary."""
    _compress(engine, conversation(20), focus_topic="database migrations", force=True)
    prompt = recorder.jobs[0].prompt
    assert "FOCUS TOPIC: database migrations" in prompt and "about 70%" in prompt
    assert recorder.jobs[0].focus_topic == "database migrations"


def test_r11_4_memory_context_is_source_material(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-11.4: memory providers' text is merged into the prompt as source material."""
    _compress(engine, conversation(20), memory_context="User prefers tabs; project uses uv.")
    prompt = recorder.jobs[0].prompt
    assert "<memory_context>\nUser prefers tabs; project uses uv.\n</memory_context>" in prompt
    assert recorder.jobs[0].memory_context == "User prefers tabs; project uses uv."


def test_r6_6_at_most_one_summary_over_many_rounds(engine: Compressor) -> None:
    """R-6.6: whatever the number of rounds, the window holds one summary block."""
    window = conversation(10)
    for round_no in range(5):
        window = window + conversation(15)[1:]
        result = _compress(engine, window, compression_count=round_no)
        assert result.outcome == "summarised"
        assert sum(1 for m in result.messages if is_summary(m)) == 1
        assert check_invariants(result.messages) == []
        window = result.messages


def _plain_chat(start: int, end: int) -> list[Message]:
    return [
        m
        for i in range(start, end)
        for m in (
            {"role": "user", "content": f"question {i} " + "q" * 400},
            {"role": "assistant", "content": f"answer {i} " + "a" * 400},
        )
    ]


def test_r6_11_role_flip_through_compress(engine: Compressor) -> None:
    """R-6.11: head ending with a tool result, tail starting with a user turn → the summary
    flips from user to assistant."""
    msgs = conversation(12)
    result = _compress(engine, msgs, keep_last_turns=2, force=True)
    assert check_invariants(result.messages) == []
    at = next(i for i, m in enumerate(result.messages) if is_summary(m))
    assert result.messages[at - 1]["role"] == "tool"
    assert result.messages[at + 1]["role"] == "user"
    assert result.messages[at]["role"] == "assistant"


def test_r6_11_merge_through_compress_and_unwrap_next_round(
    engine: Compressor, recorder: RecordingSummarizer
) -> None:
    """R-6.11/R-6.10: head ending with a user turn and tail starting with an assistant turn
    (the role-collision bridge) leave no role for a separate block: the summary merges into
    that assistant message; the next round unwraps it (the answer text survives) and still
    holds exactly one block, now pinned to user after the system prompt."""
    msgs: list[Message] = [{"role": "system", "content": "s"}, *_plain_chat(0, 30)]
    first = _compress(engine, msgs, keep_last_turns=1, force=True)
    assert check_invariants(first.messages) == []
    assert first.messages[3]["role"] == "user"  # head: system + 3, ends with a user turn
    block = first.messages[4]
    assert is_summary(block) and block["role"] == "assistant"
    assert block["content"].startswith(SUMMARY_PREFIX)
    merged_text = block["content"].split(SUMMARY_END_MARKER, 1)[1].strip()
    assert merged_text == msgs[-3]["content"]  # answer 28, the bridge before the last user
    second = _compress(engine, first.messages + _plain_chat(30, 45), compression_count=1)
    assert check_invariants(second.messages) == []
    assert sum(1 for m in second.messages if is_summary(m)) == 1
    assert second.messages[1]["role"] == "user" and is_summary(second.messages[1])
    unwrapped = [m for m in recorder.jobs[1].messages if m.get("content") == msgs[-3]["content"]]
    assert len(unwrapped) == 1 and not is_summary(unwrapped[0])


def test_r6_11_provenance_check_drops_invented_files() -> None:
    """R-6.11 provenance: a *Relevant Files* line naming only paths the LLM was never shown
    is dropped; lines about files from the conversation stay."""

    def answer(job: SummaryJob) -> str:
        return (
            "## Historical Task Snapshot\nplease do step 1\n## Relevant Files\n"
            "- src/m1.py — edited in step 1\n- lib/invented_module.py — never seen\n"
            "- notes without a path\n## Pruned Skills\nNone."
        )

    msgs = conversation(20)
    msgs[6]["content"] = "edited src/m1.py as asked"
    engine = Compressor(summarizer=RecordingSummarizer(text=answer))
    result = _compress(engine, msgs)
    block = next(m for m in result.messages if is_summary(m))["content"]
    assert "src/m1.py" in block and "notes without a path" in block
    assert "invented_module.py" not in block


def test_snapshot_fallback_is_the_first_real_request_not_a_platform_injection() -> None:
    """The snapshot the summary must carry is chosen as the offline summariser chooses it:
    a skill preamble or a continuation notice is not the user's request (found in review)."""
    from hermes_compressor.compaction import _snapshot_source

    middle = [
        {"role": "user", "content": "Base directory for this skill: /skills/pdf\n\nUse it."},
        {"role": "assistant", "content": "Loaded."},
        {"role": "user",
         "content": "This session is being continued from a previous conversation."},
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": "Fix the flaky parser test in tests/test_parse.py"},
    ]
    assert _snapshot_source(None, middle) == "Fix the flaky parser test in tests/test_parse.py"
    assert _snapshot_source(None, middle[:2]) is None
