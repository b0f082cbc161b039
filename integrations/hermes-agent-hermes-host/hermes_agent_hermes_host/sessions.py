"""Hermes sessions ↔ hermes-host sessions: opening, resuming through Hermes' own lineage,
rotating ids, reset; and which engine serves which Hermes session (for :mod:`.plugin`)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_agent_hermes_host._state import _short
from hermes_agent_hermes_host.history import _canon, _Entry, _History

if TYPE_CHECKING:
    from hermes_host.host import ContextHost, Session

__all__: list[str] = []

# Hermes session id -> the engine serving it (the plugin's hook and middleware find their
# engine here; weak, so an agent that is gone leaves nothing behind).
_ACTIVE: weakref.WeakValueDictionary[str, _Sessions] = weakref.WeakValueDictionary()
_ACTIVE_LOCK = threading.Lock()


def _serving(hermes_session_id: str | None) -> _Sessions | None:
    """The engine serving this Hermes session, if any (:func:`.engine.engine_for`)."""
    if not hermes_session_id:
        return None
    with _ACTIVE_LOCK:
        return _ACTIVE.get(hermes_session_id)


class _Sessions(_History):
    """The session part of :class:`~.engine.HermesHostEngine`."""

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        with self._lock:
            try:
                self._start(session_id, kwargs)
            except Exception as exc:
                self._session = None
                self._disabled_reason = f"could not open the hermes-host session ({_short(exc)})"
                self._warn(f"could not open the hermes-host session ({_short(exc)}); Hermes "
                           "goes on without hermes-host's context management this session")
            else:
                self._disabled_reason = None

    def _start(self, session_id: str, kwargs: Mapping[str, Any]) -> None:
        if kwargs.get("boundary_reason") == "compression" and self._session is not None:
            # Hermes' own compaction boundary (its id rotates unless in place): the
            # hermes-host conversation goes on; only the Hermes id it answers to changes.
            self._register(session_id, replaces=kwargs.get("old_session_id"))
            return
        host = self._open_host(kwargs.get("hermes_home"))
        self._session = self._open_or_resume(host, session_id, kwargs)
        self._mirror = [_Entry(None, _canon(m)) for m in self._session.raw_window]
        self.compression_count = self._session.compression_count
        self._register(session_id)

    def _open_or_resume(
        self, host: ContextHost, session_id: str, kwargs: Mapping[str, Any]
    ) -> Session:
        from hermes_host.store import SessionNotFoundError

        for candidate in self._lineage(session_id):
            try:
                host.store.get_session(candidate)
            except SessionNotFoundError:
                continue
            return host.resume(candidate)
        platform = kwargs.get("platform") or "cli"
        return host.open_session(
            session_id=session_id, source=f"hermes-agent:{platform}",
            user_id=kwargs.get("conversation_id") or None,
        )

    def _lineage(self, session_id: str) -> list[str]:
        """This Hermes session id and its ancestors in Hermes' own database, newest first."""
        chain = [session_id]
        db = self._session_db
        getter = getattr(db, "get_session", None)
        while callable(getter) and len(chain) < 100:
            try:
                row = getter(chain[-1])
            except Exception:
                break
            parent = row.get("parent_session_id") if isinstance(row, Mapping) else None
            if not parent or parent in chain:
                break
            chain.append(str(parent))
        return chain

    def _register(self, session_id: str, replaces: str | None = None) -> None:
        with _ACTIVE_LOCK:
            if self._hermes_session_id and _ACTIVE.get(self._hermes_session_id) is self:
                del _ACTIVE[self._hermes_session_id]
            if replaces and _ACTIVE.get(replaces) is self:
                del _ACTIVE[replaces]
            _ACTIVE[session_id] = self
        self._hermes_session_id = session_id

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Hermes' session boundary (exit, /reset, expiry — and, through its
        ``commit_memory_session``, every compaction boundary too): store what is not stored
        yet.  The engine keeps serving the session (the agent may go on), and the hermes-host
        session stays open in the store, to be resumed."""
        self.sync(messages)

    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: the hermes-host session is ended (it stays in the store,
        searchable); the next ``on_session_start`` opens a fresh one."""
        super().on_session_reset()
        with self._lock:
            session, self._session = self._session, None
            self._mirror, self._retired = [], {}
            if session is not None and self._host is not None:
                try:
                    self._host.store.end_session(session.id, "reset")
                except Exception as exc:
                    self._warn(f"could not end the hermes-host session: {_short(exc)}")
