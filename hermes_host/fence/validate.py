"""Output validation: what each hook must return, and the window invariants (R-0.4, R-1.4).

The result must be an instance of the hook's result type (a plain ``dict`` is refused as
``invalid``, even one that would validate: an engine builds the model) and, when it carries
``messages``, satisfy the window invariants (alternation, tool pairs, at most one summary)
and leave the system prompt exactly as it was.  The runner validates the host's own plain
copy of the result (:func:`hermes_host.fence.snapshot.plain`), never the engine's objects.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hermes_host.fence.provenance import Provenance
from hermes_host.hookspecs import MEMORY_HOOKS
from hermes_host.messages import check_invariants
from hermes_host.models import CompressDecision, CompressResult, PruneResult, SelectResult

__all__ = [
    "IGNORED_HOOKS", "RESULT_TYPES", "TEXT_HOOKS", "check_result", "system_prompt_change",
    "type_problem",
]

RESULT_TYPES: dict[str, type[BaseModel]] = {
    "should_compress": CompressDecision,
    "compress": CompressResult,
    "select_context": SelectResult,
    "prune_tool_results_only": PruneResult,
}
"""What each lifecycle hook must return (or ``None``)."""

TEXT_HOOKS = frozenset({"on_pre_compress", "on_system_prompt"})
IGNORED_HOOKS = frozenset(MEMORY_HOOKS) - TEXT_HOOKS


def type_problem(hook: str, value: Any) -> str | None:
    """Why ``value`` (what the plugin returned, not None) has the wrong type for ``hook``."""
    if hook in TEXT_HOOKS:
        if isinstance(value, str):
            return None
        return f"returned {type(value).__name__}, expected str or None"
    model = RESULT_TYPES.get(hook)
    if model is None:
        return None
    if isinstance(value, dict):
        return (
            f"returned a plain dict, expected {model.__name__} or None (build the result "
            f"with {model.__name__}(...); a dict is never adopted)"
        )
    if not isinstance(value, model):
        return f"returned {type(value).__name__}, expected {model.__name__} or None"
    return None


def system_prompt_change(request: BaseModel, messages: list[Any]) -> str | None:
    """Why ``messages`` alters the request's system prompt, or None when it does not."""
    before = getattr(request, "messages", None)
    if not isinstance(before, list):
        return None
    had = bool(before) and isinstance(before[0], dict) and before[0].get("role") == "system"
    has = bool(messages) and messages[0].get("role") == "system"
    if had and not has:
        return "the system prompt (message 0) was removed"
    if has and not had:
        return "a system prompt was added at message 0"
    if had and has and messages[0].get("content") != before[0].get("content"):
        return "the system prompt (message 0) was changed; it is immutable (R-1.3)"
    return None


def check_result(hook: str, value: Any, request: BaseModel) -> tuple[Provenance, Any, str | None]:
    """Check the host's copy ``value`` (already rebuilt as the hook's result type) against
    the hook's contract: (provenance, value, problem)."""
    if value is None:
        return Provenance.NONE, None, None
    if hook in IGNORED_HOOKS:
        return Provenance.OK, None, None
    problem = type_problem(hook, value)
    if problem is not None:
        return Provenance.INVALID, None, problem
    model = RESULT_TYPES.get(hook)
    if model is not None and "messages" in type(value).model_fields:
        messages = getattr(value, "messages", None)
        if not isinstance(messages, list):
            return (
                Provenance.INVALID,
                None,
                f"{model.__name__}.messages is {type(messages).__name__}, expected a list",
            )
        violations = check_invariants(messages)
        if violations:
            shown = "; ".join(str(v) for v in violations[:5])
            more = f"; and {len(violations) - 5} more" if len(violations) > 5 else ""
            return (
                Provenance.INVALID,
                None,
                f"{len(violations)} window invariant violation(s): {shown}{more}",
            )
        change = system_prompt_change(request, messages)
        if change:
            return Provenance.INVALID, None, change
    return Provenance.OK, value, None
