"""Size of the LLM summariser's prompt on the middles the compressor really summarises.

Run: ``python benchmarks/bench_summary_prompt.py``.  Prints one markdown section to stdout.

Every transcript is replayed through :class:`~hermes_host.host.ContextHost` (default
compressor, ``summarizer: {provider: offline}``, fresh SQLite store) at 16K and 32K windows,
as a user's session would be.  Each time the compressor hands a job to its summariser (the
middles an LLM would be asked to summarise: not the feasibility skips, which never call one),
the arguments of that job's ``build_prompt`` are captured, and the prompt is rendered twice on
the same middle: with today's ``build_prompt`` and with the rendering of commit 869f2f1 (a
frozen copy below, :func:`old_build_prompt`).  The captured job's prompt is checked to be
today's rendering, so the figures are those of the prompts really built.

Reported per window: prompts, median and pooled prompt tokens (``hermes_host.tokens``), old
and new, and the ratio old/new; where the new prompt's tokens go (fixed instructions, previous
summary, source turns by kind).  The offline summariser does not read the prompt, so recall
figures of ``hermes-host eval`` do not move with it; an LLM's would.

Transcripts come from ``$HERMES_HOST_TRANSCRIPTS`` (default ``../shared/data/transcripts``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _targets import Targets
from hermes_compressor import compaction
from hermes_compressor import prompt as new_prompt

from hermes_host.config import parse_config
from hermes_host.host import ContextHost
from hermes_host.llm.base import Summarizer, SummaryJob
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.replay import replay_transcript
from hermes_host.tokens import count_text
from hermes_host.transcripts import load_transcript

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
WINDOWS = (16_000, 32_000)
TARGET_RATIO = 1.2
"""Issue 28 part 5: the old prompt is at least this many times the new one (pooled).  The
previous summary (a third of the tokens on update rounds) is carried as it is: only the
instructions and the rendered turns can shrink."""

# -- the rendering of commit 869f2f1, frozen (SPEC section 7 wording of that day) -----------

_OLD_HINTS = {
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
_OLD_PREAMBLE = (
    "You are a summarization agent creating a context checkpoint. Treat the conversation "
    "turns below as source material for a compact record of prior work. Produce only the "
    "structured summary; do not add a greeting, preamble, or prefix. Write in the language "
    "of the conversation, and state only what the source shows.\n"
    "NEVER include API keys, tokens, passwords, secrets, credentials, or connection strings "
    "in the summary — replace any that appear with [REDACTED]. Note that credentials were "
    "present, but do not preserve their values."
)
_OLD_FIRST = (
    "Create a structured checkpoint summary of the conversation turns below, using exactly "
    "these sections, in this order:"
)
_OLD_UPDATE = (
    "You are updating a context compaction summary. The PREVIOUS SUMMARY below was written at "
    "an earlier compaction; NEW TURNS TO INCORPORATE happened after it. PRESERVE all "
    "still-relevant information from the previous summary. ADD the new completed actions "
    "(continue the numbering). Move items that have finished from In Progress / Active State "
    "to Completed Actions. Remove information only if it is clearly obsolete. Keep exactly "
    "these sections, in this order:"
)


def _old_clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n…[{len(text) - limit:,} chars omitted]…\n{text[-tail:]}"


def old_render_turns(messages: Sequence[Message], *, max_turn_chars: int, max_total: int) -> str:
    """869f2f1's ``render_turns`` (its straightforward form, which its test proved equal):
    every message clipped to ``max_turn_chars``, a call's JSON arguments to half, labelled
    with the call id, the limit halved while the whole exceeds ``max_total``."""
    limit = max_turn_chars
    while True:
        parts: list[str] = []
        for message in messages:
            role = str(message.get("role", "?")).upper()
            text = text_of(message)
            if role == "TOOL":
                name = message.get("name") or message.get("tool_call_id") or ""
                parts.append(f"[TOOL RESULT {name}]: {_old_clip(text, limit)}")
                continue
            if text.strip():
                parts.append(f"[{role}]: {_old_clip(text, limit)}")
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                args = fn.get("arguments")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                parts.append(
                    f"[{role} → TOOL CALL {fn.get('name')} id={call.get('id')}]: "
                    f"{_old_clip(args or '', limit // 2)}"
                )
        rendered = "\n\n".join(parts)
        if len(rendered) <= max_total or limit <= 200:
            return _old_clip(rendered, max_total)
        limit //= 2


def old_build_prompt(
    turns: Sequence[Message], *, previous_summary: str | None, budget_tokens: int,
    today: _dt.date | None, focus_topic: str | None, memory_context: str | None,
    unattended: bool, max_turn_chars: int, max_source_chars: int, max_previous_chars: int,
) -> str:
    """869f2f1's ``build_prompt``."""
    blocks = [_OLD_PREAMBLE]
    if today is not None:
        day = today.isoformat()
        blocks.append(
            f"TEMPORAL ANCHORING: The current date is {day}. When an action has already been "
            "carried out, phrase it as a completed, dated, past-tense fact, so that a resumed "
            'session does not do it again: rewrite "email John about the proposal" as "Sent '
            f'the proposal email to John on {day}."'
        )
    blocks.append(_OLD_UPDATE if previous_summary else _OLD_FIRST)
    blocks.append("\n".join(f"## {name}\n{hint}" for name, hint in _OLD_HINTS.items()))
    if unattended:
        blocks.append(
            "This is an unattended (cron / pure agent) session: no human user turn exists. "
            f"Under ## Goal write exactly `{new_prompt.CRON_GOAL}` followed by the inferred "
            "objective — never call it a user goal. Under ## Resolved Questions write exactly "
            f"`{new_prompt.CRON_QUESTIONS}`"
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
            f"{_old_clip(redact(memory_context.strip()), max_previous_chars)}\n</memory_context>"
        )
    blocks.append(
        f"Target ~{budget_tokens} tokens. Be CONCRETE: name files, commands, line numbers, "
        "values and exact errors — never write vague phrases like 'made some changes'."
    )
    source = old_render_turns(turns, max_turn_chars=max_turn_chars, max_total=max_source_chars)
    if previous_summary:
        blocks.append(
            "PREVIOUS SUMMARY:\n"
            f"{_old_clip(redact(previous_summary), max_previous_chars)}\n\n"
            f"NEW TURNS TO INCORPORATE:\n{source}"
        )
    else:
        blocks.append(f"TURNS TO SUMMARIZE:\n{source}")
    rendered: str = redact("\n\n".join(blocks))
    return rendered


