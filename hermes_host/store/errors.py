"""The store's errors: every ``StateStore`` method raises :class:`StoreError` (or a subclass)
whose ``str()`` is a complete, user-facing message (SPEC R-9).  Re-exported by
:mod:`hermes_host.store.base` and :mod:`hermes_host.store`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

__all__ = [
    "LeaseLostError",
    "SchemaTooNewError",
    "SessionNotFoundError",
    "StaleSessionError",
    "StaleWindowError",
    "StoreError",
    "TitleConflictError",
    "translating",
]

P = ParamSpec("P")
R = TypeVar("R")


class _Decorator(Protocol):
    def __call__(self, fn: Callable[P, R], /) -> Callable[P, R]: ...


class StoreError(Exception):
    """Any store failure.  ``str()`` is a complete, user-facing message (no traceback needed):
    it names the store file and what to do when that is known."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer hermes-host (its schema version is higher than the
    newest this code knows).  Refused rather than guessed at, so no data is damaged."""


class LeaseLostError(StoreError):
    """The compression lease is no longer held by this holder (expired and reclaimed, or
    released).  Raised by ``publish_compression``/``refresh_lease``; nothing was changed."""


class SessionNotFoundError(StoreError):
    """No session matches the given id, title or ``last``."""


class StaleSessionError(LeaseLostError):
    """The session was already compressed into a child (rotate) by another path; publishing
    to it again would fork the lineage.  Like a lost lease, nothing was changed (hence the
    subclass).  Work on the newest session (``resume`` follows rotations)."""


class StaleWindowError(LeaseLostError):
    """The window changed since the compression read it in a way a publish cannot carry over
    (rows were archived or rewritten by a writer that did not hold the lease).  Nothing was
    changed; compress again from the current window."""


class TitleConflictError(StoreError):
    """Another session already has this title (titles are unique, R-9.1)."""


def translating(
    catch: tuple[type[BaseException], ...],
    translate: Callable[[Any, BaseException, str], StoreError],
) -> Callable[[str], _Decorator]:
    """A backend's ``errors(action)`` method decorator: an exception of ``catch`` raised
    inside the method becomes ``translate(store, exc, action)`` (a user-facing
    :class:`StoreError`, without the driver's traceback); a :class:`StoreError` passes."""

    def errors(action: str) -> _Decorator:
        def decorate(fn: Callable[P, R]) -> Callable[P, R]:
            @functools.wraps(fn)
            def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
                try:
                    return fn(*args, **kwargs)
                except StoreError:
                    raise
                except catch as exc:
                    raise translate(args[0], exc, action) from None

            return wrapper

        return decorate

    return errors
