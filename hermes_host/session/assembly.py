"""Turn assembly (SPEC section 2): the request for the next model call — the window, the
``select_context`` chain (R-3.1, R-11.3), turn-scoped injections (R-2.1, R-2.2), the wire
sanitiser (R-7.5) — and the window bound.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

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
    """:meth:`Session.build_request`."""
    session._sync()
    base = session.window()
    session._check_cache(base)
    selected = session._select(base)
    extras = list(injections or [])
    request = apply_injections(selected, extras) if extras else selected
    if request is not base:  # base is normalised already: only a changed list is scanned
        if _needs_repair(request):
            request, _ = repair_tool_pairs(request)
        if _needs_merge(request):
            request, _ = normalize_alternation(request)
    wire = sanitize_for_wire(request)
    session._check_fits(wire, unchanged=request is base)
    return wire


def check_fits(session: Session, request: list[Message], *, unchanged: bool) -> None:
    """A request larger than the model's window is logged at WARNING and noted in
    :meth:`status` (``window_warning``) — e.g. when ``end_turn`` was skipped so nothing
    compressed (issue 12); the host still returns it, the caller decides."""
    limit = session.host.config.model.context_length
    tokens = session.window_tokens if unchanged else session.host.tokens.count_all(request)
    if tokens <= limit:
        session.window_warning = None
        return
    session.window_warning = (
        f"the last request was {tokens:,} tokens, over the model's context window of "
        f"{limit:,} (is end_turn() called after each turn?)"
    )
    log.warning("session %s: %s", session.id, session.window_warning)


def select(session: Session, base: list[Message]) -> list[Message]:
    host = session.host
    chain = host.chain("select_context")
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
        messages=base,
        incoming_message=incoming,
        budget_tokens=budget,
        history=history,
    )
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
