"""The request bound (issue 28): no request the host builds is larger than the request budget,
``model.context_length - model.max_output_tokens`` (the reservation capped at half the window,
:func:`reply_reservation`).

Compression keeps the *window* small; this is the last line for the *request*.  When a request
is still over budget — a newest tool group larger than the budget, a summariser down, a guard
blocking, ``end_turn`` never called — :func:`fit` condenses a copy of it, in order of least
harm, until it fits:

1. old tool outputs (every one but the newest tool group's), oldest first, become a one-line
   note of what they were;
2. the remaining tool outputs, largest first, become a head-and-tail excerpt that names the
   stored original;
3. other long texts (user and assistant messages, never the system prompt) and tool-call
   arguments, largest message first (a summary last), become head-and-tail excerpts — an
   assistant message's text and its calls' arguments the larger first; the arguments are
   cut by the window intake's own helper (:func:`hermes_host.session.excerpts.clip_arguments`:
   they stay JSON when their bulk is in string values, at their shortest JSON form when the
   budget is tighter than that), the call's ``id``, its function name and its pairing with
   the result never change; arguments still too large (their bulk not in strings) then
   become a raw head-and-tail excerpt, no longer JSON, and :class:`Condensed` says so;
4. the oldest exchanges are left out of the request (never the system prompt, never the
   newest user turn).

Only the request changes: the store and the window keep every message whole, so the next
compression still sees the originals.  :class:`Condensed` says what was done; the session
turns it into an event, ``status()["request_bound"]`` and a plain-output warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.messages import is_summary, text_of
from hermes_host.models import Message
from hermes_host.session.excerpts import MIN_EXCERPT_CHARS, clip_arguments, excerpt
from hermes_host.tokens import count_text

__all__ = ["Condensed", "fit", "reply_reservation", "request_budget"]

_REQUEST_SCOPE = "this request to fit the model's window"


def reply_reservation(context_length: int, max_output_tokens: int) -> int:
    """Tokens kept free for the reply: ``max_output_tokens``, at most half the window — the
    same reservation the default compressor's trigger makes (a default of 8,192 on a
    2,000-token test window must not leave the request no room at all)."""
    return min(max(0, max_output_tokens), context_length // 2)


def request_budget(context_length: int, max_output_tokens: int) -> int:
    """Tokens a request may hold: the window less :func:`reply_reservation`."""
    return max(1, context_length - reply_reservation(context_length, max_output_tokens))


@dataclass
class Condensed:
    """What :func:`fit` did to one request."""

    budget: int
    tokens_before: int
    tokens_after: int
    one_liners: int = 0
    """Old tool outputs replaced by a one-line note."""
    excerpts: int = 0
    """Tool outputs cut to a head-and-tail excerpt."""
    clipped: int = 0
    """Other long texts cut to a head-and-tail excerpt."""
    arguments: int = 0
    """Tool calls whose arguments were cut to a head-and-tail excerpt."""
    raw_arguments: int = 0
    """Of those, calls whose excerpt is not JSON (their bulk was not in string values, or
    they were not JSON)."""
    dropped: int = 0
    """Oldest messages left out of this request."""

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.budget

    def describe(self) -> str:
        """One plain line: what was condensed and whether the request fits now."""
        done = [
            f"{n} {what}"
            for n, what in (
                (self.one_liners, "old tool output(s) to a one-line note"),
                (self.excerpts, "tool output(s) to a head-and-tail excerpt"),
                (self.clipped, "long message(s) to a head-and-tail excerpt"),
                (self.arguments, "tool call(s)' arguments to a head-and-tail excerpt"
                 + (f" ({self.raw_arguments} no longer JSON)" if self.raw_arguments else "")),
                (self.dropped, "oldest message(s) left out"),
            )
            if n
        ]
        head = (
            f"request condensed to fit the budget: {self.tokens_before:,} -> "
            f"{self.tokens_after:,} tokens (budget {self.budget:,})"
        )
        tail = "; the store keeps every original whole"
        if not self.fits:
            tail += ("; it still does not fit: what is left (the system prompt, the newest "
                     "turn at its shortest excerpts, non-text parts) exceeds it")
        return head + (": " + ", ".join(done) if done else "") + tail

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "fits": self.fits,
            "one_liners": self.one_liners,
            "excerpts": self.excerpts,
            "clipped": self.clipped,
            "arguments": self.arguments,
            "raw_arguments": self.raw_arguments,
            "dropped": self.dropped,
        }


def _newest_group(request: Sequence[Message]) -> set[int]:
    """Indexes of the newest tool group's results: the ``tool`` messages answering the last
    assistant message that made tool calls."""
    for i in range(len(request) - 1, -1, -1):
        message = request[i]
        if message.get("role") == "assistant" and message.get("tool_calls"):
            group = set()
            j = i + 1
            while j < len(request) and request[j].get("role") == "tool":
                group.add(j)
                j += 1
            return group
    return set()


def _call_names(request: Sequence[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in request:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                fn = call.get("function")
                name = fn.get("name") if isinstance(fn, dict) else None
                names[call["id"]] = str(name or "tool")
    return names


def _one_liner(message: Message, name: str) -> str:
    text = text_of(message)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > 120:
        first = first[:117] + "..."
    lines = text.count("\n") + 1
    shown = f": {first}" if first else ""
    return (
        f"[{name}] output of {len(text):,} characters, {lines:,} lines{shown} — left out of "
        "this request to fit the model's window; the store keeps it whole"
    )


def _with_text(message: Message, text: str) -> Message:
    new = dict(message)
    new["content"] = text
    return new


def _longest_text(message: Message) -> tuple[str, int | None]:
    """The text to excerpt: the content when it is a string, else the longest text part of
    a list of parts (with its index); ``("", None)`` when there is none."""
    content = message.get("content")
    if isinstance(content, str):
        return content, None
    best, at = "", None
    if isinstance(content, list):
        for j, part in enumerate(content):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                if len(part["text"]) > len(best):
                    best, at = part["text"], j
    return best, at


def _with_part(message: Message, text: str, at: int | None) -> Message:
    if at is None:
        return _with_text(message, text)
    parts = list(message["content"])
    parts[at] = {**parts[at], "text": text}
    new = dict(message)
    new["content"] = parts
    return new


def _arguments(message: Message) -> list[str]:
    """The string ``arguments`` of ``message``'s tool calls."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [call["function"]["arguments"] for call in calls
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
            and isinstance(call["function"].get("arguments"), str)]


