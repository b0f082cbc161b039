"""The instruction appended to the chat's own request when the summariser is the chat model
(``summarizer.continuation``, issue 28): the same rules as the normal prompt, its source the
conversation above."""

from __future__ import annotations

import datetime as dt

from hermes_compressor.prompt import (
    CONTINUATION_HEADER,
    CRON_GOAL,
    PREAMBLE,
    SECTIONS,
    build_continuation_instruction,
)

DEFAULTS: dict[str, object] = {
    "previous_summary": None, "budget_tokens": 1500, "today": dt.date(2026, 12, 2),
    "focus_topic": None, "memory_context": None, "unattended": False,
    "max_previous_chars": 48_000,
}


def _instruction(**overrides: object) -> str:
    return build_continuation_instruction(**{**DEFAULTS, **overrides})  # type: ignore[arg-type]


def test_r7_1_r7_2_r7_3_rules_and_which_messages() -> None:
    """R-7.1/R-7.2/R-7.3: the preamble's secrets rule, the eleven sections in order, the
    temporal rule and the target; the summary covers everything above but the kept tail,
    whose first message is quoted."""
    text = _instruction(keep_last=3, keep_opening="now also update the README")
    assert text.startswith(CONTINUATION_HEADER)
    assert "except the last 3 (they stay verbatim after the summary; the first of them " \
        "begins: 'now also update the README')" in text
    assert "NEVER include API keys, tokens, passwords, secrets, credentials" in text
    assert "from the conversation above as source material" in text
    assert PREAMBLE not in text  # "turns below" does not describe a continuation
    positions = [text.index(title) for title, _ in SECTIONS]
    assert positions == sorted(positions)
    assert "TEMPORAL ANCHORING: The current date is 2026-12-02." in text
    assert "Target ~1500 tokens" in text and "Create a structured checkpoint summary" in text
    assert "every message above this one." not in text


def test_r6_6_update_round_names_the_summary_above_or_appends_it() -> None:
    """R-6.6/R-6.10: on an update round the wording is the update's; the previous summary
    is the block already in the conversation (not repeated), or appended when it is not."""
    previous = "## Goal\nPORT the parser (PREVIOUS-BODY)"
    named = _instruction(keep_last=0, previous_summary=previous)
    assert "You are updating a context compaction summary" in named
    assert "EARLIER CONTEXT SUMMARY in the conversation above" in named
    assert "continue the numbering" in named and "PREVIOUS-BODY" not in named
    assert "Summarise every message above this one." in named
    appended = _instruction(keep_last=0, previous_summary=previous, previous_in_prefix=False)
    assert appended.endswith(f"PREVIOUS SUMMARY:\n{previous}")


def test_unattended_focus_and_redaction() -> None:
    """R-7.2 unattended wording, /compress focus, and redaction of what the engine adds."""
    text = _instruction(keep_last=2, unattended=True, focus_topic="db migrations",
                        keep_opening="export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz12")
    assert CRON_GOAL in text and "FOCUS TOPIC: db migrations" in text
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz12" not in text
