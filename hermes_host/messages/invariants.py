"""Structure and window invariants: :func:`validate_messages` (roles, content types,
``tool_calls`` ids) and :func:`check_invariants` — role alternation (R-1.4), tool call/result
pairing (R-6.9), at most one summary block (R-6.6)."""

from __future__ import annotations

import math
import reprlib
import sys
from collections.abc import Sequence
from typing import Any

from hermes_host.messages.reading import ROLES, MessageError, Violation, is_summary, tool_call_ids
from hermes_host.models import Message

MAX_MESSAGE_DEPTH = 100
"""Deepest nesting of dicts and lists a message may hold (the message itself is level 1):
the bound a transcript line has (``hermes_host.transcripts.MAX_JSON_DEPTH``).  Deeper
values are refused at intake, not left to raise ``RecursionError`` in the copies, the
store's codec and the wire later."""


def _where(path: tuple[Any, ...]) -> str:
    """``content[0].text``; a deep path keeps its first steps (``meta[0][0]…``)."""
    out = ""
    for step in path[:4]:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            shown = reprlib.repr(step).strip("'\"")
            out += f".{shown}" if out else shown
    return (out + ("…" if len(path) > 4 else "")) or "the message"


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"is not valid Unicode text: lone surrogate U+{ord(text[exc.start]):04X} at "
            f"position {exc.start} (half of a UTF-16 pair; it has no UTF-8 form, so no "
            "store, export or provider request can carry it)"
        )
    return None


def _too_many_digits(value: int) -> bool:
    limit = sys.get_int_max_str_digits()
    return limit > 0 and abs(value) >= 10**limit


