"""Hermes' message list → the hermes-host store: every message once, matched by identity
first and by content second (see :mod:`.engine`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_agent_hermes_host._state import _EngineState, _short

if TYPE_CHECKING:
    from hermes_host.host import Session

__all__: list[str] = []


def _canon(message: Mapping[str, Any]) -> str:
    """What makes two messages the same message, whatever bookkeeping keys either carries."""
    calls = [
        (c.get("id"), (c.get("function") or {}).get("name"),
         (c.get("function") or {}).get("arguments"))
        for c in (message.get("tool_calls") or []) if isinstance(c, Mapping)
    ]
    return json.dumps(
        [message.get("role"), message.get("content"), calls, message.get("tool_call_id")],
        sort_keys=True, default=str, ensure_ascii=False,
    )


class _Entry:
    """One message Hermes holds that the store already has: the dict itself (kept alive so
    its ``id`` is never reused) and, when compared once, its canonical form."""

    __slots__ = ("canon", "obj")

    def __init__(self, obj: Mapping[str, Any] | None, canon: str | None = None) -> None:
        self.obj = obj
        self.canon = canon

    def form(self) -> str:
        if self.canon is None:
            assert self.obj is not None
            self.canon = _canon(self.obj)
        return self.canon


class _History(_EngineState):
    """The history part of :class:`~.engine.HermesHostEngine`."""

    _mirror: list[_Entry]
    _retired: dict[int, Mapping[str, Any]]

    def sync(self, messages: Sequence[Mapping[str, Any]] | None) -> int:
        """Append to the store every message of Hermes' list it does not hold yet; returns
        how many.  Never raises (a failure is warned about and retried at the next call)."""
        if not messages:
            return 0
        with self._lock:
            session = self._session
            if session is None:
                return 0
            try:
                return self._sync(session, [m for m in messages if isinstance(m, Mapping)])
            except Exception as exc:
                self._warn(f"could not store Hermes' messages in hermes-host: {_short(exc)}")
                return 0

    def _sync(self, session: Session, messages: list[Mapping[str, Any]]) -> int:
        """Append the messages of Hermes' list that are new, in order.  Already stored are:

        * the messages seen before (by identity), including those of the list the last
          compression replaced — Hermes may still hand that list around within the turn;
        * a copy of a stored window message that no other entry of the list accounts for
          (Hermes copies messages around a compaction; a resumed session reloads its
          history as new objects) — matched by content, not position, because Hermes also
          inserts messages (a todo snapshot, a user anchor);
        * hermes-host's own summary in whatever form Hermes passes it back (the store holds
          it already, flagged)."""
        from hermes_host.messages import is_summary

        body = [m for m in messages if m.get("role") != "system"]
        present = {id(m) for m in body}
        known = {id(e.obj): e for e in self._mirror if e.obj is not None}
        unmatched: Counter[str] = Counter(
            e.form() for e in self._mirror if e.obj is None or id(e.obj) not in present
        )
        mirror: list[_Entry] = []
        added = 0
        for message in body:
            entry = known.get(id(message))
            if entry is None and self._retired.get(id(message)) is message:
                entry = _Entry(message)
            if entry is not None and entry.obj is message:
                mirror.append(entry)
                continue
            form = _canon(message)
            if unmatched[form] > 0:
                unmatched[form] -= 1
            elif not is_summary(dict(message)):
                session.add_message(dict(message))
                added += 1
            mirror.append(_Entry(message, form))
        self._mirror = mirror
        return added
