"""Turn assembly (SPEC section 2): the request for the next model call — the window, the
``select_context`` chain (R-3.1, R-11.3), turn-scoped injections (R-2.1, R-2.2), the wire
sanitiser (R-7.5) — and the window bound.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_host import guards as guard_rules
from hermes_host.fence.windows import common_prefix, common_suffix
from hermes_host.injections import Injection, apply_injections
from hermes_host.messages import (
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
)
from hermes_host.models import (
    Message,
    SelectRequest,
    SelectResult,
)
from hermes_host.redact import redact
from hermes_host.session.bound import fit, request_budget
from hermes_host.session.manifest import record_request
from hermes_host.session.window import (
    _needs_merge,
    _needs_repair,
)
from hermes_host.store import (
    StoreError,
)

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")


def build_request(
    session: Session, injections: Iterable[Injection | str] | None = None
) -> list[Message]:
    """:meth:`Session.build_request`.  What did not change since the last call costs no
    Python work per message (issue 32): the window's messages are read-only and their wire
    forms and token counts were made once, as they entered the window; an engine's or an
    injection's change costs in proportion to itself (found by C-level compares)."""
    session._sync()
    # The cached window itself, not a copy (read here, never changed): the fence knows this
    # very list from the last call, so an unchanged window costs it one compare (issue 32).
    base = session._built()
    session._check_cache(base)
    selected = session._select(base)
    if selected is not base and len(selected) == len(base) and selected == base:
        selected = base  # the engines kept the window (the same objects: identity compares)
    extras = list(injections or [])
    request = apply_injections(selected, extras) if extras else selected
    if request is base:
        return check_fits(session, session._wire.request(base), unchanged=True,
                          source="build_request")
    # base is normalised already: only a changed list is scanned
    if _needs_repair(request):
        request, _ = repair_tool_pairs(request)
    if _needs_merge(request):
        request, _ = normalize_alternation(request)
    wire, tokens = _changed_wire(session, base, request)
    return check_fits(session, wire, unchanged=False, source="build_request", tokens=tokens)


def _changed_wire(
    session: Session, base: list[Message], request: list[Message]
) -> tuple[list[Message], int]:
    """The wire form of ``request`` and its tokens, where it shares a prefix and a suffix
    with ``base`` (the window): their wire forms and counts are the window's, only the
    middle is sanitised and counted."""
    n, room = len(base), min(len(base), len(request))
    p = common_prefix(request, base, room)
    s = common_suffix(request, base, room - p)
    forms = session._wire.request(base)
    middle = request[p:len(request) - s]
    wire = [*forms[:p], *sanitize_for_wire(middle), *forms[n - s:]]
    running = session._running
    if len(running) != n:  # not the window's counts (cannot happen): count it all
        return wire, session.host.tokens.count_all(wire)
    tokens = running.total - sum(running.count_at(i) for i in range(p, n - s))
    return wire, tokens + session.host.tokens.count_all(middle)


def check_fits(
    session: Session, request: list[Message], *, unchanged: bool, source: str | None,
    tokens: int | None = None,
) -> list[Message]:
    """The request within the request budget (``context_length - max_output_tokens``,
    issue 28): a request over it is condensed (:func:`hermes_host.session.bound.fit`), and
    the session says so — ``window_warning`` with the cause, ``last_condensed``, an event
    line (once per cause), a WARNING log line.  The store keeps every original whole."""
    model = session.host.config.model
    limit = request_budget(model.context_length, model.max_output_tokens)
    if tokens is None:  # the caller's count (build_request's) or the window's, else counted
        tokens = session.window_tokens if unchanged else session.host.tokens.count_all(request)
    fitted, condensed = fit(request, limit, session.host.tokens.count, tokens=tokens)
    session.last_condensed = condensed
    session.last_request_tokens = condensed.tokens_after if condensed else tokens
    if condensed is None:
        session.window_warning = None
        if source is not None:  # None: not a model call's request (fit_request(record=False))
            record_request(session, fitted, tokens=tokens, unchanged=unchanged,
                           condensed=None, source=source)
        return fitted
    key, cause = over_budget_cause(session)
    warning = f"{condensed.describe()}. Why: {cause}"
    if session.window_warning is None or session._warned_cause != key:
        session._emit(session.events, "⚠ " + warning)  # once per cause, not every request
    session._warned_cause = key
    session.window_warning = warning
    log.warning("session %s: %s", session.id, redact(warning))
    if source is not None:
        record_request(session, fitted, tokens=condensed.tokens_after, unchanged=unchanged,
                       condensed=condensed, source=source)
    return fitted


