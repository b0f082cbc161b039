"""What crosses the fence: a private snapshot going in, plain data coming out (R-10.2).

* :func:`snapshot` — the plugin receives a private copy of the request: a plain deep copy
  of its ``messages`` (the plugin may edit it), or — for an engine that declares
  ``read_only_messages = True`` — the read-only messages of :mod:`~hermes_host.fence.frozen`,
  shared with the caller's request and frozen once per window (the plugin's *list* is its
  own; no copy, so the cost does not grow with the window).  Other plain data is
  deep-copied; handles (the read-only ``history`` reader) are passed by reference.  Whatever
  the plugin does to its copy, the caller's request is untouched.
* :func:`plain` — what a plugin returns is turned into plain data (dicts, lists, strings,
  numbers) **before** it is validated, so a plugin thread that keeps mutating the lists it
  returned cannot change what the host validates and commits (issue 13).  Only the built-in
  container and scalar types are read, through their base-class methods, so no plugin code
  runs in the host's thread while it copies; anything else is refused.  The walk measures
  the result's size as it goes (a string costs ``len``, never a scan) and stops at the cap,
  and it checks the call's deadline every few thousand nodes: the host's own work on a
  result happens inside the deadline.
"""

from __future__ import annotations

import copy
import datetime as _dt
import decimal
import enum
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from hermes_host.fence.frozen import Unfreezable, thaw
from hermes_host.fence.windows import hand_out, window_of
from hermes_host.messages import IMMUTABLE_TYPES, copy_data

__all__ = ["NotPlainData", "PastDeadline", "ResultTooLarge", "plain", "snapshot"]

_PLAIN_TYPES: tuple[type, ...] = (
    BaseModel,
    dict,
    list,
    tuple,
    set,
    frozenset,
    str,
    bytes,
    int,
    float,
    bool,
    type(None),
    _dt.date,
    _dt.time,
    _dt.timedelta,
    decimal.Decimal,
    enum.Enum,
)


def _copy_data(value: Any) -> Any:
    """:func:`hermes_host.messages.copy_data`, and pydantic models field by field."""
    if isinstance(value, BaseModel):
        return _copy_model(value, share_handles=False, share_messages=False)
    return copy_data(value)


def _copy_model(model: BaseModel, *, share_handles: bool, share_messages: bool) -> BaseModel:
    copied = model.__copy__()  # pydantic's own shallow copy (fields set, extras, private)
    fields = copied.__dict__
    for name, value in fields.items():
        if type(value) in IMMUTABLE_TYPES:
            continue
        if share_handles and name == "messages" and type(value) is list:
            try:
                window = window_of(value)
            except Unfreezable:
                pass  # not JSON-like data: a private deep copy, as for any other field
            else:
                # The caller's request now holds the frozen messages (same content), so
                # the result can be checked as a splice of them.  A read-only engine gets
                # its own list of the same objects (issue 15); any other a plain copy.
                model.__dict__[name] = window.items
                fields[name] = hand_out(window) if share_messages else thaw(window.items)
                continue
        if share_handles and not isinstance(value, _PLAIN_TYPES):
            continue  # a handle (e.g. SelectRequest.history): shared by reference
        fields[name] = _copy_data(value)
    extra = copied.__pydantic_extra__
    if extra:
        object.__setattr__(copied, "__pydantic_extra__", _copy_data(extra))
    private = copied.__pydantic_private__
    if private:  # private state is the model's too: copied, handles shared, like fields
        for name, value in private.items():
            if type(value) not in IMMUTABLE_TYPES and isinstance(value, _PLAIN_TYPES):
                private[name] = _copy_data(value)
    return copied


def snapshot(request: BaseModel, *, share_messages: bool = False) -> BaseModel:
    """A private deep copy of ``request``; top-level fields that hold handles (anything that
    is not plain data, e.g. ``SelectRequest.history``) are shared by reference.  With
    ``share_messages`` (the engine declared ``read_only_messages = True``) the messages are
    shared read-only instead of copied."""
    try:
        return _copy_model(request, share_handles=True, share_messages=share_messages)
    except RecursionError:  # a self-referencing structure: the slow, memoised copy
        memo: dict[int, Any] = {}
        for value in request.__dict__.values():
            if not isinstance(value, _PLAIN_TYPES):
                memo[id(value)] = value
        return copy.deepcopy(request, memo)



# --- results: plain data, measured, inside the deadline ------------------------------------

