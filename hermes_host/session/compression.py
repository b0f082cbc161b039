"""The compression pass (SPEC sections 8 and 10): ``compress`` on a private snapshot through the
fence, under a lease, with a deadline; a proposal that passes validation is published in
one store transaction (rotate or in place) and adopted, anything else is discarded.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from hermes_host import guards as guard_rules
from hermes_host.models import (
    CompressRequest,
    CompressResult,
    GuardState,
    PreCompressRequest,
    SessionEvent,
)
from hermes_host.session import intake
from hermes_host.session.receipts import Attempt
from hermes_host.session.reports import (
    _COMMITTING_OUTCOMES,
    COMPACTED_MARKER,
    COMPACTING_MARKER,
    SESSION_ENV,
    CompressionReport,
    ReportStatus,
    SummaryCost,
    not_kept_message,
)
from hermes_host.session.window import (
    _closes_open_call,
)
from hermes_host.store import (
    Deferred,
    Guards,
    Lease,
    LeaseLostError,
    StaleWindowError,
    StoreError,
)

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")


def compress(
    session: Session,
    *,
    force: bool = True,
    focus: str | None = None,
    keep_last_turns: int | None = None,
    preview: bool = False,
    memory_context: str | None = None,
) -> CompressionReport:
    """:meth:`Session.compress`."""
    events: list[str] = []
    session._sync()
    report = session._compression_pass(
        force=force, focus=focus, keep_last_turns=keep_last_turns, preview=preview,
        events=events, memory_context=memory_context,
        trigger="forced" if force else "manual",
    )
    session.events.extend(events)
    return report


def compression_pass(
    session: Session,
    *,
    force: bool,
    events: list[str],
    focus: str | None = None,
    keep_last_turns: int | None = None,
    preview: bool = False,
    memory_context: str | None = None,
    trigger: str = "auto",
) -> CompressionReport:
    host = session.host
    store = host.store
    settings = host.config.compression
    started = time.monotonic()
    deadline = started + settings.context_timeout_seconds
    base = session.window()
    tokens_before = session.window_tokens
    sid = session.id
    attempt: Attempt | None = None  # the receipt, once the window is read under the lease

    def report(status: ReportStatus, outcome: str, **kw: Any) -> CompressionReport:
        r = CompressionReport(
            status=status,
            outcome=outcome,
            tokens_before=tokens_before,
            tokens_after=kw.pop("tokens_after", tokens_before),
            session_id=session.id,
            duration=time.monotonic() - started,
            **kw,
        )
        if r.message:
            session._emit(events, r.message)
        if attempt is not None and not preview:
            attempt.record(r)
        return r

    chain = host.chain("compress")
    if not chain:
        return report(
            "rejected", "no_engine",
            message="compression skipped: no installed engine answers 'compress'",
        )
    release_unreleased(session, events)
    try:
        lease = store.acquire_lease(sid)
    except StoreError as exc:  # e.g. a full disk: nothing was written, nothing is lost
        return report("rejected", "store_refused",
                      message=f"compression skipped, session unchanged: {exc}")
    if isinstance(lease, Deferred):
        # not an exhaustion, not a failure; the guards stay as they are.
        return report(
            "deferred", "compression_deferred", holder=lease.holder, message=lease.message
        )
    try:
        # The window is read under the lease: what another process appended since the
        # caller looked is in the snapshot the engine gets, and what it appends while the
        # engine works is carried over by the publish (``snapshot``), never dropped.
        compressions = session.compression_count
        session._sync()
        if session.id != sid or session.compression_count != compressions:
            return report(
                "deferred", "compression_deferred",
                message="compression skipped: another process compressed this "
                f"conversation meanwhile (now session {session.id})",
            )
        if not session._settled:
            return report(
                "deferred", "compression_deferred",
                message="compression skipped: other processes kept writing to this "
                "conversation while its window was read; the next turn tries again",
            )
        base = session.window()
        tokens_before = session.window_tokens
        snapshot = session._marker
        if not preview:
            attempt = Attempt(session, trigger, base)
        if not preview:
            session._emit(events, COMPACTING_MARKER)
        guards = session._guards()
        if force:
            guards = guard_rules.cleared_for_force(guards)
            if not preview:  # a preview changes nothing, not even the guards
                try:
                    store.write_guards(sid, Guards())
                except StoreError as exc:
                    return report("rejected", "store_refused",
                                  message=f"compression skipped, session unchanged: {exc}")

        def remaining(hook: str) -> float | None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            return min(host.runner.timeout_for(hook), left)

        texts = [memory_context.strip()] if memory_context and memory_context.strip() else []
        budget = remaining("on_pre_compress")
        if budget is not None and host.providers:
            pre = PreCompressRequest(session_id=sid, messages=base, focus_topic=focus)
            texts += [
                f.value.strip()
                for f in host._broadcast("on_pre_compress", pre, timeout=budget)
                if f.adopted and isinstance(f.value, str) and f.value.strip()
            ]
        memory_context = "\n\n".join(texts) or None

        budget = remaining("compress")
        if budget is None:
            return report(
                "rejected", "timeout",
                message="compression abandoned: compression.context_timeout_seconds "
                "ran out before the engine was called; the session is unchanged",
            )
        request = CompressRequest(
            session_id=sid,
            messages=base,
            current_tokens=tokens_before,
            context_length=host.config.model.context_length,
            max_output_tokens=host.config.model.max_output_tokens,
            model=host.config.model.name,
            focus_topic=focus,
            force=force,
            memory_context=memory_context,
            compression_count=session.compression_count,
            keep_last_turns=keep_last_turns,
            today=_dt.date.today(),
            guards=guards,
            compression=settings,
            summarizer=host.config.summarizer,
        )
        value, stamps = host.runner.first_result("compress", chain, request, timeout=budget)
        if not isinstance(value, CompressResult):
            failed = [s for s in stamps if s.failed]
            if failed:
                worst = failed[-1]
                return report(
                    "rejected", str(worst.provenance.value),
                    engine=worst.plugin,
                    message=f"compression failed, session unchanged: {worst.error}",
                )
            return report(
                "not_committed", "declined",
                message="compression declined: no engine proposed a compressed window",
            )
        engine = next(s.plugin for s in stamps if s.adopted)
        proposed = [dict(m) for m in value.messages]
        has_system = bool(proposed) and proposed[0].get("role") == "system"
        new_window = proposed[1:] if has_system else proposed
        while new_window and _closes_open_call(new_window[-1]):
            # The snapshot ended inside another writer's turn: its call is answered
            # later (the publish carries the answer over), so the note the window's
            # normalisation added for it is not stored (it is added again if needed).
            new_window.pop()
        tokens_after = host.tokens.count_all(
            ([base[0]] if base and base[0].get("role") == "system" else []) + new_window
        )
        # The fence already refused a proposal that breaks an invariant (stamped invalid).
        common: dict[str, Any] = {
            "engine": engine,
            "llm_calls": value.llm_calls,
            "notes": list(value.notes),
            "tokens_after": tokens_after,
            "summary": SummaryCost.of(value),
        }
        if preview:
            return report("preview", value.outcome, proposed=proposed, **common)
        current = base[1:] if base and base[0].get("role") == "system" else base
        shrinks = tokens_after < tokens_before
        if not shrinks and value.outcome in _COMMITTING_OUTCOMES:
            # A "compression" that does not shrink the window is never worth a rotation;
            # the guards count it as ineffective, with the engine's outcome.
            common["notes"] = [*value.notes, "the proposal did not shrink the window"]
        if value.outcome not in _COMMITTING_OUTCOMES or new_window == current or not shrinks:
            update_guards(session, sid, guards, value, tokens_before, tokens_before,
                          events=events)
            common["tokens_after"] = tokens_before
            return report(
                "not_committed", value.outcome,
                message=not_kept_message(value.outcome, common["notes"]), **common,
            )
        if time.monotonic() > deadline:
            return report(
                "rejected", "timeout", **{**common, "tokens_after": tokens_before},
                message="compression discarded: it finished after "
                "compression.context_timeout_seconds; the session is unchanged",
            )
        # a clipped message the engine kept is its stored original (issue 31): the row is
        # kept as it is, never overwritten by the window's excerpt of it
        new_window = intake.restore(new_window, session._clipped)
        try:
            published = store.publish_compression(
                lease, sid, new_window, mode=settings.mode, snapshot=snapshot
            )
        except StoreError as exc:
            # Lost lease, or another process already rotated this session: nothing was
            # written, so the live session stays exactly as it was.
            kind = "lease_lost" if isinstance(exc, LeaseLostError) else "store_refused"
            if isinstance(exc, StaleWindowError):
                kind = "window_changed"
            return report(
                "rejected", kind, **{**common, "tokens_after": tokens_before},
                message=f"compression discarded, session unchanged: {exc}",
            )
        previous = session.id
        session._window = [*new_window, *published.carried]
        session._published(published, session._window)
        session.id = published.session_id
        if os.environ.get(SESSION_ENV) == previous:
            os.environ[SESSION_ENV] = session.id  # the exposed id follows the rotation
        session.title = published.title or session.title
        session._turn_start = len(session._window)
        session.compression_count += 1
        session.compression_epoch += 1
        session.last_prompt_tokens = None  # the provider counted the window before this
        if session.id != previous:
            session.lineage.append(session.id)
        update_guards(session, session.id, guards, value, tokens_before, tokens_after,
                      events=events)
        if session.id != previous:
            host._broadcast("on_session_end", SessionEvent(
                session_id=previous, reason="compression"
            ))
            host._broadcast("on_session_switch", SessionEvent(
                session_id=session.id, previous_session_id=previous, reason="compression"
            ))
        session._emit(events, COMPACTED_MARKER)
        paused = ""
        if value.outcome == "fallback" and not value.cooldown_seconds:
            paused = ("compression committed (fallback); "
                      + "; ".join(value.notes[-1:] or ["summarised offline"]))
        if value.cooldown_seconds:
            # committed, but the summariser failed (an offline fallback, say): the user sees
            # why and for how long automatic compression now pauses (R-5.1, issue 13)
            paused = (f"compression committed ({value.outcome}); "
                      + "".join(f"{note}; " for note in value.notes)
                      + f"automatic compression paused for {value.cooldown_seconds:g} s")
        return report(
            "committed", value.outcome, previous_session_id=previous,
            published_messages=len(new_window), message=paused or None, **common,
        )
    finally:
        release(session, lease, events)


def release(session: Session, lease: Lease, events: list[str]) -> None:
    """Release the compression lease; a store that refuses even that (its disk is full) must
    not turn the pass's report into an exception: say so, and retry next pass."""
    try:
        session.host.store.release_lease(lease)
    except StoreError as exc:
        session._unreleased = lease
        session._emit(events, f"compression lease not released: {exc}; retried at the next "
                              "compression (it expires after store.lease_ttl_seconds anyway)")


