"""Structure and window invariants: :func:`validate_messages` (roles, content types,
``tool_calls`` ids) and :func:`check_invariants` — role alternation (R-1.4), tool call/result
pairing (R-6.9), at most one summary block (R-6.6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_host.messages.reading import ROLES, MessageError, Violation, is_summary, tool_call_ids
from hermes_host.models import Message


def _validate_one(message: Any, index: int) -> None:
    if not isinstance(message, dict):
        raise MessageError(f"expected an object, got {type(message).__name__}", index)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:  # an unhashable role must not raise
        raise MessageError(
            f"unknown role {role!r}; allowed: {', '.join(sorted(ROLES))}", index
        )
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
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise MessageError("only assistant messages may carry tool_calls", index)
        if not isinstance(calls, list):
            raise MessageError("tool_calls must be a list", index)
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
                raise MessageError(f"tool_calls[{j}] needs a non-empty string 'id'", index)
            fn = call.get("function")
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise MessageError(f"tool_calls[{j}].function needs a string 'name'", index)
            if not isinstance(fn.get("arguments", ""), str):
                raise MessageError(f"tool_calls[{j}].function.arguments must be a string", index)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise MessageError("a tool message needs a string 'tool_call_id'", index)


def validate_messages(messages: Any) -> None:
    """Raise :class:`MessageError` if ``messages`` is not a structurally valid message list."""
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
        validate_messages(list(messages))
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