# -- capture ---------------------------------------------------------------------------------

_SOURCE_SPLIT = re.compile(r"\n\n(?=\[(?:USER|ASSISTANT|SYSTEM|TOOL (?:CALL|RESULT))\b)")


class _Capture:
    """Wraps the engine's summariser: records each job, lets the offline one write it."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls_llm = inner.calls_llm
        self.jobs: list[SummaryJob] = []

    def summarize(self, job: SummaryJob) -> str:
        self.jobs.append(job)
        summary: str = self.inner.summarize(job)
        return summary


def capture(window: int, path: Path) -> list[tuple[str, str]]:
    """(new prompt, old prompt) of every job the compressor gave its summariser."""
    config = parse_config({
        "model": {"context_length": window},
        "summarizer": {"provider": "offline"},
        "memory": {"providers": []},
    })
    built: list[tuple[tuple[Any, ...], dict[str, Any], str]] = []
    real = compaction.build_prompt

    def recording(*args: Any, **kwargs: Any) -> str:
        text: str = real(*args, **kwargs)
        built.append((args, kwargs, text))
        return text

    pairs: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        host = ContextHost.from_config(config, store=Path(tmp) / "bench.db")
        engine: Any = host.plugins.engines["compressor"]
        setattr(compaction, "build_prompt", recording)  # noqa: B010 (a module attribute)
        try:
            offline = engine._summarizers(config.summarizer).primary()
            engine._summarizer = wrapper = _Capture(offline)
            replay_transcript(host, load_transcript(path))
        finally:
            setattr(compaction, "build_prompt", real)  # noqa: B010
            host.close()
    by_prompt = {text: (args, kwargs) for args, kwargs, text in built}
    for job in wrapper.jobs:
        args, kwargs = by_prompt[job.prompt]  # the job sent carries today's rendering
        pairs.append((job.prompt, old_build_prompt(*args, **kwargs)))
    return pairs


def _turns_tokens(prompt: str) -> int:
    """Tokens of the rendered source turns (after the last TURNS heading)."""
    return count_text(re.split(r"TURNS TO (?:SUMMARIZE|INCORPORATE):\n", prompt)[-1])


def breakdown(prompts: list[str]) -> dict[str, int]:
    """Tokens of the prompts by part: fixed instructions, previous summary, source by kind."""
    parts: dict[str, int] = {}

    def add(key: str, text: str) -> None:
        parts[key] = parts.get(key, 0) + count_text(text)

    for text in prompts:
        if "\n\nNEW TURNS TO INCORPORATE:\n" in text:
            head, source = text.split("\n\nNEW TURNS TO INCORPORATE:\n", 1)
            fixed, previous = head.split("PREVIOUS SUMMARY:\n", 1)
            add("previous summary", previous)
        else:
            fixed, source = text.split("TURNS TO SUMMARIZE:\n", 1)
        add("instructions (preamble, rule, sections, target)", fixed)
        for piece in _SOURCE_SPLIT.split(source):
            kind = re.match(r"\[(USER|ASSISTANT|SYSTEM|TOOL CALL|TOOL RESULT)", piece)
            add(f"source: {kind.group(1).lower() if kind else 'other'}", piece)
    return parts


def main() -> int:
    targets = Targets("summary_prompt")
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    print("## summary prompt\n")
    if not files:
        print(f"No transcripts found at `{TRANSCRIPTS}` (set HERMES_HOST_TRANSCRIPTS).")
        return targets.finish()
    print(
        f"Every job the compressor gave its summariser while {len(files)} real transcripts "
        "were replayed through `ContextHost` (offline summariser), its prompt rendered with "
        "today's `build_prompt` and with 869f2f1's on the same middle. Tokens by "
        "`hermes_host.tokens.count_text`.\n"
    )
    print("| window | prompts | median old | median new | median old/new | pooled old | "
          "pooled new | pooled old/new | turns only: pooled old/new |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    parts_by_window: dict[int, dict[str, int]] = {}
    for window in WINDOWS:
        pairs = [pair for path in files for pair in capture(window, path)]
        new = [count_text(n) for n, _ in pairs]
        old = [count_text(o) for _, o in pairs]
        if not pairs:
            print(f"| {window:,} | 0 | — | — | — | — | — | — | — |")
            continue
        med_new, med_old = statistics.median(new), statistics.median(old)
        turns_new = sum(_turns_tokens(n) for n, _ in pairs)
        turns_old = sum(_turns_tokens(o) for _, o in pairs)
        check = targets.check(f"pooled_old_over_new_{window // 1000}k", sum(old) / sum(new),
                              ">=", TARGET_RATIO, fmt="{:.2f}")
        print(f"| {window:,} | {len(pairs)} | {med_old:,.0f} | {med_new:,.0f} | "
              f"{med_old / med_new:.2f} | {sum(old):,} | {sum(new):,} | "
              f"{check.shown_value} (target {check.target_text}) | "
              f"{turns_old / turns_new:.2f} |")
        parts_by_window[window] = breakdown([n for n, _ in pairs])
    print("\nWhere the new prompts' tokens go (pooled):\n")
    print("| part | " + " | ".join(f"{w // 1000}K" for w in parts_by_window) + " |")
    print("|---|" + "---:|" * len(parts_by_window))
    keys = sorted({k for parts in parts_by_window.values() for k in parts})
    for key in keys:
        cells = []
        for parts in parts_by_window.values():
            total = sum(parts.values())
            cells.append(f"{parts.get(key, 0):,} ({parts.get(key, 0) / total:.0%})")
        print(f"| {key} | " + " | ".join(cells) + " |")
    print()
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
