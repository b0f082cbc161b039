"""From what came back to a verdict: the host's own copy of a result, or why it is refused.

Both isolation modes end here.  A thread worker hands back the plugin's own object, which is
turned into plain data (:func:`~hermes_host.fence.snapshot.plain`: measured against
``fence.max_result_bytes``, inside the deadline); a worker process hands back that plain
data already, as JSON.  Either way the host then rebuilds the hook's result type from the
data (pydantic validates every field again: an engine that mutated its model after building
it gains nothing) and checks the window invariants on *that* object.  The deadline is
re-checked when the result is in hand and again after validation, so a result the host
finished checking late is a ``timeout`` — never adopted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from hermes_host.fence.errors import redact_request_text
from hermes_host.fence.frozen import FrozenDict, Unfreezable, freeze
from hermes_host.fence.isolation import Outcome
from hermes_host.fence.provenance import Provenance
from hermes_host.fence.snapshot import NotPlainData, PastDeadline, ResultTooLarge, plain
from hermes_host.fence.validate import (
    IGNORED_HOOKS,
    RESULT_TYPES,
    check_result,
    system_prompt_change,
    type_problem,
)
from hermes_host.fence.windows import Splice, Window, remember, window_of

__all__ = [
    "LATE_CHECK",
    "LATE_RETURN",
    "Verdict",
    "checker",
    "from_process",
    "from_thread",
    "late",
    "raised",
    "validated",
]

LATE_RETURN = "returned after its deadline"
LATE_CHECK = "its result was still being checked by the host at the deadline"


@dataclass(frozen=True)
class Verdict:
    provenance: Provenance
    value: Any = None
    error: str | None = None  # the text after "plugin 'x' hook 'y' "
    error_type: str | None = None
    logged: str | None = None  # a traceback for the log


def _invalid(problem: str) -> Verdict:
    return Verdict(Provenance.INVALID, None, f"returned an invalid result: {problem}",
                   "InvalidResult")


def late(what: str, timeout: float) -> Verdict:
    return Verdict(
        Provenance.TIMEOUT, None,
        f"{what} ({timeout:g}s); its result is discarded", "TimeoutError",
    )


def raised(type_name: str, text: str, request: BaseModel, logged: str | None) -> Verdict:
    message = redact_request_text(text, request)
    detail = f"{type_name}: {message}" if message else type_name
    return Verdict(Provenance.ERROR, None, f"raised {detail}", type_name, logged)


def from_thread(
    hook: str,
    raw: Any,
    request: BaseModel,
    *,
    cap: int,
    deadline: float,
    timer: Callable[[], float],
    timeout: float,
) -> Verdict | tuple[Any] | _Spliced:
    """The plugin's own object → the verdict, ``(data,)`` to be rebuilt by :func:`validated`,
    or a splice of the request's window (only the changed messages copied)."""
    if raw is None:
        return Verdict(Provenance.NONE)
    if hook in IGNORED_HOOKS:
        return Verdict(Provenance.OK)
    problem = type_problem(hook, raw)
    if problem is not None:
        return _invalid(problem)
    if hook not in RESULT_TYPES and not isinstance(raw, str):
        return (raw,)  # a hookspec the fence has no contract for: passed through
    window = _request_window(request)
    try:
        if window is not None:
            spliced = _splice(raw, window, cap=cap, deadline=deadline, timer=timer)
            if spliced is not None:
                return spliced
        data, _ = plain(raw, cap=cap, deadline=deadline, timer=timer)
    except ResultTooLarge as exc:
        return _invalid(str(exc))
    except NotPlainData as exc:
        return _invalid(f"the result is not plain data: {exc}")
    except PastDeadline:
        return late(LATE_CHECK, timeout)
    except (RuntimeError, RecursionError) as exc:  # e.g. mutated while it was being copied
        return _invalid(f"could not be copied ({type(exc).__name__})")
    return (data,)


def _request_window(request: BaseModel) -> Window | None:
    messages = request.__dict__.get("messages")
    if type(messages) is not list:
        return None
    try:
        return window_of(messages)
    except Unfreezable:
        return None