MAX_DEPTH = 64  # nesting of a result (a message's content parts are 3-4 levels deep)
_CHECK_EVERY = 2048  # nodes between two deadline checks


class NotPlainData(ValueError):
    """The result holds something other than dicts, lists, strings, numbers, booleans, None."""


class ResultTooLarge(ValueError):
    """The result is larger than ``fence.max_result_bytes``."""

    def __init__(self, size: int, cap: int) -> None:
        super().__init__(f"result too large: {size} bytes > cap of {cap} bytes")
        self.size = size
        self.cap = cap


class PastDeadline(Exception):
    """The call's deadline passed while the host was copying its result."""


_SEQUENCES = (list, tuple)


def _where(step: str, exc: NotPlainData) -> NotPlainData:
    """``exc`` with one more step of its path in front (built only when something fails)."""
    path, _, what = str(exc).partition(" at ")
    return NotPlainData(f"{path} at {step}{what}") if what else NotPlainData(f"{path} at {step}")


def plain(
    value: Any, *, cap: int, deadline: float, timer: Callable[[], float]
) -> tuple[Any, int]:
    """``value`` as plain data (a pydantic model becomes the dict of its fields) and its
    size in bytes as JSON would spell it (approximately: numbers count 8).

    Raises :class:`ResultTooLarge` as soon as the size passes ``cap``,
    :class:`NotPlainData` for any other type (or nesting deeper than ``MAX_DEPTH``) and
    :class:`PastDeadline` when ``timer()`` passes ``deadline`` during the walk."""
    size = 0
    nodes = 0
    scalars = (bool, int, float, type(None))

    def text(s: str) -> str:
        nonlocal size
        if type(s) is not str:
            s = str.__str__(s)  # the characters, never a subclass's __str__
        n = len(s)
        if size + n > cap:  # too large whatever its encoding: do not scan it
            raise ResultTooLarge(size + n, cap)
        size += n + 2 if s.isascii() else len(s.encode("utf-8", "surrogatepass")) + 2
        return s

    def walk(v: Any, depth: int) -> Any:
        nonlocal size, nodes
        kind = type(v)
        if kind is str:
            return text(v)
        if kind in scalars:
            size += 8
            return v
        nodes += 1
        if nodes % _CHECK_EVERY == 0 and timer() > deadline:
            raise PastDeadline
        if size > cap:
            raise ResultTooLarge(size, cap)
        if depth > MAX_DEPTH:
            raise NotPlainData(f"nested deeper than {MAX_DEPTH} levels at ")
        if isinstance(v, dict):
            size += 2
            out: dict[str, Any] = {}
            for key, item in dict.items(dict.copy(v)):  # base-class methods: no plugin code
                if type(key) is not str:
                    raise NotPlainData(f"a {type(key).__name__} key at ")
                size += len(key) + 3  # keys are short: no encoding check
                if type(item) is str:  # the common case, inline: a message's text
                    n = len(item)
                    if size + n > cap:
                        raise ResultTooLarge(size + n, cap)
                    size += n + 2 if item.isascii() else len(item.encode("utf-8", "surrogatepass"))
                    out[key] = item
                    continue
                try:
                    out[key] = walk(item, depth + 1)
                except NotPlainData as exc:
                    raise _where(f"[{key[:40]!r}]", exc) from None
            return out
        if isinstance(v, _SEQUENCES):
            size += 2
            items = list.copy(v) if isinstance(v, list) else [*tuple.__iter__(v)]
            try:
                return [walk(item, depth + 1) for item in items]
            except NotPlainData as exc:
                raise _where("[…]", exc) from None
        if isinstance(v, enum.Enum):
            size += 8
            return v  # a member is immutable and validated against the field's type
        if isinstance(v, BaseModel):
            return model(v, depth + 1)
        if isinstance(v, str):
            return text(v)
        raise NotPlainData(f"a {kind.__name__} at ")

    def model(m: BaseModel, depth: int) -> dict[str, Any]:
        nonlocal size
        size += 2
        out: dict[str, Any] = {}
        for name, item in dict.copy(object.__getattribute__(m, "__dict__")).items():
            try:
                out[name] = walk(item, depth + 1)
            except NotPlainData as exc:
                raise _where(f".{name}", exc) from None
        return out

    try:
        data = model(value, 0) if isinstance(value, BaseModel) else walk(value, 0)
    except NotPlainData as exc:
        raise _where("result", exc) from None
    if size > cap:
        raise ResultTooLarge(size, cap)
    return data, size
