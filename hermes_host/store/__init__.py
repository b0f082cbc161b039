"""The host's state store (SPEC R-9): the protocol, its records and errors, and
:func:`open_store`, the one way to get a store from a path or URL."""

from __future__ import annotations

import os
from pathlib import Path

from hermes_host.store.base import (
    DEFAULT_LEASE_TTL,
    Conversation,
    Deferred,
    Guards,
    Lease,
    LeaseLostError,
    PublishMode,
    PublishResult,
    SchemaTooNewError,
    SearchHit,
    Session,
    SessionNotFoundError,
    StaleSessionError,
    StaleWindowError,
    StateStore,
    StoredMessage,
    StoreError,
    TitleConflictError,
    WindowMarker,
)
from hermes_host.store.registry import load_store_class, url_scheme

__all__ = [  # noqa: RUF022 -- plainly sorted (test_public_names_are_sorted_and_importable)
    "Conversation",
    "DEFAULT_LEASE_TTL",
    "Deferred",
    "Guards",
    "Lease",
    "LeaseLostError",
    "PublishMode",
    "PublishResult",
    "SchemaTooNewError",
    "SearchHit",
    "Session",
    "SessionNotFoundError",
    "StaleSessionError",
    "StaleWindowError",
    "StateStore",
    "StoreError",
    "StoredMessage",
    "TitleConflictError",
    "WindowMarker",
    "open_store",
    "store_file",
]


def store_file(path_or_url: str | os.PathLike[str]) -> Path:
    """The SQLite file a store path or ``sqlite:///path`` URL names (``~`` expanded).

    Raises :class:`StoreError` for a URL of any other scheme (a server store has no file),
    naming the installed schemes and never repeating the URL (it may carry a password)."""
    text = os.fspath(path_or_url)
    scheme = url_scheme(text)
    if scheme not in (None, "sqlite"):
        load_store_class(text)  # raises for an unknown or missing backend, with advice
        raise StoreError(f"a {scheme}:// store has no file (this command needs an SQLite store)")
    from hermes_host.store.sqlite import sqlite_file

    return sqlite_file(text)


def open_store(
    path_or_url: str | os.PathLike[str],
    *,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    read_only: bool = False,
) -> StateStore:
    """Open (creating and migrating if needed) the store at ``path_or_url``.

    A plain file path or ``sqlite:///path`` is the built-in SQLite store; any other
    ``scheme://`` URL resolves through the ``hermes_host.stores`` entry points
    (:mod:`hermes_host.store.registry`), e.g. ``postgresql://`` from hermes-store-postgres.
    An unknown scheme, or one whose distribution is missing, is refused with a message
    naming what to install or what is installed.

    ``read_only`` opens an existing SQLite store for reading only (SQLite ``mode=ro``):
    nothing is created, migrated or chmod-ed, and any write raises :class:`StoreError`.
    A server store ignores it (its role's grants decide what it may write).
    """
    text = os.fspath(path_or_url)
    store_class = load_store_class(text)
    if read_only and url_scheme(text) in (None, "sqlite"):
        from hermes_host.store.sqlite import SQLiteStore, sqlite_file

        return SQLiteStore(sqlite_file(text), lease_ttl=lease_ttl, read_only=True)
    store: StateStore = store_class.from_url(text, lease_ttl=lease_ttl)
    return store