@dataclass(frozen=True)
class _Spliced:
    """A result whose messages reuse the request's frozen window: only ``middle`` is new."""

    fields: dict[str, Any]
    window: Window
    cut: Splice
    middle: list[FrozenDict]


_MESSAGES = TypeAdapter(list[dict[str, Any]])


def _splice(
    raw: Any, window: Window, *, cap: int, deadline: float, timer: Callable[[], float]
) -> Verdict | _Spliced | None:
    """The result's messages as a splice of the request's window: only what changed is
    copied, measured and frozen (issue 15).  None when the result has no message list."""
    if not isinstance(raw, BaseModel):
        return None
    own = dict.copy(object.__getattribute__(raw, "__dict__"))
    messages = own.pop("messages", None)
    if not isinstance(messages, list):
        return None
    cut = window.splice(list.copy(messages))
    fields, size = plain(own, cap=cap, deadline=deadline, timer=timer)
    size += window.kept_size(cut)
    if size > cap:
        raise ResultTooLarge(size, cap)
    if not cut.middle:  # the window's own messages, kept or cut: nothing new to check
        return _Spliced(fields, window, cut, [])
    try:
        middle, _ = plain(cut.middle, cap=cap - size, deadline=deadline, timer=timer)
    except NotPlainData as exc:
        raise NotPlainData(f".messages{str(exc).partition(' at ')[2]}") from None
    except ResultTooLarge as exc:
        raise ResultTooLarge(exc.size + size, cap) from None
    try:
        checked = _MESSAGES.validate_python(middle)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = first["loc"][0]
        index = at + cut.prefix if isinstance(at, int) else at
        where = ".".join(str(p) for p in ("messages", index, *first["loc"][1:]))
        return _invalid(f"{type(raw).__name__} does not validate ({exc.error_count()} "
                        f"error(s); first: {where}: {first['msg']})")
    return _Spliced(fields, window, cut, [freeze(m) for m in checked])


def from_process(
    outcome: Outcome, request: BaseModel, *, cap: int, timeout: float
) -> Verdict | tuple[Any] | _Json:
    """A worker process's outcome → the verdict, or ``(data,)`` to be rebuilt."""
    if outcome.kind == "timeout":
        extra = f": {outcome.message}" if outcome.message else ""
        fate = "kept" if outcome.keep else "killed and its result, if any, is discarded"
        return Verdict(
            Provenance.TIMEOUT, None,
            f"timed out after {timeout:g}s{extra}; its worker process was {fate}",
            "TimeoutError",
        )
    if outcome.kind == "died":
        return Verdict(Provenance.ERROR, None, f"failed: {outcome.message}", "WorkerDied")
    if outcome.kind == "refused":
        return Verdict(Provenance.ERROR, None, f"not called: {outcome.message}",
                       "WorkerStartFailed")
    if outcome.kind == "too_large":
        return _invalid(str(ResultTooLarge(outcome.size, cap)))
    if outcome.kind != "result" or outcome.reply is None:
        return _invalid(f"its worker process broke the protocol: {outcome.message}")
    reply = outcome.reply
    kind = reply.get("kind")
    if kind == "raised":
        tb = redact_request_text(str(reply.get("traceback", "")), request, limit=16_000)
        return raised(str(reply.get("type", "Exception")), str(reply.get("message", "")),
                      request, tb or None)
    if kind == "none":
        return Verdict(Provenance.NONE)
    if kind == "ignored":
        return Verdict(Provenance.OK)
    if kind == "problem":
        return _invalid(str(reply.get("problem", "")))
    if kind == "value":
        return (reply.get("data"),)
    if kind == "json" and outcome.body is not None:
        return _Json(outcome.body)
    return _invalid(f"its worker process sent an unknown reply kind {kind!r}")


@dataclass(frozen=True)
class _Json:
    """A result model's JSON from a worker process, to be parsed by the host."""

    body: bytes


def _validation_problem(model: type[BaseModel], exc: ValidationError) -> Verdict:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return _invalid(
        f"{model.__name__} does not validate ({exc.error_count()} error(s); "
        f"first: {where}: {first['msg']})"
    )


@functools.cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(model.model_fields)


