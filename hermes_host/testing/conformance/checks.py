"""The kit's checks of one answer: every host rule a hook's result can break, each named by
its check (the table in :mod:`hermes_host.testing.conformance`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hermes_host.fence import RESULT_TYPES
from hermes_host.messages import check_invariants, sanitize_for_wire
from hermes_host.models import Message

__all__ = ["CHECKS", "Problem", "result_problems"]

CHECKS: tuple[str, ...] = (
    "fence",
    "time_limit",
    "result_type",
    "alternation",
    "tool_pairs",
    "summary_count",
    "wire_keys",
    "system_prompt",
    "no_mutation",
    "deterministic",
)
_RULE_TO_CHECK = {
    "alternation": "alternation",
    "orphan_call": "tool_pairs",
    "orphan_result": "tool_pairs",
    "summary_count": "summary_count",
    "structure": "result_type",
}


@dataclass(frozen=True)
class Problem:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.detail}"


def _nested_private_keys(messages: list[Message]) -> list[str]:
    found = []
    for i, message in enumerate(messages):
        for key in message:
            if isinstance(key, str) and key.startswith("_"):
                found.append(f"message {i}: top-level key {key!r}")
        for j, call in enumerate(message.get("tool_calls") or []):
            if isinstance(call, dict):
                for key, value in call.items():
                    if isinstance(key, str) and key.startswith("_"):
                        found.append(f"message {i}: tool_calls[{j}].{key}")
                    if isinstance(value, dict):
                        found += [
                            f"message {i}: tool_calls[{j}].{key}.{k}"
                            for k in value
                            if isinstance(k, str) and k.startswith("_")
                        ]
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict):
                    found += [
                        f"message {i}: content[{j}].{k}"
                        for k in part
                        if isinstance(k, str) and k.startswith("_")
                    ]
    return found


def _system_prompt_problem(before: list[Message], after: list[Message]) -> str | None:
    had = bool(before) and before[0].get("role") == "system"
    has = bool(after) and isinstance(after[0], dict) and after[0].get("role") == "system"
    if had and not has:
        return "the system prompt (message 0) was removed"
    if has and not had:
        return "a system message was added at index 0 where the window had none"
    if had and sanitize_for_wire([after[0]]) != sanitize_for_wire([before[0]]):
        return "the system prompt (message 0) was changed; it is immutable (R-1.3)"
    return None


def result_problems(hook: str, value: Any, request: BaseModel) -> list[Problem]:
    """Every rule the answer ``value`` breaks (``None`` is always a valid answer)."""
    if value is None:
        return []
    model = RESULT_TYPES[hook]
    if isinstance(value, dict):
        return [
            Problem(
                "result_type",
                f"returned a plain dict, expected {model.__name__} or None (build the result "
                f"with {model.__name__}(...); the host never adopts a dict)",
            )
        ]
    if not isinstance(value, model):
        return [
            Problem(
                "result_type",
                f"returned {type(value).__name__}, expected {model.__name__} or None",
            )
        ]
    messages = getattr(value, "messages", None)
    if messages is None:
        return []
    if not isinstance(messages, list):
        return [Problem("result_type", f"messages is {type(messages).__name__}, not a list")]
    problems = [
        Problem(_RULE_TO_CHECK.get(v.rule, "result_type"), str(v))
        for v in check_invariants(messages)
    ]
    if any(p.check == "result_type" for p in problems):
        return problems  # structure is broken: the other checks would only add noise
    try:
        wire = sanitize_for_wire(messages)
        json.dumps(wire, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(Problem("wire_keys", f"messages are not JSON-serialisable: {exc}"))
    else:
        for where in _nested_private_keys(wire):
            problems.append(
                Problem("wire_keys", f"{where} survives sanitize_for_wire (strict gateways "
                        "reject unknown fields; only top-level '_' keys are stripped)")
            )
    change = _system_prompt_problem(getattr(request, "messages", []), messages)
    if change:
        problems.append(Problem("system_prompt", change))
    return problems


def _canonical(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, default=repr)
