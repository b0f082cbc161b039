"""Compaction receipts (issue 29): what one compression attempt did, counted by the host from
the windows before and after, stored, and — after a commit — handed to ``on_post_compress``.

Recording never changes a compression's outcome: a store that refuses the receipt is logged
and said in the session's events; a failing hook implementation is fenced like every other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_host.messages import SUMMARY_METADATA_KEY
from hermes_host.models import CompactionReceipt, Message, ReceiptPart
from hermes_host.redact import redact
from hermes_host.session.manifest import window_ids
from hermes_host.session.reports import CompressionReport
from hermes_host.store import StoreError
from hermes_host.store.manifests import RecordingStore, encode_ids

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")

__all__ = ["Attempt", "classify"]

_SUMMARISING = frozenset({"summarised", "fallback"})


def _key(message: Message) -> tuple[Any, ...]:
    content = message.get("content")
    return (
        message.get("role"),
        message.get("tool_call_id"),
        content if isinstance(content, str) else repr(content),
        repr(message.get("tool_calls")) if message.get("tool_calls") else None,
    )


def _sketch(message: Message) -> tuple[Any, ...]:
    """What :func:`_key` holds, but a tool call list stood for by its first call's id: equal
    keys make equal sketches, and a sketch costs no ``repr`` of the calls."""
    content = message.get("content")
    calls = message.get("tool_calls")
    first: Any = None
    if calls:
        head = calls[0] if isinstance(calls, list) and calls else None
        first = ("id", head.get("id")) if isinstance(head, dict) else "?"
    return (
        message.get("role"),
        message.get("tool_call_id"),
        content if isinstance(content, str) else repr(content),
        first,
    )


def _text(message: Message) -> Any:
    content = message.get("content")
    return content if isinstance(content, str) else repr(content)


def classify(
    before: Sequence[Message], after: Sequence[Message], outcome: str, count: Any,
    before_counts: Sequence[int] | None = None,
) -> dict[str, ReceiptPart]:
    """``kept``, ``pruned``, ``summarised``, ``dropped`` and ``summary`` for a window that went
    from ``before`` to ``after`` (system prompts excluded; ``count`` counts one message;
    ``before_counts``, when given, are the counts of ``before`` already known)."""
    after_keys = {_key(m) for m in after}
    # A message of ``before`` can equal one of ``after`` only if its text is one of theirs
    # (a set lookup: a string's hash is kept) and then its sketch (the key with a tool call
    # list stood for by its first id): the full key is made for those alone.  A compression
    # keeps a tail of a long window: O(after) keys instead of O(before) (issue 32).
    after_texts = {_text(m) for m in after}
    after_sketches = {_sketch(m) for m in after}
    candidates = [(m, _key(m)) for m in before
                  if _text(m) in after_texts and _sketch(m) in after_sketches]
    before_keys = {key for _, key in candidates}
    kept_ids = {id(m) for m, key in candidates if key in after_keys}
    after_results = {m.get("tool_call_id") for m in after if m.get("role") == "tool"}
    summaries = [m for m in after if _key(m) not in before_keys
                 and (m.get(SUMMARY_METADATA_KEY) or m.get("role") != "tool")]
    known = before_counts if before_counts is not None and len(before_counts) == len(before) \
        else None
    parts = {name: [0, 0] for name in ("kept", "pruned", "summarised", "dropped", "summary")}
    gone = "summarised" if outcome in _SUMMARISING and summaries else "dropped"
    # Every message of ``before`` is gone unless kept or pruned: those are found and moved,
    # the rest counted in one sum when their counts are known.
    parts[gone] = [len(before), sum(known) if known is not None else 0]
    for i, message in enumerate(before):
        if id(message) in kept_ids:
            name = "kept"
        elif message.get("role") == "tool" and message.get("tool_call_id") in after_results:
            name = "pruned"
        else:
            if known is None:
                parts[gone][1] += count(message)
            continue
        tokens = known[i] if known is not None else count(message)
        parts[name][0] += 1
        parts[name][1] += tokens
        parts[gone][0] -= 1
        if known is not None:
            parts[gone][1] -= tokens
    for message in summaries:
        parts["summary"][0] += 1
        parts["summary"][1] += count(message)
    return {name: ReceiptPart(messages=n, tokens=t) for name, (n, t) in parts.items()}


class Attempt:
    """One compression attempt being recorded: created when the pass has read its window under
    the lease, finished by :meth:`record` with the pass's report."""

    def __init__(self, session: Session, trigger: str, base: list[Message]) -> None:
        self.session = session
        self.trigger = trigger
        self.session_id = session.id
        skip = 1 if base and base[0].get("role") == "system" else 0
        self.base = base[skip:]
        running = session._running  # the window's per-message counts, when they match it
        self.counts: list[int] | None = (
            [running.count_at(i) for i in range(skip, len(running))]
            if len(running) == len(base) else None)
        store = session.host.store
        self.enabled = (isinstance(store, RecordingStore)
                        and session.host.config.store.record_requests)
        self.before_ids: list[int] = []
        if self.enabled:
            try:
                self.before_ids = list(window_ids(session))
            except StoreError:
                self.enabled = False

    def record(self, report: CompressionReport) -> CompactionReceipt | None:
        """Store the receipt of ``report``; hand a committed one to ``on_post_compress``."""
        if not self.enabled or report.status not in ("committed", "not_committed", "rejected"):
            return None
        session = self.session
        host = session.host
        committed = report.status == "committed"
        after = session._window if committed else self.base
        parts = classify(self.base, after, report.outcome, host.tokens.count, self.counts)
        decided_by, threshold = None, None
        if self.trigger == "auto" and session.last_decision is not None:
            decision, decided_by = session.last_decision
            threshold = decision.threshold_tokens
        try:
            after_ids = list(window_ids(session)) if committed else self.before_ids
        except StoreError:
            after_ids = []
        receipt = CompactionReceipt(
            conversation_id=session.conversation_id,
            session_id=self.session_id,
            result_session_id=session.id,
            at=time.time(),
            trigger=self.trigger,
            decided_by=decided_by,
            threshold_tokens=threshold,
            engine=report.engine,
            status=report.status,
            outcome=report.outcome,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            messages_before=len(self.base),
            messages_after=len(after),
            llm_calls=report.llm_calls,
            summariser=report.summary.as_dict(),
            duration=round(report.duration, 4),
            notes=[redact(n) for n in report.notes],
            message=redact(report.message) if report.message else None,
            before_ids=encode_ids(self.before_ids),
            after_ids=encode_ids(after_ids),
            **parts,
        )
        store = host.store
        assert isinstance(store, RecordingStore)
        try:
            receipt = receipt.model_copy(update={"id": store.record_receipt(receipt)})
        except StoreError as exc:
            session._emit(session.events, f"⚠ compaction receipt not recorded: {exc}")
            log.warning("session %s: receipt not recorded: %s", session.id, redact(str(exc)))
        if committed:
            host._post_compress(receipt)
        return receipt