def validated(hook: str, data: Any, request: BaseModel) -> Verdict:
    """Rebuild the hook's result type from plain ``data`` (or a worker's JSON) and check the
    hook's contract."""
    model = RESULT_TYPES.get(hook)
    value = data
    if isinstance(data, _Spliced):
        return _validated_splice(hook, data, request)
    if isinstance(data, _Json):
        if model is None:
            return _invalid("a JSON answer for a hook without a result type")
        try:
            value = model.model_validate_json(data.body)
        except ValidationError as exc:
            return _validation_problem(model, exc)
    elif model is not None:
        if not isinstance(data, dict):
            return _invalid(f"expected the fields of {model.__name__}")
        names = _field_names(model)
        fields = {k: v for k, v in data.items() if k in names}
        messages = fields.get("messages", [])
        if "messages" in names and not isinstance(messages, list):
            return _invalid(
                f"{model.__name__}.messages is {type(messages).__name__}, expected a list"
            )
        try:
            value = model.model_validate(fields)
        except ValidationError as exc:
            return _validation_problem(model, exc)
    try:
        provenance, value, problem = check_result(hook, value, request)
    except Exception as exc:  # a bug in a check must not escape the fence
        return _invalid(f"could not be validated ({type(exc).__name__})")
    if provenance is Provenance.INVALID:
        return _invalid(problem or "")
    return Verdict(provenance, value)


def _validated_splice(hook: str, data: _Spliced, request: BaseModel) -> Verdict:
    """:func:`validated` for a splice: the other fields through pydantic, the messages
    checked only around the change."""
    model = RESULT_TYPES[hook]
    names = _field_names(model)
    fields = {k: v for k, v in data.fields.items() if k in names}
    fields["messages"] = []
    try:
        value = model.model_validate(fields)
    except ValidationError as exc:
        return _validation_problem(model, exc)
    window, cut = data.window, data.cut
    try:
        violations = window.splice_violations(cut, data.middle)
        derived = None if violations else window.derive(cut, data.middle)
    except Exception as exc:  # a bug in a check must not escape the fence
        return _invalid(f"could not be validated ({type(exc).__name__})")
    if violations:
        shown = "; ".join(str(v) for v in violations[:5])
        more = f"; and {len(violations) - 5} more" if len(violations) > 5 else ""
        return _invalid(f"{len(violations)} window invariant violation(s): {shown}{more}")
    assert derived is not None
    head = derived.ref[:1]
    change = system_prompt_change(request, head)
    if change:
        return _invalid(change)
    value.__dict__["messages"] = remember(derived).items
    return Verdict(Provenance.OK, value)



def checker(
    hook: str,
    request: BaseModel,
    *,
    process: bool,
    firstresult: bool,
    cap: int,
    deadline: float,
    timeout: float,
    timer: Callable[[], float],
) -> Callable[[Any], Verdict]:
    """What the worker thread does with the plugin's answer the moment it has it: the
    host's own copy, measured and validated — all before the deadline, so the caller's
    bounded wait covers the host's work too (issue 13).  The deadline is checked when the
    answer is in hand and again after validation.  ``request`` is the caller's, never the
    plugin's snapshot."""

    def check(raw: Any) -> Verdict:
        got: Verdict | tuple[Any] | _Json | _Spliced
        if process and isinstance(raw, Outcome) and raw.kind != "result":
            got = from_process(raw, request, cap=cap, timeout=timeout)
        elif timer() > deadline:  # the answer came only after the deadline
            return late(LATE_RETURN, timeout)
        elif process:
            got = from_process(raw, request, cap=cap, timeout=timeout)
        else:
            if not firstresult:  # a broadcast hookspec: 0 or 1 results here
                raw = raw[0] if isinstance(raw, list) and raw else None
            got = from_thread(
                hook, raw, request, cap=cap, deadline=deadline, timer=timer, timeout=timeout
            )
        if isinstance(got, Verdict):
            return got
        verdict = validated(hook, got if isinstance(got, _Json | _Spliced) else got[0], request)
        if timer() > deadline:  # the host's own checking ran past the deadline
            return late(LATE_CHECK, timeout)
        return verdict

    return check
