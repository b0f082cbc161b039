"""What crosses the fence: a private snapshot going in, plain data coming out (R-10.2).

* :func:`snapshot` — the plugin receives a private deep copy of the request; plain data is
  copied, handles (the read-only ``history`` reader) are passed by reference.  Whatever the
  plugin does to its copy, the caller's request is untouched.
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
        return _copy_model(value, share_handles=False)
    return copy_data(value)


def _copy_model(model: BaseModel, *, share_handles: bool) -> BaseModel:
    copied = model.__copy__()  # pydantic's own shallow copy (fields set, extras, private)
    fields = copied.__dict__
    for name, value in fields.items():
        if type(value) in IMMUTABLE_TYPES:
            continue
        if share_handles and not isinstance(value, _PLAIN_TYPES):
            continue  # a handle (e.g. SelectRequest.history): shared by reference
        fields[name] = _copy_data(value)
    extra = copied.__pydantic_extra__
    if extra:
        object.__setattr__(copied, "__pydantic_extra__", _copy_data(extra))
    return copied


def snapshot(request: BaseModel) -> BaseModel:
    """A private deep copy of ``request``; top-level fields that hold handles (anything that
    is not plain data, e.g. ``SelectRequest.history``) are shared by reference."""
    try:
        return _copy_model(request, share_handles=True)
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


class _Walk:
    __slots__ = ("cap", "deadline", "nodes", "size", "timer")

    def __init__(self, cap: int, deadline: float, timer: Callable[[], float]) -> None:
        self.cap = cap
        self.deadline = deadline
        self.timer = timer
        self.size = 0
        self.nodes = 0

    def add(self, n: int) -> None:
        self.size += n
        if self.size > self.cap:
            raise ResultTooLarge(self.size, self.cap)
        self.nodes += 1
        if self.nodes % _CHECK_EVERY == 0 and self.timer() > self.deadline:
            raise PastDeadline

    def text(self, value: str) -> str:
        if type(value) is not str:
            value = str.__str__(value)  # the characters, never a subclass's __str__
        n = len(value)
        if n + self.size > self.cap:  # too large whatever its encoding: do not scan it
            raise ResultTooLarge(self.size + n, self.cap)
        self.add(n + 2 if value.isascii() else len(value.encode("utf-8", "surrogatepass")) + 2)
        return value

    def value(self, value: Any, depth: int, where: str) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is bool or kind is int or kind is float or value is None:
            self.add(8)
            return value
        if depth > MAX_DEPTH:
            raise NotPlainData(f"nested deeper than {MAX_DEPTH} levels at {where}")
        if isinstance(value, dict):
            self.add(2)
            out: dict[str, Any] = {}
            for key, item in dict.items(dict.copy(value)):  # base-class methods: no plugin code
                if type(key) is not str:
                    raise NotPlainData(f"a {type(key).__name__} key at {where}")
                out[self.text(key)] = self.value(item, depth + 1, f"{where}[{key[:40]!r}]")
            return out
        if isinstance(value, list | tuple):
            self.add(2)
            items = list.copy(value) if isinstance(value, list) else [*tuple.__iter__(value)]
            return [self.value(item, depth + 1, f"{where}[{i}]") for i, item in enumerate(items)]
        if isinstance(value, enum.Enum):
            self.add(8)
            return value  # a member is immutable and validated against the field's type
        if isinstance(value, BaseModel):
            return self.model(value, depth + 1, where)
        if isinstance(value, str):
            return self.text(value)
        raise NotPlainData(f"a {kind.__name__} at {where}")

    def model(self, model: BaseModel, depth: int, where: str) -> dict[str, Any]:
        self.add(2)
        fields = dict.copy(object.__getattribute__(model, "__dict__"))
        return {
            name: self.value(item, depth + 1, f"{where}.{name}" if where else name)
            for name, item in fields.items()
        }


def plain(
    value: Any, *, cap: int, deadline: float, timer: Callable[[], float]
) -> tuple[Any, int]:
    """``value`` as plain data (a pydantic model becomes the dict of its fields) and its
    size in bytes as JSON would spell it (approximately: numbers count 8).

    Raises :class:`ResultTooLarge` as soon as the size passes ``cap``,
    :class:`NotPlainData` for any other type (or nesting deeper than ``MAX_DEPTH``) and
    :class:`PastDeadline` when ``timer()`` passes ``deadline`` during the walk."""
    walk = _Walk(cap, deadline, timer)
    if isinstance(value, BaseModel):
        return walk.model(value, 0, ""), walk.size
    return walk.value(value, 0, "result"), walk.size