def _check_values(message: dict[str, Any], index: int) -> None:
    """Every value of ``message``, without recursion: nesting at most
    :data:`MAX_MESSAGE_DEPTH`, string keys, and text that has a UTF-8 form.  The error names
    the key path (``content[0].text``), never the text."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(message, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            problem = _text_problem(value)
            if problem is not None:
                raise MessageError(f"{_where(path)} {problem}", index)
        elif isinstance(value, dict):
            if depth > MAX_MESSAGE_DEPTH:
                raise MessageError(
                    f"{_where(path)} is nested deeper than {MAX_MESSAGE_DEPTH} levels of "
                    "objects and lists", index
                )
            for key, item in value.items():
                if not isinstance(key, str):
                    raise MessageError(
                        f"{_where(path)}: keys must be strings, got {type(key).__name__}", index
                    )
                problem = _text_problem(key)
                if problem is not None:
                    raise MessageError(f"a key of {_where(path)} {problem}", index)
                stack.append((item, depth + 1, (*path, key)))
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise MessageError(
                    f"{_where(path)} is {value}: non-finite numbers (NaN, Infinity) are not "
                    "valid JSON and cannot be stored or exported", index
                )
        elif isinstance(value, int):
            # 14,000 bits are fewer than 4,300 digits: almost every int skips the power
            if value.bit_length() > 14_000 and _too_many_digits(value):
                raise MessageError(
                    f"{_where(path)} is an integer of more than "
                    f"{sys.get_int_max_str_digits():,} digits, which cannot be written as "
                    "JSON (Python's limit on converting a number to digits)", index
                )
        elif isinstance(value, list):
            if depth > MAX_MESSAGE_DEPTH:
                raise MessageError(
                    f"{_where(path)} is nested deeper than {MAX_MESSAGE_DEPTH} levels of "
                    "objects and lists", index
                )
            stack.extend((item, depth + 1, (*path, j)) for j, item in enumerate(value))


def _check_part(part: dict[str, Any], j: int, index: int) -> None:
    """A text part's ``text`` is a string; an ``image_url`` part holds ``{"url": str}``
    (what every provider and the host's image handling read)."""
    kind = part["type"]
    if kind == "text" and not isinstance(part.get("text"), str):
        raise MessageError(
            f"content part {j} (text) needs a string 'text', not "
            f"{type(part.get('text')).__name__}", index,
        )
    if kind == "image_url":
        holder = part.get("image_url")
        if not isinstance(holder, dict) or not isinstance(holder.get("url"), str):
            raise MessageError(
                f"content part {j} (image_url) needs 'image_url': {{\"url\": \"...\"}}, not "
                f"{type(holder).__name__}" + (
                    " (a bare string is not the OpenAI format)" if isinstance(holder, str)
                    else ""), index,
            )


def _validate_one(message: Any, index: int, values: bool = True) -> None:
    if not isinstance(message, dict):
        raise MessageError(f"expected an object, got {type(message).__name__}", index)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:  # an unhashable role must not raise
        # reprlib: bounded, even for a 1,500-level list (repr would raise RecursionError)
        allowed = ", ".join(sorted(ROLES))
        raise MessageError(f"unknown role {reprlib.repr(role)}; allowed: {allowed}", index)
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise MessageError(
            f"content must be a string, a list of parts or null, not {type(content).__name__}",
            index,
        )
    if isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise MessageError(f"content part {j} must be an object with a 'type'", index)
            _check_part(part, j, index)
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise MessageError(f"'name' must be a string, not {type(name).__name__}", index)
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise MessageError("only assistant messages may carry tool_calls", index)
        if not isinstance(calls, list):
            raise MessageError("tool_calls must be a list", index)
        first_of: dict[str, int] = {}
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
                raise MessageError(f"tool_calls[{j}] needs a non-empty string 'id'", index)
            if call["id"] in first_of:  # its results could not be told apart
                raise MessageError(
                    f"tool_calls[{j}] repeats the id {reprlib.repr(call['id'])} of "
                    f"tool_calls[{first_of[call['id']]}]; call ids must be unique", index
                )
            first_of[call["id"]] = j
            fn = call.get("function")
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise MessageError(f"tool_calls[{j}].function needs a string 'name'", index)
            if not isinstance(fn.get("arguments", ""), str):
                raise MessageError(f"tool_calls[{j}].function.arguments must be a string", index)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise MessageError("a tool message needs a string 'tool_call_id'", index)
    if values:
        _check_values(message, index)


def _validate_structure(messages: Any) -> None:
    if not isinstance(messages, list):
        raise MessageError(f"expected a list of messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        _validate_one(message, i, values=False)


def validate_messages(messages: Any) -> None:
    """Raise :class:`MessageError` if ``messages`` is not a valid message list to take in.

    Structure: a known role, content a string / list of typed parts / null, a text part's
    ``text`` a string, an ``image_url`` part's ``image_url`` an object with a string ``url``,
    ``name`` a string, ``tool_calls`` with string ids and function names, a tool message's
    string ``tool_call_id``.  Values: nesting at most :data:`MAX_MESSAGE_DEPTH` levels, string
    keys, and no lone surrogate anywhere (text with no UTF-8 form, which no store, export or
    provider request can carry).  What passes can be stored, compressed and sent later; what
    would poison a session is refused here, before anything is written.
    """
    if not isinstance(messages, list):
        raise MessageError(f"expected a list of messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        _validate_one(message, i)


def check_invariants(messages: Sequence[Message], *, max_summaries: int = 1) -> list[Violation]:
    """Every broken window invariant of ``messages`` (empty list = valid).

    Alternation (R-1.4): no two consecutive ``user`` or two consecutive ``assistant``
    messages; ``system`` may only open the list.  Pairing (R-6.9): every assistant tool call
    is answered by a ``tool`` message right after it (before the next non-tool message), and
    every ``tool`` message answers such a call.  Summaries (R-6.6): at most ``max_summaries``.
    """
    violations: list[Violation] = []
    try:
        # Structure only: a window already stored (by an older version) may hold text that
        # validate_messages now refuses at intake; its engines' results stay acceptable.
        _validate_structure(list(messages))
    except MessageError as exc:
        return [Violation("structure", exc.index, exc.reason)]

    previous_role: str | None = None
    pending: dict[str, int] = {}  # open call id -> index of its assistant message
    summaries = 0
    for i, message in enumerate(messages):
        role = message["role"]
        if is_summary(message):
            summaries += 1
        if role != "tool" and pending:
            for call_id, at in pending.items():
                violations.append(
                    Violation("orphan_call", at, f"tool call {call_id!r} has no result")
                )
            pending = {}
        if role == "system":
            if i != 0:
                violations.append(Violation("alternation", i, "system message after the start"))
        elif role == "tool":
            answered = message.get("tool_call_id")
            if answered in pending:
                del pending[answered]
            else:
                violations.append(
                    Violation("orphan_result", i, f"tool result {answered!r} answers no open call")
                )
        elif role in ("user", "assistant") and previous_role == role:
            violations.append(Violation("alternation", i, f"two consecutive {role} messages"))
        if role == "assistant":
            for call_id in tool_call_ids(message):
                pending[call_id] = i
        previous_role = role
    for call_id, at in pending.items():
        violations.append(Violation("orphan_call", at, f"tool call {call_id!r} has no result"))
    if summaries > max_summaries:
        violations.append(
            Violation(
                "summary_count", None, f"{summaries} summary blocks (at most {max_summaries})"
            )
        )
    return violations
