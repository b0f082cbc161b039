"""Step 1: prune old tool results, no LLM (R-6.1, R-6.8, R-11.1).

Four deterministic passes, each returning a new list (the input is never mutated):

* :func:`remove_blank_echoes` — blank platform echo user messages go first, before any
  summary logic, and stay gone even when the compression is later aborted (R-6.8);
* :func:`dedup_results` — identical tool outputs (at least ``dedup_min_chars`` long): only the
  newest full copy is kept, older copies become an informative one-liner;
* :func:`prune_results` — outputs in a range (outside the protected tail) become informative
  one-liners (:mod:`hermes_compressor.describe`);
* :func:`truncate_call_args` — long ``tool_call`` arguments of assistant messages outside the
  tail are clipped, JSON-aware (long string values shortened, structure kept); arguments that
  are not valid JSON are left untouched, and a *pending* call (no result yet) is never
  clipped — the agent may still be executing it;
* :func:`pressure_pass` — when the protected tail exceeds 1.5 × its budget, large *finished*
  outputs inside it (the model already answered after them) are demoted to a one-liner plus
  a short recent excerpt, oldest first, until the tail fits.

:func:`prune_step` runs the last four in order, as the compression pass does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.messages import text_of
from hermes_host.models import Message

from hermes_compressor.boundaries import SOFT_CEILING
from hermes_compressor.describe import describe_result
from hermes_compressor.options import EngineOptions

__all__ = [
    "CallInfo",
    "PruneStats",
    "call_index",
    "dedup_results",
    "pressure_pass",
    "prune_results",
    "prune_step",
    "remove_blank_echoes",
    "truncate_call_args",
]

PRUNED_MARK = "[pruned tool output] "
DUPLICATE_NOTE = " (identical output repeated later; the newest copy is kept)"


@dataclass(slots=True)  # one per tool call of the window: no __dict__ each
class CallInfo:
    name: str
    arguments: Any


@dataclass
class PruneStats:
    pruned: int = 0
    tokens_saved: int = 0


def call_index(messages: Sequence[Message]) -> dict[str, CallInfo]:
    """Every tool call id → its name and raw arguments."""
    index: dict[str, CallInfo] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                fn = call.get("function") or {}
                index[call["id"]] = CallInfo(str(fn.get("name") or "tool"), fn.get("arguments"))
    return index


def _is_blank_echo(message: Message) -> bool:
    if message.get("role") != "user" or message.get("tool_calls"):
        return False
    content = message.get("content")
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return all(
            isinstance(p, dict) and p.get("type") == "text" and not str(p.get("text", "")).strip()
            for p in content
        )
    return False


def remove_blank_echoes(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Drop user messages with no content (R-6.8); returns (copy, removed)."""
    kept = [m for m in messages if not _is_blank_echo(m)]
    return kept, len(messages) - len(kept)


def _describe(
    message: Message, calls: dict[str, CallInfo], memo: dict[tuple[Any, ...], str] | None = None
) -> str:
    info = calls.get(str(message.get("tool_call_id")))
    name = info.name if info else message.get("name")
    args = info.arguments if info else None
    text = text_of(message)
    if memo is None or not isinstance(args, str | None) or not isinstance(name, str | None):
        return describe_result(name, args, text)
    key = (name, args, text)  # the same call and output met again is described once
    line = memo.get(key)
    if line is None:
        line = memo[key] = describe_result(name, args, text)
    return line


def _replace(message: Message, content: str) -> Message:
    new = dict(message)
    new["content"] = content
    return new


def _is_pruned(message: Message) -> bool:
    return text_of(message).startswith(PRUNED_MARK)


def dedup_results(
    messages: Sequence[Message],
    count: Callable[[Message], int],
    *,
    start: int,
    min_chars: int,
    stats: PruneStats,
    calls: dict[str, CallInfo] | None = None,
) -> list[Message]:
    """Replace older copies of identical tool outputs (from ``start``) with a one-liner
    (``calls``: the :func:`call_index` of ``messages``, when the caller has it already)."""
    out = list(messages)
    if calls is None:
        calls = call_index(messages)
    seen: set[str] = set()
    memo: dict[tuple[Any, ...], str] = {}
    for i in range(len(out) - 1, start - 1, -1):
        message = out[i]
        if message.get("role") != "tool" or _is_pruned(message):
            continue
        text = text_of(message)
        if len(text) < min_chars:
            continue
        if text in seen:
            new = _replace(message, PRUNED_MARK + _describe(message, calls, memo) + DUPLICATE_NOTE)
            stats.pruned += 1
            stats.tokens_saved += count(message) - count(new)
            out[i] = new
        else:
            seen.add(text)
    return out


