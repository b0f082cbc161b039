"""Several processes on one conversation (R-5.3, R-8.1): before each write and each request the
session compares the store's window marker with what it wrote itself, and follows another
process's append, compression, rotation or undo.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from hermes_host.models import (
    Message,
    SessionEvent,
)
from hermes_host.session.reports import (
    SESSION_ENV,
)
from hermes_host.store import (
    PublishResult,
    WindowMarker,
)

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")

FOLLOW_TRIES = 20
"""Re-reads of a window another process keeps changing before :func:`follow` settles for a
marker that may be older than the window (the next check then notices)."""


def sync(session: Session) -> None:
    """Take the window from the store if another process changed it since our last
    write (one indexed query when nothing changed)."""
    marker = session.host.store.window_marker(session.id)
    if marker != session._marker:
        session._follow(marker)


def follow(session: Session, marker: WindowMarker) -> None:
    host, store = session.host, session.host.store
    previous = session.id
    window = store.active_messages(marker.session_id)
    session._settled = False
    for _ in range(FOLLOW_TRIES):
        # The marker and the window are two reads: a write in between would put rows in the
        # window that the marker does not cover, and a compression's snapshot (the marker)
        # would then carry them over *and* keep the engine's copy (issue 13).
        again = store.window_marker(marker.session_id)
        if again == marker:
            session._settled = True
            break
        marker = again
        window = store.active_messages(marker.session_id)
    if window and window[0].get("role") == "system":
        window = window[1:]  # stored by an import or an older front end: not the window
    row = store.get_session(marker.session_id)
    rewritten = window[: len(session._window)] != session._window
    session.id = row.id
    session.conversation_id = row.conversation_id or session.conversation_id
    session.title = row.title or session.title
    session.compression_count = row.compression_count
    if session.id != previous:
        session.lineage = store.lineage(session.id)
        if os.environ.get(SESSION_ENV) == previous:
            os.environ[SESSION_ENV] = session.id
    session._window = window
    session._turn_start = len(window) if rewritten else min(session._turn_start, len(window))
    if rewritten or session.id != previous:
        session.compression_epoch += 1  # like a compression here: the check restarts
    session._marker = marker
    change = f"now session {session.id}" if session.id != previous else "same session"
    session._emit(session.events, f"another process changed this conversation ({change}, "
                            f"{len(window)} messages in the window); continuing from the store")
    if session.id != previous:
        host._broadcast("on_session_switch", SessionEvent(
            session_id=session.id, previous_session_id=previous, reason="compression"
        ))


def published(session: Session, result: PublishResult, window: list[Message]) -> None:
    """Our own publish: the marker it leaves, without asking the store (asking could
    absorb another process's write made in between).  ``window`` is what the publish
    left: the new window and the messages it carried over."""
    active = [*result.message_ids, *result.carried_ids]
    last = max(active, default=0)
    if result.session_id == session._marker.session_id:  # archived rows stay the session's
        last = max(last, session._marker.last_message_id)
    session._marker = WindowMarker(result.session_id, last, len(window), sum(active))
