"""What every ``sessions`` command shares: ``--store``/``--config``/``--json``, opening the
store (read-only where it cannot be written, never created by a reading command), one-line
errors, and JSON lines that are always valid."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from hermes_host.store import SessionNotFoundError, StateStore, StoreError, open_store, store_file
from hermes_host.store.conversations import ConversationRef, find_conversation
from hermes_host.store.registry import load_store_class, url_scheme
from hermes_host.store.sqlite import check_location

from ..config_cmd import config_option, load_config_or_fail
from ..config_cmd import fail as _fail

__all__: list[str] = []

F = TypeVar("F", bound=Callable[..., Any])


def _common(fn: F) -> F:
    """``--store``, ``--config`` and ``--json`` on every subcommand."""
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        fn
    )
    fn = config_option(fn)
    return click.option(
        "--store",
        "store_path",
        metavar="PATH|URL",
        default=None,
        help="Store to use: a state.db path or a store URL (default: the configured store, "
        "$HERMES_HOST_HOME/state.db).",
    )(fn)


def fail(exc: Exception | str) -> NoReturn:
    """``error: …`` on stderr and exit 2 — an unknown session or conversation too (issue 30:
    it was exit 1, which no other command used for bad input)."""
    _fail(f"error: {exc}", 2)


def only_session_option(fn: F) -> F:
    """``--only-session``: act on the one session named, not its whole conversation."""
    return click.option(
        "--only-session",
        is_flag=True,
        help="Only the session named (an id; for a title or `last` the newest session of "
        "the conversation), not the whole conversation it belongs to.",
    )(fn)


def find(store: StateStore, by: str) -> ConversationRef:
    """The conversation ``by`` names (a conversation id, any session id of it, a title or
    ``last``), or exit 2 saying what was tried and how to list what exists."""
    try:
        return find_conversation(store, by)
    except SessionNotFoundError as exc:
        fail(exc)


def _resolve_path(store_path: str | None, config_path: Path | None) -> tuple[str, float]:
    """The store location (a path or URL) and the lease TTL to open it with."""
    config, _ = load_config_or_fail(config_path)
    location = store_path if store_path is not None else config.store_url()
    try:
        load_store_class(location)  # an unknown or missing backend fails before anything
    except StoreError as exc:
        fail(f"store.url: {exc}" if store_path is None else exc)
    return location, config.store.lease_ttl_seconds


def _local_file(location: str) -> Path | None:
    """The SQLite file ``location`` names (``None`` for a server store's URL)."""
    if url_scheme(location) not in (None, "sqlite"):
        return None
    return store_file(location)


def _checked_file(location: str) -> Path | None:
    """The SQLite file ``location`` names, its location checked (a one-line error and exit 2
    when it cannot hold a store); ``None`` for a server store's URL."""
    local = _local_file(location)
    if local is not None:
        try:
            check_location(local)
        except StoreError as exc:
            fail(exc)
    return local


def _missing_file(location: str) -> Path | None:
    """The SQLite file ``location`` names when it does not exist yet (a server store always
    "exists": opening it tells)."""
    path = _local_file(location)
    return None if path is None or path.exists() else path


@contextmanager
def _opened(
    store_path: str | None,
    config_path: Path | None,
    *,
    create: bool,
    resolved: tuple[str, float] | None = None,
) -> Iterator[StateStore]:
    """The store, open for the ``with`` block: reading commands refuse to create one where
    none exists, a :class:`StoreError` becomes a one-line error, and it is always closed."""
    path, ttl = resolved or _resolve_path(store_path, config_path)
    local = _checked_file(path)
    missing = _missing_file(path)
    if not create and missing is not None:
        fail(f"{missing}: no store here yet (it is created by the first session); "
             "pass --store PATH to use another one")
    # A store this user cannot write (a 0444 file, a read-only directory) is still browsed:
    # reading commands open it read-only instead of failing (issue 12).
    read_only = not create and local is not None and not _writable(local)
    try:
        store = open_store(path, lease_ttl=ttl, read_only=read_only)
    except StoreError as exc:
        fail(exc)
    try:
        yield store
    except StoreError as exc:
        fail(exc)
    finally:
        store.close()


def _writable(path: Path) -> bool:
    """Whether this process may write the store file and create its -wal/-shm files."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _dumps_line(value: Any, what: str = "the output") -> str:
    """One line of strict JSON, readable UTF-8 when possible, escaped when the text holds
    lone surrogates (which no UTF-8 stream can carry).  A non-finite number (which a store
    written by an older version may hold) is a one-line error naming ``what``: the output
    is always valid JSON."""
    try:
        line = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        fail(f"{what} holds a non-finite number (NaN or Infinity), which JSON cannot carry")
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(value, ensure_ascii=True, allow_nan=False)
    return line