def over_budget_cause(session: Session) -> tuple[str, str]:
    """``(key, text)``: why the window was over the request budget when a request was built
    — the real cause, as far as the session knows it (issue 28).  ``key`` names the cause
    (the text carries figures that change from request to request)."""
    try:
        left = guard_rules.cooldown_left(session._guards())
    except StoreError:  # the warning must not turn a request into an exception
        left = None
    if left is not None:
        return "cooldown", (f"the summariser failed and is cooling down ({left} s left); the "
                            "offline summariser compresses meanwhile")
    if not session.turns_ended or session.last_decision is None:
        return "no_turn", ("no turn has ended yet: is end_turn() called after each turn? "
                           "Compression runs there")
    decision, decided_by = session.last_decision
    reason = decision.reason or ""
    if reason in ("ineffective", "fallback_streak"):
        return reason, (f"automatic compression is paused ({reason}: the last compressions "
                        "freed too little) until the window grows past the request budget")
    if reason.startswith(("futile", "not worth")):
        return reason.split(":")[0], reason
    if not decision.compress and reason == "below_threshold":
        return "one_turn", (
            "the newest messages grew past the budget within one turn (below the trigger of "
            f"{decision.threshold_tokens or 0:,} tokens at the last end_turn, decided by "
            f"{decided_by})"
        )
    return "newest_turn", ("compression could not bring the window under the budget: the "
                           "newest turn (kept whole by compression) is larger than the "
                           "budget allows")


def select(session: Session, base: list[Message]) -> list[Message]:
    host = session.host
    # Engines without a select_context (the compressor) are not asked: no request is built
    # and no state read for them.
    chain = [name for name in host.chain("select_context")
             if host.runner.implements(name, "select_context")]
    session.last_select = []
    if not chain:
        return base
    incoming = next((m for m in reversed(base) if m.get("role") == "user"), None)
    model = host.config.model
    budget = max(model.context_length // 2, model.context_length - model.max_output_tokens)
    try:
        history = host.store.history_reader(session.id)
        states = {name: host.store.get_engine_state(session.id, name) for name in chain}
    except StoreError:
        history, states = None, {}
    request = SelectRequest(
        session_id=session.id,
        messages=[],
        incoming_message=incoming,
        budget_tokens=budget,
        history=history,
    )
    request.__dict__["messages"] = base  # the window's read-only messages: valid already
    result, stamps = host.runner.chain("select_context", chain, request, states=states)
    for stamp in stamps:
        if stamp.provenance.value == "none":
            continue  # the engine does not implement select_context, or left it as is
        entry: dict[str, Any] = {"engine": stamp.plugin, "provenance": str(stamp.provenance)}
        if stamp.adopted and isinstance(stamp.value, SelectResult):
            entry["decision"] = stamp.value.decision
            if stamp.value.state is not None:
                try:
                    host.store.set_engine_state(session.id, stamp.plugin, stamp.value.state)
                except (StoreError, TypeError, ValueError) as exc:
                    entry["state_error"] = str(exc)
        elif stamp.error:
            entry["error"] = stamp.error
        session.last_select.append(entry)
    return result.messages if result is not None else base


def select_context(session: Session, messages: Sequence[Message]) -> list[Message]:
    """:meth:`Session.select_context`."""
    session._sync()
    base = [dict(m) for m in messages]
    selected = session._select(base)
    if selected is base:
        return list(messages)
    if _needs_repair(selected):
        selected, _ = repair_tool_pairs(selected)
    return selected
