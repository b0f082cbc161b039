"""Step 4's input: the summarisation prompt (SPEC section 7, R-6.6, R-6.10, R-11.4).

:func:`build_prompt` renders the preamble, the temporal-anchoring rule (only when today's
date is known — never an empty placeholder), the first-round or update wording, the eleven
sections in order, the focus topic, memory-provider text and the source turns.  Everything
that goes in is redacted first; the caller passes already-redacted messages.

:func:`build_continuation_instruction` renders the same rules as one user message to append
to the chat model's own request (``summarizer.continuation``): the source is then the
conversation above it, which the provider may bill as a cache read.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from hermes_host.llm import offline as _offline
from hermes_host.llm.base import SUMMARY_SECTIONS
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import redact

from hermes_compressor.prune import PRUNED_MARK

__all__ = [
    "CONTINUATION_HEADER",
    "CRON_GOAL",
    "CRON_QUESTIONS",
    "PREAMBLE",
    "SECTIONS",
    "build_continuation_instruction",
    "build_prompt",
    "render_turns",
    "temporal_rule",
]

PREAMBLE = (
    "You are a summarization agent creating a context checkpoint: a compact record of prior "
    "work, from the conversation turns below as source material. Output only the structured "
    "summary (no greeting, preamble or prefix), in the language of the conversation, stating "
    "only what the source shows.\n"
    "NEVER include API keys, tokens, passwords, secrets, credentials, or connection strings "
    "in the summary: replace any with [REDACTED] and note that credentials were present."
)

# The offline summariser recognises an unattended session by these exact texts: one copy.
CRON_GOAL = _offline.CRON_GOAL
CRON_QUESTIONS = _offline.NO_USER_QUESTIONS

_HINTS: dict[str, str] = {
    "Historical Task Snapshot": "The user's request(s), verbatim; never 'User asked:'.",
    "Goal": "The objective being pursued.",
    "Constraints & Preferences": (
        "Runtime, configuration and technical constraints from the source; never invented "
        "preferences."
    ),
    "Completed Actions": (
        "Numbered, one line each: `N. ACTION target — outcome [tool: name]`, with paths, "
        "commands, line numbers, results."
    ),
    "Active State": "Working directory, branch, changed files, test status, running processes.",
    "Blocked": "Unresolved blockers, with the exact errors.",
    "Key Decisions": "Technical decisions and their reasons.",
    "Resolved Questions": "Questions answered, with the answers.",
    "Relevant Files": "Files read, changed or created, a short note each.",
    "Critical Context": (
        "Values, errors and settings that could not be recovered if lost; credentials as "
        "[REDACTED]."
    ),
    "Pruned Skills": (
        "Every `[SKILL_PRUNED: ...]` marker of the input, verbatim, one per line (they name "
        "skills to reload before use)."
    ),
}

SECTIONS: tuple[tuple[str, str], ...] = tuple(
    (f"## {name}", _HINTS[name]) for name in SUMMARY_SECTIONS
)
"""The eleven sections of R-7.2, in the order of ``hermes_host.llm.SUMMARY_SECTIONS``,
each with the instruction the summariser gets."""

_FIRST_ROUND = (
    "Create a structured checkpoint summary of the conversation turns below, with exactly "
    "these sections, in this order:"
)
_UPDATE_ROUND = (
    "You are updating a context compaction summary. PRESERVE all still-relevant information "
    "of the PREVIOUS SUMMARY below; ADD the completed actions of the NEW TURNS TO INCORPORATE "
    "(continue the numbering); move finished items from In Progress / Active State to "
    "Completed Actions; remove information only if it is clearly obsolete. Keep exactly these "
    "sections, in this order:"
)


def temporal_rule(today: _dt.date | None) -> str | None:
    """The temporal-anchoring instruction (R-7.3), or ``None`` when the date is unknown."""
    if today is None:
        return None
    day = today.isoformat()
    return (
        f"TEMPORAL ANCHORING: The current date is {day}. Phrase each action already carried "
        "out as a completed, dated, past-tense fact, so that a resumed session does not redo "
        f'it: "email John about the proposal" becomes "Sent the proposal email to John on '
        f'{day}."'
    )


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n…[{len(text) - limit:,} chars omitted]…\n{text[-tail:]}"


_TEXT_SHARE = {"USER": 1, "SYSTEM": 1}
"""Divisor of the per-message limit by role: a user's request is copied verbatim into the
Historical Task Snapshot, so it keeps the whole limit; the assistant's prose, tool results
(step 1's one-liners in the middle) and calls get half."""
_VALUE_SHARE = 8
"""Each string inside a tool call's arguments keeps ``max_turn_chars // 8`` characters (its
two ends): a path or a command is short and stays whole; a file body written or an edit's
old/new text is shown in part (Hermes Agent keeps 1,200 characters of a call's arguments)."""


_EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"))
"""An edit's replaced and replacing text (Claude Code's Edit, SWE-agent's str_replace):
shown as the lines that changed."""
_EXCERPT = "\n…recent excerpt:\n"
"""Step 1's pressure pass keeps the end of an output inside the tail (prune.py); once that
output is in the middle the one-liner describes it and only the excerpt's end is kept."""


def _changed_lines(old: str, new: str) -> str:
    """The lines ``new`` changed in ``old``, ``-``/``+`` prefixed (no context lines): what an
    edit did, without the unchanged lines both texts repeat."""
    out: list[str] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        out.append("…" if line.startswith("@@") else line)
    return "\n".join(out[1:] if out[:1] == ["…"] else out)


def _call_text(raw: object, value_limit: int) -> str:
    """A tool call's arguments as ``key: value`` lines: strings unquoted and unescaped (a
    JSON-escaped heredoc costs more tokens than the text), each clipped to ``value_limit``;
    absent values (null, "", [], {}) left out; an edit's old/new text as the changed lines
    (``change:``, up to twice ``value_limit``).  Arguments that are not a JSON object — or
    nested deeper than the parser's recursion limit — are shown as they are (clipped)."""
    try:
        return _call_lines(raw, value_limit)
    except RecursionError:
        return _clip(raw if isinstance(raw, str) else repr(raw)[:value_limit * 4], value_limit)


def _call_lines(raw: object, value_limit: int) -> str:
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
    if not isinstance(parsed, dict):
        return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    lines = []
    for old_key, new_key in _EDIT_PAIRS:
        old, new = parsed.get(old_key), parsed.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            parsed = {k: v for k, v in parsed.items() if k not in (old_key, new_key)}
            lines.append(f"change: {_clip(_changed_lines(old, new), value_limit * 2)}")
            break
    for key, value in parsed.items():
        if value is None or value == "" or value == [] or value == {}:
            continue
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"{key}: {_clip(value, value_limit)}")
    return "\n".join(lines[1:] + lines[:1])  # the edit's change after its path


