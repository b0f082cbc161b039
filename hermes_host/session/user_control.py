"""User control (SPEC section 12): ``/status``, ``/undo``, ``/branch`` and the session reset
(``session_reset``), and when a reset is due.
"""

from __future__ import annotations

import datetime as _dt
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes_host import guards as guard_rules
from hermes_host.config import SessionResetSection
from hermes_host.messages import (
    turn_starts,
)
from hermes_host.models import (
    Message,
    SessionEvent,
)
from hermes_host.session import trigger
from hermes_host.session.bound import request_budget
from hermes_host.store import (
    Deferred,
    StoreError,
)
from hermes_host.tokens import encoding_info

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")


def reset_due(
    section: SessionResetSection, last_activity: float, now: float | None = None
) -> str | None:
    """Why a session idle since ``last_activity`` must be reset now (``session_reset.mode``,
    R-12.2): ``"idle"`` after ``idle_minutes`` without activity, ``"daily"`` once the local
    clock passed ``daily_hour`` since then; ``None`` to keep it."""
    now = time.time() if now is None else now
    if section.mode in ("idle", "both") and now - last_activity >= section.idle_minutes * 60:
        return "idle"
    if section.mode in ("daily", "both"):
        last = _dt.datetime.fromtimestamp(last_activity)
        boundary = last.replace(hour=section.daily_hour, minute=0, second=0, microsecond=0)
        if boundary <= last:
            boundary += _dt.timedelta(days=1)
        if _dt.datetime.fromtimestamp(now) >= boundary:
            return "daily"
    return None


def status(session: Session) -> dict[str, Any]:
    """:meth:`Session.status`."""
    host = session.host
    model = host.config.model
    tokens = session.window_tokens
    guards = session._guards()
    # the threshold is the one the decision uses (issue 12): the last end_turn's, or
    # before the first one, asked as end_turn would ask (status never calls it again)
    if session.last_decision is None:
        session.last_decision = session._decide(
            session.window(), tokens, session.last_prompt_tokens, guards
        )
    decision, decided_by = session.last_decision
    # what the trigger decides on: the provider's prompt tokens when it reported
    # them since the window last changed, else the host's count
    used = session.last_prompt_tokens or tokens
    if session.last_condensed is not None:  # the provider saw a condensed request
        used = max(used, tokens)
    budget = request_budget(model.context_length, model.max_output_tokens)
    return {
        "session_id": session.id,
        "conversation_id": session.conversation_id,
        "title": session.title,
        "model": model.name,
        "window_tokens": tokens,
        "context_length": model.context_length,
        "prompt_tokens": session.last_prompt_tokens,
        "context_used": round(used / model.context_length, 4),
        "request_budget": budget,
        "last_request_tokens": session.last_request_tokens,
        "request_bound": (None if session.last_condensed is None
                          else session.last_condensed.as_dict()),
        "summarizer_cooldown": guard_rules.cooldown_left(guards),
        "threshold_tokens": decision.threshold_tokens,
        "threshold": {"tokens": decision.threshold_tokens, "decided_by": decided_by,
                      **(decision.threshold_rule or {})},
        "window_warning": session.window_warning,
        "blocked": guard_rules.blocked_reason(
            guards, used, budget, cooldown=trigger.cooldown_blocks(session)
        ),
        "messages": len(session._window),
        "compression_count": session.compression_count,
        "lineage": list(session.lineage),
        "guards": {
            "cooldown_until": guards.cooldown_until,
            "fallback_streak": guards.fallback_streak,
            "ineffective_count": guards.ineffective_count,
            "ineffective_tokens": guards.ineffective_tokens,
        },
        "normalised": session.normalised.as_dict(),
        "cache_violations": session.cache_violations,
        "engines": {hook: host.chain(hook) for hook in ("should_compress", "compress",
                                                        "select_context")},
        "memory_providers": host.providers,
        "engine_problems": [row for row in host.engine_health() if row["problems"]],
        "tokenizer": encoding_info(model.name),
    }


def undo(session: Session, turns: int = 1) -> int:
    """:meth:`Session.undo`."""
    if turns < 1:
        raise ValueError("undo needs at least one turn")
    session._sync()
    starts = turn_starts(session._window)  # a user-role summary block is not a turn
    if not starts:
        return 0
    cut = starts[-min(turns, len(starts))]
    return len(archive_from(session, cut, reason="undo"))


def truncate(session: Session, keep: int) -> list[Message]:
    """:meth:`Session.truncate`."""
    if keep < 0:
        raise ValueError("truncate needs keep >= 0")
    session._sync()
    if keep >= len(session._window):
        return []
    return archive_from(session, keep, reason="truncate")


def archive_from(session: Session, cut: int, *, reason: str) -> list[Message]:
    """Publish ``window[:cut]`` in place (the rest archived); returns what left the window."""
    kept, removed = session._window[:cut], session._window[cut:]
    store = session.host.store
    lease = store.acquire_lease(session.id)
    if isinstance(lease, Deferred):
        raise StoreError(f"cannot {reason} now: {lease.message}")
    try:
        published = store.publish_compression(
            lease, session.id, kept, mode="in_place", reason=reason, snapshot=session._marker
        )
    finally:
        store.release_lease(lease)
    session._window = [*kept, *published.carried]
    session._published(published, session._window)
    session._turn_start = min(session._turn_start, len(session._window))
    session.compression_epoch += 1
    return removed


def branch(session: Session, title: str | None = None) -> Session:
    """:meth:`Session.branch`."""
    host = session.host
    row = host.store.get_session(session.id)
    child = host.store.create_session(
        source=row.source, user_id=row.user_id, model=row.model,
        model_config=dict(row.model_config), system_prompt=session.system_prompt,
        parent_session_id=session.id, title=title, cwd=row.cwd, goal=row.goal,
    )
    if session._window:
        host.store.append_messages(child.id, session._window)
    from hermes_host.session import Session  # the class whose method this is

    fork = Session(host, child.id, session.system_prompt, list(session._window),
                   title=child.title, cwd=child.cwd, conversation_id=child.conversation_id)
    fork.lineage = [*session.lineage, child.id]
    host._broadcast("on_session_switch", SessionEvent(
        session_id=child.id, previous_session_id=session.id, reason="branch"
    ))
    return fork


def reset(
    session: Session,
    reason: str = "new",
    *,
    title: str | None = None,
    system_prompt: str | None = None,
) -> Session:
    """:meth:`Session.reset`."""
    host = session.host
    row = host.store.get_session(session.id)
    host._broadcast("on_session_reset", SessionEvent(
        session_id=session.id, reason=reason, user_id=row.user_id,
        messages=session.window(), cwd=row.cwd,
    ))
    host._broadcast("on_session_end", SessionEvent(session_id=session.id, reason=reason))
    host.store.end_session(session.id, reason)
    if system_prompt is None:
        # The snapshot already holds the memory blocks; start again from the prompt the
        # caller gave, so fresh memory is appended once.
        base = row.model_config.get("base_system_prompt", row.system_prompt or "")
        system_prompt = str(base)
    return host.open_session(title, system_prompt, user_id=row.user_id, cwd=row.cwd)
