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

    Raises :class:`StoreError` for any other URL scheme, naming what is supported: the one
    place a store location is parsed (``config.yaml``'s ``store.url`` goes through it too)."""
    text = os.fspath(path_or_url)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        scheme = text.split("://", 1)[0]
        raise StoreError(  # the URL itself is not repeated: it may carry a password
            f"unsupported store URL scheme {scheme!r}; supported: a file path or "
            "sqlite:///path (PostgreSQL ships separately as hermes-store-postgres)"
        )
    return Path(text).expanduser()


def open_store(
    path_or_url: str | os.PathLike[str],
    *,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    read_only: bool = False,
) -> StateStore:
    """Open (creating and migrating if needed) the store at ``path_or_url``.

    Accepts a file path or a ``sqlite:///path`` URL (``HermesConfig.store_path()`` gives the
    configured one).  Other URL schemes are refused with a message naming what is supported.
    ``read_only`` opens an existing store for reading only (SQLite ``mode=ro``): nothing is
    created, migrated or chmod-ed, and any write raises :class:`StoreError`.
    """
    path = store_file(path_or_url)
    from hermes_host.store.sqlite import SQLiteStore

    return SQLiteStore(path, lease_ttl=lease_ttl, read_only=read_only)