def _with_arguments(
    message: Message, keep: int, floor: bool
) -> tuple[Message, list[int]] | None:
    """``message`` with its tool calls' arguments cut to about ``keep`` characters together
    — the shorter calls whole while they fit their share, the longer ones sharing what is
    left — and the indexes of the calls cut; ``None`` when none is.  Each call is cut by the
    window intake's helper (:func:`hermes_host.session.excerpts.clip_arguments`, ``floor``
    passed on), its ``id`` and function name unchanged."""
    calls = list(message["tool_calls"])
    at = sorted((j for j, call in enumerate(calls)
                 if isinstance(call, dict) and isinstance(call.get("function"), dict)
                 and isinstance(call["function"].get("arguments"), str)),
                key=lambda j: len(calls[j]["function"]["arguments"]))
    left, cut = keep, []
    for n, j in enumerate(at):
        share = max(0, left) // (len(at) - n)
        fn = calls[j]["function"]
        arguments = fn["arguments"]
        if len(arguments) <= share:
            left -= len(arguments)
            continue
        left -= share
        where = f"the arguments of tool call {calls[j].get('id')}"
        shorter = clip_arguments(arguments, share, where, _REQUEST_SCOPE, floor=floor)
        if shorter != arguments:
            calls[j] = {**calls[j], "function": {**fn, "arguments": shorter}}
            cut.append(j)
    if not cut:
        return None
    new = dict(message)
    new["tool_calls"] = calls
    return new, cut


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def fit(
    request: Sequence[Message],
    budget: int,
    count: Callable[[Message], int],
    *,
    tokens: int | None = None,
) -> tuple[list[Message], Condensed | None]:
    """``request`` condensed until it is at most ``budget`` tokens (see the module docstring);
    ``(request, None)`` when it fits as it is.  ``tokens`` is its count when the caller has
    it (a request that fits then costs nothing more).  Never changes a message in place:
    condensed messages are new dicts."""
    out = list(request)
    if tokens is not None and tokens <= budget:
        return out, None
    counts = [count(m) for m in out]
    total = sum(counts)
    if total <= budget:
        return out, None
    report = Condensed(budget=budget, tokens_before=total, tokens_after=total)

    def replace(i: int, message: Message, new_count: int | None = None) -> None:
        nonlocal total
        if new_count is None:
            new_count = count(message)
        total += new_count - counts[i]
        counts[i] = new_count
        out[i] = message

    names = _call_names(out)
    newest = _newest_group(out)
    # 1. old tool outputs -> a one-line note, oldest first
    for i, message in enumerate(out):
        if total <= budget:
            break
        if message.get("role") != "tool" or i in newest:
            continue
        line = _one_liner(message, names.get(str(message.get("tool_call_id")), "tool"))
        if count(_with_text(message, line)) < counts[i]:
            replace(i, _with_text(message, line))
            report.one_liners += 1
    # 2. the remaining tool outputs, and 3. other long texts and tool-call arguments (the
    # summary block last), each largest first: the one large message is cut before many
    # small ones are
    tools = sorted((i for i, m in enumerate(out) if m.get("role") == "tool"),
                   key=lambda i: -counts[i])
    others = sorted((i for i, m in enumerate(out) if m.get("role") in ("user", "assistant")),
                    key=lambda i: (is_summary(out[i]), -counts[i]))

    def cut_text(i: int, is_tool: bool = False) -> None:
        message = out[i]
        text, at = _longest_text(message)
        if len(text) <= MIN_EXCERPT_CHARS:
            return
        # keep the share of the text that brings the request down to the budget
        over = total - budget
        chars_per_token = len(text) / max(1, count_text(text))
        keep = int(len(text) - (over + 60) * chars_per_token)
        call = message.get("tool_call_id")
        where = f"this output (tool call {call})" if is_tool and call else "this message"
        condensed = excerpt(text, keep, where, _REQUEST_SCOPE)
        new = _with_part(message, condensed, at)
        new_count = count(new)
        if condensed != text and new_count < counts[i]:
            replace(i, new, new_count)
            if is_tool:
                report.excerpts += 1
            else:
                report.clipped += 1

    cut_calls: set[tuple[int, int]] = set()  # (message, call) of every call cut

    def cut_arguments(i: int, floor: bool = True) -> None:
        """The tool calls' arguments of ``out[i]``, cut from the request's originals to the
        share that brings the request to the budget: with ``floor`` JSON stays JSON at its
        shortest, else a raw excerpt where JSON cannot get there (the last resort), taken
        only when it frees a quarter of the message at least — the bulk was not in strings,
        not a few dozen characters of JSON at its shortest."""
        if not _arguments(out[i]):
            return
        source = {**out[i], "tool_calls": request[i]["tool_calls"]}
        original = _arguments(source)
        chars = sum(len(a) for a in original)
        if chars <= MIN_EXCERPT_CHARS:
            return
        chars_per_token = chars / max(1, sum(count_text(a) for a in original))
        now = sum(count_text(a) for a in _arguments(out[i]))
        keep = int((now - (total - budget + 60)) * chars_per_token)
        best: tuple[Message, list[int], int] | None = None
        for _ in range(3):  # the kept head and tail may be denser than the average
            done = _with_arguments(source, keep, floor)
            if done is None:
                break
            new, cut = done
            new_count = count(new)
            if new_count >= (counts[i] if floor else counts[i] * 3 // 4):
                break
            best = (new, cut, new_count)
            after = total - counts[i] + new_count
            if after <= budget or keep <= MIN_EXCERPT_CHARS:
                break
            keep -= int((after - budget + 60) * chars_per_token)
        if best is not None:
            replace(i, best[0], best[2])
            cut_calls.update((i, j) for j in best[1])

    for i in tools:
        if total <= budget:
            break
        cut_text(i, True)
    for i in others:
        if total <= budget:
            break
        # an assistant message's text and its calls' arguments: the larger first
        text_first = len(_longest_text(out[i])[0]) >= sum(len(a) for a in _arguments(out[i]))
        for step in ((cut_text, cut_arguments) if text_first else (cut_arguments, cut_text)):
            if total > budget:
                step(i)
    # 3b. arguments whose bulk is not in strings: a raw excerpt, no longer JSON (a framework
    # that parses them cannot), before any turn is left out
    for i in sorted((i for i in others if _arguments(out[i])), key=lambda i: -counts[i]):
        if total <= budget:
            break
        cut_arguments(i, floor=False)
    report.arguments = len(cut_calls)
    report.raw_arguments = sum(
        1 for i, j in cut_calls if not _is_json(out[i]["tool_calls"][j]["function"]["arguments"])
    )
    # 4. leave the oldest exchanges out: from just after the system prompt, whole user turns
    if total > budget:
        start = 1 if out and out[0].get("role") == "system" else 0
        # a user message starts a turn: cutting there splits no tool call from its result
        users = [i for i in range(start + 1, len(out)) if out[i].get("role") == "user"]
        cut = start
        for boundary in users:
            cut = boundary
            if total - sum(counts[start:cut]) <= budget:
                break
        if cut > start:
            report.dropped = cut - start
            total -= sum(counts[start:cut])
            del out[start:cut]
            del counts[start:cut]
    report.tokens_after = total
    return out, report