def prune_results(
    messages: Sequence[Message],
    count: Callable[[Message], int],
    *,
    start: int,
    end: int,
    min_chars: int,
    stats: PruneStats,
    calls: dict[str, CallInfo] | None = None,
) -> list[Message]:
    """Replace tool outputs in ``[start, end)`` of at least ``min_chars`` with one-liners
    (``calls``: the :func:`call_index` of ``messages``, when the caller has it already)."""
    out = list(messages)
    if calls is None:
        calls = call_index(messages)
    memo: dict[tuple[Any, ...], str] = {}
    for i in range(start, min(end, len(out))):
        message = out[i]
        if message.get("role") != "tool" or _is_pruned(message):
            continue
        if len(text_of(message)) < min_chars or not isinstance(message.get("content"), str):
            continue
        new = _replace(message, PRUNED_MARK + _describe(message, calls, memo))
        saved = count(message) - count(new)
        if saved <= 0:
            continue
        stats.pruned += 1
        stats.tokens_saved += saved
        out[i] = new
    return out


def _clip_value(value: Any, keep: int) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > keep:
        return value[:keep] + f"…[truncated {len(value) - keep:,} chars]", True
    if isinstance(value, dict):
        changed = False
        result = {}
        for key, item in value.items():
            result[key], did = _clip_value(item, keep)
            changed = changed or did
        return result, changed
    if isinstance(value, list):
        items = [_clip_value(item, keep) for item in value]
        return [v for v, _ in items], any(d for _, d in items)
    return value, False


def truncate_call_args(
    messages: Sequence[Message],
    *,
    start: int,
    end: int,
    max_chars: int,
    keep_chars: int,
) -> tuple[list[Message], int]:
    """Clip long tool-call arguments of assistant messages in ``[start, end)``.

    Returns (copy, calls clipped).  Pending calls (no ``tool`` result anywhere in the list)
    and arguments that are not valid JSON are never touched.
    """
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    out = list(messages)
    clipped = 0
    for i in range(start, min(end, len(out))):
        message = out[i]
        calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not calls:
            continue
        new_calls = []
        changed = False
        for call in calls:
            fn = call.get("function") or {}
            raw = fn.get("arguments")
            if call.get("id") not in answered or not isinstance(raw, str) or len(raw) <= max_chars:
                new_calls.append(call)
                continue
            try:
                parsed = json.loads(raw)
                value, did = _clip_value(parsed, keep_chars)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to walk
                new_calls.append(call)
                continue
            if not did:
                new_calls.append(call)
                continue
            new_fn = dict(fn)
            new_fn["arguments"] = json.dumps(value, ensure_ascii=False)
            new_call = dict(call)
            new_call["function"] = new_fn
            new_calls.append(new_call)
            changed = True
            clipped += 1
        if changed:
            new_message = dict(message)
            new_message["tool_calls"] = new_calls
            out[i] = new_message
    return out, clipped


def pressure_pass(
    messages: Sequence[Message],
    count: Callable[[Message], int],
    *,
    tail_start: int,
    budget: int,
    excerpt_chars: int,
    stats: PruneStats,
) -> list[Message]:
    """Demote large finished outputs inside an over-full tail (> 1.5 × budget), oldest first."""
    out = list(messages)
    ceiling = int(budget * SOFT_CEILING)  # the same ceiling find_cut keeps the tail under
    total = sum(count(m) for m in out[tail_start:])
    if total <= ceiling:
        return out
    calls = call_index(out)
    last_assistant = max(
        (i for i in range(len(out)) if out[i].get("role") == "assistant"), default=-1
    )
    for i in range(tail_start, len(out)):
        if total <= ceiling:
            break
        message = out[i]
        # finished = the model already answered after this output
        if message.get("role") != "tool" or i > last_assistant or _is_pruned(message):
            continue
        text = text_of(message)
        if len(text) <= excerpt_chars * 2 or not isinstance(message.get("content"), str):
            continue
        excerpt = text[-excerpt_chars:]
        new = _replace(
            message,
            PRUNED_MARK + _describe(message, calls) + "\n…recent excerpt:\n" + excerpt,
        )
        saved = count(message) - count(new)
        if saved <= 0:
            continue
        total -= saved
        stats.pruned += 1
        stats.tokens_saved += saved
        out[i] = new
    return out


def prune_step(
    messages: Sequence[Message],
    count: Callable[[Message], int],
    *,
    head_end: int,
    cut: int,
    budget: int,
    options: EngineOptions,
) -> tuple[list[Message], str | None]:
    """Step 1 as the compression pass runs it: dedup, prune and clip outside the tail
    ``[cut:]``, then relieve an over-full tail.  Indices do not move.  Returns the new list
    and a note for the result (``None`` when nothing changed)."""
    stats = PruneStats()
    calls = call_index(messages)  # dedup replaces tool results only: the calls stay the same
    out = dedup_results(messages, count, start=head_end, min_chars=options.dedup_min_chars,
                        stats=stats, calls=calls)
    out = prune_results(out, count, start=head_end, end=cut, min_chars=options.prune_min_chars,
                        stats=stats, calls=calls)
    out, clipped = truncate_call_args(out, start=head_end, end=cut,
                                      max_chars=options.max_tool_arg_chars,
                                      keep_chars=options.tool_arg_keep_chars)
    out = pressure_pass(out, count, tail_start=cut, budget=budget,
                        excerpt_chars=options.pressure_excerpt_chars, stats=stats)
    if not (stats.pruned or clipped):
        return out, None
    return out, f"pruned {stats.pruned} tool output(s), clipped {clipped} call argument(s)"
