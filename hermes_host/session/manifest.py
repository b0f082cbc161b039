"""Recording what each model call received (issue 29): a request manifest per request built or
fitted, the provider's usage attached when the caller reports it.

The manifest names the window's messages by their row ids.  The session's window is the
store's active rows of its id, in window order; their ids are read once and then followed by
appends alone (``active_ids(after_id=…)``), so a turn that only added messages reads only those.
Anything that is not a stored row as it was stored — the system prompt, an injection, what a
``select_context`` engine added, what the request bound condensed — is a *part*, stored once
under the hash of its content.  Recording never fails a turn: a store that refuses it is said
once, in the session's events and the log, and the turn goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_host.messages import sanitize_for_wire
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.store import StoreError, WindowMarker
from hermes_host.store.manifests import (
    Entry,
    RecordingStore,
    encode_entries,
    extend_encoded,
    part_hash,
    part_json,
    shared_prefix,
)

if TYPE_CHECKING:
    from hermes_host.session import Session
    from hermes_host.session.bound import Condensed

log = logging.getLogger("hermes_host.host")

__all__ = ["RequestLog", "attach_usage", "record_request", "window_ids"]


@dataclass
class RequestLog:
    """A session's recorder state (``Session._requests``)."""

    marker: WindowMarker | None = None
    ids: list[int] = field(default_factory=list)
    """Row ids of the window at ``marker``."""
    system: tuple[str, str, int] | None = None
    """(system prompt, its part hash, its tokens)."""
    entries: list[Entry] = field(default_factory=list)
    """The last request's entries …"""
    sent: list[Message] = field(default_factory=list)
    """… its messages …"""
    total: int = 0
    """… its tokens (for the next request's shared prefix) …"""
    encoded: str = ""
    """… and its entries encoded (a request that only grew is encoded by what it gained)."""
    last_id: int | None = None
    """The last manifest's id while no usage was attached to it."""
    failed: bool = False
    """A store refused a manifest (said once)."""
    recording: tuple[object, bool] | None = None
    """(the store, whether it records manifests): checked once per store."""


def _store(session: Session) -> RecordingStore | None:
    store = session.host.store
    known = session._requests.recording
    if known is None or known[0] is not store:  # an isinstance on a Protocol costs ~100 µs
        known = session._requests.recording = (store, isinstance(store, RecordingStore))
    return store if known[1] else None  # type: ignore[return-value]


def window_ids(session: Session) -> list[int]:
    """Row ids of the session's window, in window order: read once, then followed by what was
    appended since (the store's marker says whether anything else changed)."""
    store = _store(session)
    if store is None:
        return []
    log_ = session._requests
    marker = session._marker
    old = log_.marker
    if old == marker:
        return log_.ids
    if (old is not None and old.session_id == marker.session_id
            and marker.last_message_id > old.last_message_id
            and marker.active_count > old.active_count):
        added = store.active_ids(marker.session_id, after_id=old.last_message_id)
        if len(log_.ids) + len(added) == marker.active_count:
            log_.ids = log_.ids + added
            log_.marker = marker
            return log_.ids
    log_.ids = store.active_ids(marker.session_id)
    log_.marker = marker
    return log_.ids


def record_request(
    session: Session,
    sent: Sequence[Message],
    *,
    tokens: int,
    unchanged: bool,
    condensed: Condensed | None,
    source: str,
) -> None:
    """Store the manifest of ``sent`` (the request as it leaves the host)."""
    store = _store(session)
    if store is None or not session.host.config.store.record_requests:
        return
    log_ = session._requests
    try:
        ids = window_ids(session)
        entries, parts = _entries(session, sent, ids, fast=unchanged and not condensed)
        n = shared_prefix(log_.entries, entries)
        if n and n == len(log_.entries):
            prefix = log_.total  # the request only grew: the whole previous one is shared
            encoded = extend_encoded(log_.encoded, log_.entries[-1], entries[n:])
        else:
            prefix = session.host.tokens.count_all(log_.sent[:n]) if n else 0
            encoded = encode_entries(entries)
        details: dict[str, Any] = {"source": source}
        if condensed is not None:
            details["condensed"] = condensed.describe()
        if session.last_select:
            details["select"] = session.last_select
        if session.window_warning:
            details["warning"] = redact(session.window_warning)
        log_.last_id = store.record_request(
            session.id, encoded, parts, tokens=tokens,
            prefix_tokens=min(prefix, tokens), details=details,
        )
        log_.entries, log_.sent, log_.total, log_.encoded = entries, list(sent), tokens, encoded
    except StoreError as exc:
        log_.last_id = log_.system = None  # its part is written again next time
        if not log_.failed:
            log_.failed = True
            session._emit(session.events, f"⚠ request not recorded in the store: {exc}")
        log.warning("session %s: request not recorded: %s", session.id, redact(str(exc)))


def _entries(
    session: Session, sent: Sequence[Message], ids: list[int], *, fast: bool
) -> tuple[list[Entry], dict[str, tuple[str, int]]]:
    """The entries of ``sent`` and the parts to store."""
    count = session.host.tokens.count
    parts: dict[str, tuple[str, int]] = {}

    def part(message: Message) -> str:
        text = part_json(message)
        digest = part_hash(text)
        parts[digest] = (text, count(message))
        return digest

    entries: list[Entry] = []
    body = list(sent)
    if body and body[0].get("role") == "system":
        system = session._requests.system
        if system is None or system[0] != body[0].get("content"):
            digest = part(sanitize_for_wire(body[:1])[0])
            system = (str(body[0].get("content")), digest, parts[digest][1])
            session._requests.system = system
        entries.append(system[1])
        body = body[1:]
    if fast and session._cache_clean and not session._clipped and len(body) == len(ids):
        entries.extend(ids)  # the request is the stored window as it is: ids only
        return entries, parts
    by_form: dict[str, int] = {}
    raw = session._window
    if len(raw) == len(ids):
        # a message the window holds clipped is never sent as stored: not worth encoding
        clipped = {id(original) for _, original in session._clipped}
        for row_id, message in zip(ids, raw, strict=True):
            if id(message) not in clipped:
                form = sanitize_for_wire([message])[0]
                by_form.setdefault(part_json(form), row_id)
    # what leaves the process: a caller's own list (fit_request) may carry ``_`` metadata
    for message in sanitize_for_wire(body):
        found = by_form.get(part_json(message))
        entries.append(found if found is not None else part(message))
    return entries, parts


def attach_usage(session: Session, usage: Mapping[str, int]) -> None:
    """Attach a model call's provider usage to the last manifest of this session that has
    none yet (a call reports its usage after its request was built)."""
    store = _store(session)
    log_ = session._requests
    if store is None or log_.last_id is None:
        return
    request_id, log_.last_id = log_.last_id, None
    try:
        store.record_request_usage(request_id, **usage)
    except StoreError as exc:
        log.warning("session %s: usage not recorded: %s", session.id, redact(str(exc)))