_STAND_IN = re.compile(re.escape(PRUNED_MARK) + r"\[[^\]\n]{1,40}\] ")
"""Step 1's one-liner opening: ``[pruned tool output] [terminal] `` (the label says it)."""


def _result_text(text: str, excerpt_limit: int) -> tuple[str, str]:
    """A tool result as (label suffix, text).  Step 1's one-liner is labelled ``pruned`` and
    loses its two tags (the tool's name is in the label); a pressure-demoted one keeps its
    excerpt's last ``excerpt_limit`` characters (where an error or a verdict ends an output)."""
    opening = _STAND_IN.match(text)
    if opening is None:
        return "", text
    text = text[opening.end():]
    if _EXCERPT in text:
        line, excerpt = text.split(_EXCERPT, 1)
        if len(excerpt) > excerpt_limit:
            text = f"{line}{_EXCERPT}…{excerpt[-excerpt_limit:]}"
    return ", pruned", text


def _pieces(messages: Sequence[Message], max_turn_chars: int) -> list[tuple[str, str, int]]:
    """Each rendered part as (label, text, divisor of the limit), before clipping.

    A call is labelled with its tool's name, and so is its result (found through the call's
    id): provider call ids (``call_00_gO4J3uFMqymct7cuL4cqjhkI``) are ~20 tokens each and
    tell the summariser nothing."""
    value_limit = max(80, max_turn_chars // _VALUE_SHARE)
    names: dict[object, str] = {}
    pieces: list[tuple[str, str, int]] = []
    for message in messages:
        role = str(message.get("role", "?")).upper()
        text = text_of(message)
        if role == "TOOL":
            call_id = message.get("tool_call_id")
            name = message.get("name") or names.get(call_id) or call_id or ""
            pruned, shown = _result_text(text, value_limit // 2)
            pieces.append((f"[TOOL RESULT {name}{pruned}]: ", shown, 2))
            continue
        if text.strip():
            pieces.append((f"[{role}]: ", text, _TEXT_SHARE.get(role, 2)))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            name = str(fn.get("name") or "?")
            if call.get("id"):
                names[call.get("id")] = name
            pieces.append(
                (f"[TOOL CALL {name}]: ", _call_text(fn.get("arguments") or "", value_limit), 2)
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

    A user's (or system) message is clipped to ``max_turn_chars``, the assistant's prose, a
    tool call's arguments and a tool result to half of it (see :data:`_TEXT_SHARE`), halving
    the limit while the whole exceeds ``max_total`` (down to 200); what still exceeds it keeps
    its first two thirds and its last third.  Calls and results are labelled with the tool's
    name, arguments rendered by :func:`_call_text`.  Lengths are computed before any text is
    joined, and only the two ends that survive are built: a 100,000-message middle costs one
    pass per halving over its lengths, not a rendering each (issue 15)."""
    pieces = _pieces(messages, max_turn_chars)
    sep = len("\n\n")
    limit = max_turn_chars
    fixed = sum(len(label) for label, _, _ in pieces) + sep * max(0, len(pieces) - 1)
    shares = sorted({share for _, _, share in pieces})
    lengths = {s: _Lengths([len(t) for _, t, share in pieces if share == s]) for s in shares}
    while True:
        total = fixed + sum(lengths[s].clipped(limit // s) for s in shares)
        if total <= max_total or limit <= 200:
            break
        limit //= 2

    def part(index: int) -> str:
        label, text, share = pieces[index]
        return label + _clip(text, limit // share)

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


def _rules(
    *,
    round_wording: str,
    budget_tokens: int,
    today: _dt.date | None,
    focus_topic: str | None,
    memory_context: str | None,
    unattended: bool,
    max_previous_chars: int,
) -> list[str]:
    """The instruction blocks both prompts share, in order: preamble (R-7.1), temporal rule
    (R-7.3), the round's wording (R-6.10), the eleven sections (R-7.2), the unattended rule,
    focus topic, memory text (R-11.4) and the target size."""
    blocks = [PREAMBLE]
    rule = temporal_rule(today)
    if rule:
        blocks.append(rule)
    blocks.append(round_wording)
    blocks.append("\n".join(f"{title}\n{hint}" for title, hint in SECTIONS))
    if unattended:
        blocks.append(
            "Unattended (cron / pure agent) session: no human user turn exists. Under ## Goal "
            f"write exactly `{CRON_GOAL}` then the inferred objective, never called a user "
            f"goal. Under ## Resolved Questions write exactly `{CRON_QUESTIONS}`"
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
        f"Target ~{budget_tokens} tokens. Be CONCRETE: files, commands, line numbers, values, "
        "exact errors; never vague phrases like 'made some changes'."
    )
    return blocks


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
    blocks = _rules(
        round_wording=_UPDATE_ROUND if previous_summary else _FIRST_ROUND,
        budget_tokens=budget_tokens, today=today, focus_topic=focus_topic,
        memory_context=memory_context, unattended=unattended,
        max_previous_chars=max_previous_chars,
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


CONTINUATION_HEADER = (
    "CONTEXT CHECKPOINT REQUEST — do not continue the task and do not call tools: this turn "
    "only asks for a summary of the conversation above."
)
"""Opens the continuation instruction: the chat model reads it after its own window, where
the next thing it would do is carry on with the task."""


def build_continuation_instruction(
    *,
    keep_last: int,
    keep_opening: str | None = None,
    previous_summary: str | None,
    previous_in_prefix: bool = True,
    budget_tokens: int,
    today: _dt.date | None,
    focus_topic: str | None,
    memory_context: str | None,
    unattended: bool,
    max_previous_chars: int,
) -> str:
    """The user message appended to the chat's own request when the summariser is the chat
    model (``summarizer.continuation``): the same rules as :func:`build_prompt` (R-7.1,
    R-7.2, R-7.3, R-6.10), the source being the conversation above it.

    ``keep_last`` messages at the end of the conversation stay verbatim after the summary and
    are not summarised (``0``: everything above is); ``keep_opening`` quotes the beginning of
    the first of them so the boundary is unambiguous.  On an update round the previous
    summary is the summary block already in the conversation (``previous_in_prefix``), named
    rather than repeated; otherwise its text is appended, bounded (R-6.6)."""
    if previous_summary:
        source = "the EARLIER CONTEXT SUMMARY in the conversation above" if previous_in_prefix \
            else "the PREVIOUS SUMMARY below"
        wording = _UPDATE_ROUND.replace("the PREVIOUS SUMMARY below", source).replace(
            "the NEW TURNS TO INCORPORATE", "the messages after it")
    else:
        wording = _FIRST_ROUND
    which = "every message above this one"
    if keep_last > 0:
        which += (f" except the last {keep_last} (they stay verbatim after the summary"
                  + (f"; the first of them begins: {_clip(keep_opening.strip(), 160)!r}"
                     if keep_opening and keep_opening.strip() else "")
                  + ")")
    blocks = [
        CONTINUATION_HEADER,
        f"Summarise {which}. The system prompt is not part of the summary.",
        *_rules(
            round_wording=wording, budget_tokens=budget_tokens, today=today,
            focus_topic=focus_topic, memory_context=memory_context, unattended=unattended,
            max_previous_chars=max_previous_chars,
        ),
    ]
    blocks = [b.replace("the conversation turns below", "the conversation above")
              for b in blocks]
    if previous_summary and not previous_in_prefix:
        blocks.append(
            f"PREVIOUS SUMMARY:\n{_clip(redact(previous_summary), max_previous_chars)}"
        )
    return redact("\n\n".join(blocks))
