"""Read-only messages shared across the fence, so a call costs O(change), not O(window) (issue 15).

A window crosses the fence once as :class:`FrozenDict` messages (nested lists and dicts
frozen too).  Those objects are then *shared* — by the caller's request, every engine's
snapshot and the adopted result — instead of deep-copied on every call:

* an engine reads them as ordinary dicts (``msg["content"]``, ``list(messages)``,
  ``{**msg, "content": ...}``, ``dict(msg)``, ``json.dumps``, ``copy.deepcopy``: all work;
  a copy is a plain, mutable dict);
* writing to one (``msg["content"] = ...``, ``msg["tool_calls"].append(...)``, ``del``,
  ``update``, ``setdefault``, ``pop``, ``clear``, ``sort``...) raises :class:`TypeError`
  with a message saying to copy first — a visible error, and nothing reaches the caller;
* the engine's *list* is its own (a plain list): appending, popping or reordering it is fine.

What the fence knows of a frozen message list (sizes, summary flags, validity) lives in
:mod:`hermes_host.fence.windows`.

Limit: in thread isolation an engine shares the host's address space, so base-class calls
(``dict.__setitem__(msg, ...)``) are not stopped; ``fence.isolation: process`` isolates
completely.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from hermes_host.messages import IMMUTABLE_TYPES
from hermes_host.models import _SHARED_MESSAGE_TYPES

__all__ = ["FrozenDict", "FrozenList", "Unfreezable", "freeze", "size_of", "thaw"]

READ_ONLY = (
    "messages are read-only (shared, not copied: R-10.2, issue 32): copy before changing one, "
    "e.g. {**message, key: value} or copy.deepcopy(message)"
)


class Unfreezable(TypeError):
    """A message holds something other than JSON-like data: it cannot be shared safely."""


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError(READ_ONLY)


class FrozenDict(dict[str, Any]):
    """A read-only message (or a dict inside one).  Copies of it are plain dicts."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # engine-built: freeze the values
        dict.__init__(self, *args, **kwargs)
        for key, value in dict.items(self):
            dict.__setitem__(self, key, freeze(value))

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (dict, (thaw(self),))


class FrozenList(list[Any]):
    """A read-only list inside a message (content parts, tool calls).  Copies are plain."""

    __slots__ = ()

    def __init__(self, items: Sequence[Any] = ()) -> None:
        list.__init__(self, [freeze(item) for item in items])

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = _refuse
    clear = sort = reverse = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (list, (thaw(self),))


_SHARED_MESSAGE_TYPES.add(FrozenDict)  # a result keeps them: compared by identity


def _frozen_dict(items: dict[str, Any]) -> FrozenDict:
    out = FrozenDict.__new__(FrozenDict)
    dict.update(out, items)  # the values are frozen already: skip __init__
    return out


def _frozen_list(items: list[Any]) -> FrozenList:
    out = FrozenList.__new__(FrozenList)
    list.extend(out, items)
    return out


def freeze(value: Any) -> Any:
    """``value`` (JSON-like data) as read-only data; frozen parts are reused, not copied.

    Raises :class:`Unfreezable` for anything else (a set, a model, an arbitrary object)."""
    kind = type(value)
    if kind in IMMUTABLE_TYPES or kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in dict.items(value):
            if type(key) is not str:
                raise Unfreezable(f"a {type(key).__name__} key")
            out[key] = freeze(item)
        return _frozen_dict(out)
    if isinstance(value, list | tuple):
        return _frozen_list([freeze(item) for item in value])
    raise Unfreezable(f"a {kind.__name__}")


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of (frozen or plain) JSON-like ``value``."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [thaw(v) for v in list.__iter__(value)]
    return value


def size_of(value: Any) -> int:
    """Bytes as JSON would spell ``value`` (approximately; the same measure as
    :func:`hermes_host.fence.snapshot.plain`: numbers count 8)."""
    kind = type(value)
    if kind is str:
        return (len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))) + 2
    if isinstance(value, dict):
        return 2 + sum(len(k) + 3 + size_of(v) for k, v in dict.items(value))
    if isinstance(value, list):
        return 2 + sum(size_of(v) for v in list.__iter__(value))
    return 8