def release_unreleased(session: Session, events: list[str]) -> None:
    lease, session._unreleased = session._unreleased, None
    if lease is not None:
        release(session, lease, events)


def emit(session: Session, events: list[str], line: str) -> None:
    events.append(line)
    if session.on_event is not None:
        try:
            session.on_event(line)
        except Exception:  # a front end's display bug must not break the turn
            pass


def update_guards(
    session: Session,
    session_id: str,
    guards: GuardState,
    result: CompressResult,
    tokens_before: int,
    tokens_after: int,
    *,
    events: list[str] | None = None,
) -> None:
    """Write the guards after a compression attempt.  With ``events`` (the pass's own), a
    store that refuses the write (a full disk) is said there instead of raised: the pass's
    report stands, and the guards are as they were before it."""
    settings = session.host.config.compression
    updated = guard_rules.after_compression(
        guards,
        outcome=result.outcome,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        cooldown_seconds=result.cooldown_seconds or settings.cooldown_seconds,
        requested_cooldown=result.cooldown_seconds,
    )
    written = Guards(
        cooldown_until=updated.cooldown_until,
        fallback_streak=updated.fallback_streak,
        ineffective_count=updated.ineffective_count,
        ineffective_tokens=updated.ineffective_tokens,
    )
    if events is None:
        session.host.store.write_guards(session_id, written)
        return
    try:
        session.host.store.write_guards(session_id, written)
    except StoreError as exc:
        session._emit(events, f"compression guards not recorded: {exc}")
