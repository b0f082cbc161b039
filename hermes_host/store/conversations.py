"""Finding a whole conversation from anything a user may call it by (issue 30).

A *conversation* is the part of a lineage that compression rotations made, under one
``conversation_id`` — the id of its first session, which is what an integration hands out
(a framework's session or thread id).  People name a conversation by that id, by the id of
any session of it (the newest one, which ``sessions list --sessions`` and the status show), by
a title (``my project`` or ``my project #3``) or by ``last``.  :func:`find_conversation`
accepts all four and returns every session of the conversation, root first.

Read-only: it only calls :class:`~hermes_host.store.base.StateStore` reading methods
(``resume``, ``window_marker``, ``lineage``, ``get_session``), so it works on every backend
and on a store opened read-only.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_host.store.base import Session, SessionNotFoundError, StateStore

__all__ = ["ConversationRef", "find_conversation", "not_found_message"]

_LAST = ("last", "-c", "continue")


@dataclass(frozen=True)
class ConversationRef:
    """A conversation as found by :func:`find_conversation`."""

    asked: str
    """What the user typed."""
    session: Session
    """The session that names: the session of that id, or for a title or ``last`` the newest
    session of its conversation (what ``resume`` returns)."""
    sessions: list[Session]
    """Every session of the conversation, root first; the last one holds the live window."""

    @property
    def id(self) -> str:
        """The conversation id (the id of its first session)."""
        return self.tip.conversation_id or self.sessions[0].id

    @property
    def root(self) -> Session:
        return self.sessions[0]

    @property
    def tip(self) -> Session:
        """The newest session: the one that holds the live window."""
        return self.sessions[-1]

    @property
    def message_count(self) -> int:
        """Stored messages of the whole conversation (each row belongs to one session)."""
        return sum(s.message_count for s in self.sessions)

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.sessions)

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens for s in self.sessions)

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.sessions)

    def summary(self) -> dict[str, object]:
        """JSON-ready totals of the conversation."""
        return {
            "id": self.id,
            "title": self.tip.title,
            "source": self.tip.source,
            "session_count": len(self.sessions),
            "session_ids": [s.id for s in self.sessions],
            "newest_session_id": self.tip.id,
            "message_count": self.message_count,
            "active_count": self.tip.active_count,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "created_at": self.root.created_at,
            "last_activity_at": self.tip.last_activity_at,
        }


def not_found_message(by: str, location: str) -> str:
    """Why ``by`` found nothing: what was tried, and how to see what exists."""
    key = by.strip()
    if key in _LAST:
        return (f"there are no sessions in {location} for {by!r} to name (it means the "
                "conversation of the most recent activity)")
    return (
        f"no conversation or session {by!r} in {location} (tried it as a conversation id, "
        f"a session id, a title and a numbered title like '{key} #2'); "
        "`hermes-host sessions list` lists the conversations, "
        "`hermes-host sessions list --sessions` every session"
    )


def find_conversation(store: StateStore, by: str) -> ConversationRef:
    """The conversation ``by`` names: a conversation id, the id of any of its sessions, a
    title (the newest of its numbered rotations) or ``last`` (most recent activity).

    Raises :class:`SessionNotFoundError` with :func:`not_found_message` when nothing matches.
    """
    try:
        found = store.resume(by)
    except SessionNotFoundError:
        raise SessionNotFoundError(not_found_message(by, store.location)) from None
    tip = store.get_session(store.window_marker(found.id).session_id)
    conversation = tip.conversation_id or tip.id
    chain = [store.get_session(sid) for sid in store.lineage(tip.id)]
    members = [s for s in chain if (s.conversation_id or s.id) == conversation]
    if not members or members[-1].id != tip.id:  # an older store without conversation ids
        members = [tip]
    return ConversationRef(asked=by, session=found, sessions=members)
