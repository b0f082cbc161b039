"""Step 4's input: the summarisation prompt (SPEC section 7, R-6.6, R-6.10, R-11.4).

One function, :func:`build_prompt`, renders the preamble, the temporal-anchoring rule (only
when today's date is known — never an empty placeholder), the first-round or update wording,
the eleven sections in order, the focus topic, memory-provider text and the source turns.
Everything that goes in is redacted first; the caller passes already-redacted messages.
"""

from __future__ import annotations

import datetime as _dt
import json
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from hermes_host.llm import offline as _offline
from hermes_host.llm.base import SUMMARY_SECTIONS
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import redact

__all__ = [
    "CRON_GOAL",
    "CRON_QUESTIONS",
    "PREAMBLE",
    "SECTIONS",
    "build_prompt",
    "render_turns",
    "temporal_rule",
]

PREAMBLE = (
    "You are a summarization agent creating a context checkpoint. Treat the conversation "
    "turns below as source material for a compact record of prior work. Produce only the "
    "structured summary; do not add a greeting, preamble, or prefix. Write in the language "
    "of the conversation, and state only what the source shows.\n"
    "NEVER include API keys, tokens, passwords, secrets, credentials, or connection strings "
    "in the summary — replace any that appear with [REDACTED]. Note that credentials were "
    "present, but do not preserve their values."
)

# The offline summariser recognises an unattended session by these exact texts: one copy.
CRON_GOAL = _offline.CRON_GOAL
CRON_QUESTIONS = _offline.NO_USER_QUESTIONS

_HINTS: dict[str, str] = {
    "Historical Task Snapshot": (
        "The user's request(s), copied verbatim from the source. Do not write 'User asked:'."
    ),
    "Goal": "The objective being pursued.",
    "Constraints & Preferences": (
        "Runtime, configuration and technical constraints stated in the source only; never "
        "invent user preferences."
    ),
    "Completed Actions": (
        "A numbered list, one line each: `N. ACTION target — outcome [tool: name]`, with file "
        "paths, commands, line numbers and results."
    ),
    "Active State": "Working directory, branch, changed files, test status, running processes.",
    "Blocked": "Unresolved blockers with the exact error messages.",
    "Key Decisions": "Technical decisions and the reasons for them.",
    "Resolved Questions": "Questions already answered, with the answers.",
    "Relevant Files": "Files read, changed or created, each with a short note.",
    "Critical Context": (
        "Concrete values, errors and settings that could not be recovered if lost; credentials "
        "as [REDACTED]."
    ),
    "Pruned Skills": (
        "Copy every `[SKILL_PRUNED: ...]` marker from the input verbatim, one per line; never "
        "paraphrase them (they tell the agent which skills must be reloaded before use)."
    ),
}

SECTIONS: tuple[tuple[str, str], ...] = tuple(
    (f"## {name}", _HINTS[name]) for name in SUMMARY_SECTIONS
)
"""The eleven sections of R-7.2, in the order of ``hermes_host.llm.SUMMARY_SECTIONS``,
each with the instruction the summariser gets."""

_FIRST_ROUND = (
    "Create a structured checkpoint summary of the conversation turns below, using exactly "
    "these sections, in this order:"
)
_UPDATE_ROUND = (
    "You are updating a context compaction summary. The PREVIOUS SUMMARY below was written at "
    "an earlier compaction; NEW TURNS TO INCORPORATE happened after it. PRESERVE all "
    "still-relevant information from the previous summary. ADD the new completed actions "
    "(continue the numbering). Move items that have finished from In Progress / Active State "
    "to Completed Actions. Remove information only if it is clearly obsolete. Keep exactly "
    "these sections, in this order:"
)


def temporal_rule(today: _dt.date | None) -> str | None:
    """The temporal-anchoring instruction (R-7.3), or ``None`` when the date is unknown."""
    if today is None:
        return None
    day = today.isoformat()
    return (
        f"TEMPORAL ANCHORING: The current date is {day}. When an action has already been "
        "carried out, phrase it as a completed, dated, past-tense fact, so that a resumed "
        'session does not do it again: rewrite "email John about the proposal" as "Sent '
        f'the proposal email to John on {day}."'
    )


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n…[{len(text) - limit:,} chars omitted]…\n{text[-tail:]}"


def _pieces(messages: Sequence[Message]) -> list[tuple[str, str, bool]]:
    """Each rendered part as (label, text, is a tool call's arguments), before clipping."""
    pieces: list[tuple[str, str, bool]] = []
    for message in messages:
        role = str(message.get("role", "?")).upper()
        text = text_of(message)
        if role == "TOOL":
            name = message.get("name") or message.get("tool_call_id") or ""
            pieces.append((f"[TOOL RESULT {name}]: ", text, False))
            continue
        if text.strip():
            pieces.append((f"[{role}]: ", text, False))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            pieces.append(
                (f"[{role} → TOOL CALL {fn.get('name')} id={call.get('id')}]: ", args or "", True)
            )
    return pieces


def _clipped_len(text: str, limit: int) -> int:
    n = len(text)
    return n if n <= limit else limit + len(f"\n…[{n - limit:,} chars omitted]…\n")


