"""The requests the host would send each lifecycle hook for a generated session: fixed
clock, the window past the default trigger, a ``select_context`` budget that forces a choice,
the offline summariser (the kit never calls a network)."""

from __future__ import annotations

import copy
import datetime as _dt

from pydantic import BaseModel

from hermes_host.hookspecs import LIFECYCLE_HOOKS
from hermes_host.models import (
    CompressRequest,
    GuardState,
    PruneRequest,
    SelectRequest,
    ShouldCompressRequest,
    SummarizerSettings,
)
from hermes_host.testing.conformance.history import KitHistory
from hermes_host.testing.generate import Session
from hermes_host.tokens import count_messages

__all__ = ["build_request"]

_NOW = 1_767_225_600.0  # a fixed clock: requests (and so deterministic answers) reproduce
_TODAY = _dt.date(2026, 1, 1)


def build_request(hook: str, session: Session) -> BaseModel:
    """The request the host would send ``hook`` for ``session`` (a fresh object each time).

    The context length is set so the window is past the default trigger (compression is
    due) and the ``select_context`` budget is half the window (selection must choose).
    Compression uses the offline summariser: the kit never calls a network.
    """
    messages = copy.deepcopy(session.messages)
    tokens = count_messages(messages)
    context_length = max(1024, int(tokens * 1.6))
    guards = GuardState(now=_NOW)
    sid = f"conformance-{session.id}"
    if hook == "should_compress":
        return ShouldCompressRequest(
            session_id=sid,
            messages=messages,
            prompt_tokens=tokens,
            current_tokens=tokens,
            context_length=context_length,
            model="claude-sonnet-4-5",
            guards=guards,
        )
    if hook == "compress":
        return CompressRequest(
            session_id=sid,
            messages=messages,
            current_tokens=tokens,
            context_length=context_length,
            model="claude-sonnet-4-5",
            guards=guards,
            today=_TODAY,
            summarizer=SummarizerSettings(provider="offline"),
        )
    if hook == "select_context":
        last = messages[-1] if messages else None
        request = SelectRequest(
            session_id=sid,
            messages=messages,
            incoming_message=copy.deepcopy(last) if last and last["role"] == "user" else None,
            budget_tokens=max(64, tokens // 2),
        )
        request.history = KitHistory(request.messages)
        return request
    if hook == "prune_tool_results_only":
        return PruneRequest(
            session_id=sid,
            messages=messages,
            current_tokens=tokens,
            context_length=context_length,
            min_output_chars=2_000,
            min_reclaim_tokens=256,
        )
    raise ValueError(f"unknown lifecycle hook {hook!r}; allowed: {', '.join(LIFECYCLE_HOOKS)}")