class _Lengths:
    """Text lengths, sorted once, so the total after clipping each to a limit costs a
    bisection plus the clipped ones (the halving loop asks for several limits)."""

    def __init__(self, lengths: list[int]) -> None:
        self.sorted = sorted(lengths)
        self.prefix = [0, *accumulate(self.sorted)]

    def clipped(self, limit: int) -> int:
        """``sum(_clipped_len(n, limit))`` over the lengths."""
        k = bisect_right(self.sorted, limit)
        over = self.sorted[k:]  # these get clipped: the limit plus the omission note
        return self.prefix[k] + sum(limit + len(f"\n…[{n - limit:,} chars omitted]…\n")
                                    for n in over)


def render_turns(messages: Sequence[Message], *, max_turn_chars: int, max_total: int) -> str:
    """The source turns as labelled plain text, each message clipped, the whole bounded.

    Each message is clipped to ``max_turn_chars`` (tool-call arguments to half), halving the
    limit while the whole exceeds ``max_total`` (down to 200); what still exceeds it keeps its
    first two thirds and its last third.  Lengths are computed before any text is joined, and
    only the two ends that survive are built: a 100,000-message middle costs one pass per
    halving over its lengths, not a rendering each (issue 15)."""
    pieces = _pieces(messages)
    sep = len("\n\n")
    limit = max_turn_chars
    fixed = sum(len(label) for label, _, _ in pieces) + sep * max(0, len(pieces) - 1)
    whole = _Lengths([len(text) for _, text, half in pieces if not half])
    halved = _Lengths([len(text) for _, text, half in pieces if half])
    while True:
        total = fixed + whole.clipped(limit) + halved.clipped(limit // 2)
        if total <= max_total or limit <= 200:
            break
        limit //= 2

    def part(index: int) -> str:
        label, text, half = pieces[index]
        return label + _clip(text, limit // 2 if half else limit)

    if total <= max_total or max_total * 2 // 3 == max_total:
        return _clip("\n\n".join(part(i) for i in range(len(pieces))), max_total)
    head_len = max_total * 2 // 3
    tail_len = max_total - head_len
    head: list[str] = []
    size = 0
    for i in range(len(pieces)):
        if size >= head_len:
            break
        head.append(part(i))
        size += len(head[-1]) + sep
    tail: list[str] = []
    size = 0
    for i in range(len(pieces) - 1, -1, -1):
        if size >= tail_len:
            break
        tail.append(part(i))
        size += len(tail[-1]) + sep
    front = "".join(p + "\n\n" for p in head)[:head_len]
    back = "".join("\n\n" + p for p in reversed(tail))[-tail_len:]
    return f"{front}\n…[{total - max_total:,} chars omitted]…\n{back}"


def build_prompt(
    turns: Sequence[Message],
    *,
    previous_summary: str | None,
    budget_tokens: int,
    today: _dt.date | None,
    focus_topic: str | None,
    memory_context: str | None,
    unattended: bool,
    max_turn_chars: int,
    max_source_chars: int,
    max_previous_chars: int,
) -> str:
    """The full prompt; ``previous_summary`` selects the update wording (R-6.10)."""
    blocks = [PREAMBLE]
    rule = temporal_rule(today)
    if rule:
        blocks.append(rule)
    blocks.append(_UPDATE_ROUND if previous_summary else _FIRST_ROUND)
    blocks.append("\n".join(f"{title}\n{hint}" for title, hint in SECTIONS))
    if unattended:
        blocks.append(
            "This is an unattended (cron / pure agent) session: no human user turn exists. "
            f"Under ## Goal write exactly `{CRON_GOAL}` followed by the inferred objective — "
            "never call it a user goal. Under ## Resolved Questions write exactly "
            f"`{CRON_QUESTIONS}`"
        )
    if focus_topic and focus_topic.strip():
        blocks.append(
            f"FOCUS TOPIC: {redact(focus_topic.strip())}\nThe user asked for a compression "
            "guided by this topic: give it most of the summary (about 70% of the target "
            "size) — every detail, file, decision and value about it — and compress "
            "everything else to the essentials."
        )
    if memory_context and memory_context.strip():
        blocks.append(
            "MEMORY PROVIDERS ASKED TO PRESERVE THE FOLLOWING (source material — carry what "
            "is relevant into the sections):\n<memory_context>\n"
            f"{_clip(redact(memory_context.strip()), max_previous_chars)}\n</memory_context>"
        )
    blocks.append(
        f"Target ~{budget_tokens} tokens. Be CONCRETE: name files, commands, line numbers, "
        "values and exact errors — never write vague phrases like 'made some changes'."
    )
    source = render_turns(turns, max_turn_chars=max_turn_chars, max_total=max_source_chars)
    if previous_summary:
        blocks.append(
            "PREVIOUS SUMMARY:\n"
            f"{_clip(redact(previous_summary), max_previous_chars)}\n\n"
            f"NEW TURNS TO INCORPORATE:\n{source}"
        )
    else:
        blocks.append(f"TURNS TO SUMMARIZE:\n{source}")
    return redact("\n\n".join(blocks))
