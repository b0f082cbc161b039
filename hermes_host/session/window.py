"""The active context (R-1.1): system prompt + the normalised window (R-1.4, R-6.9), built
incrementally as it grows, its running token total, and the prompt-caching check (R-1.3).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_host.fence.frozen import Unfreezable, freeze
from hermes_host.fence.windows import common_prefix
from hermes_host.messages import (
    DANGLING_RESULT,
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
    tool_call_ids,
    wire_form,
)
from hermes_host.models import (
    Message,
)
from hermes_host.session import intake
from hermes_host.session.reports import (
    Normalisation,
)

if TYPE_CHECKING:
    from hermes_host.session import Session

log = logging.getLogger("hermes_host.host")


def _needs_repair(messages: Sequence[Message]) -> bool:
    """Cheap scan: does any call lack its result, or any result lack its call?"""
    pending: set[str] = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return True
            pending.discard(call_id)
            continue
        if pending:
            return True
        if role == "assistant":
            pending = set(tool_call_ids(message))
    return bool(pending)


def _needs_merge(messages: Sequence[Message]) -> bool:
    """Cheap scan: are two user or two assistant messages adjacent?"""
    return any(
        a.get("role") == b.get("role") and a.get("role") in ("user", "assistant")
        for a, b in itertools.pairwise(messages)
    )


class _WindowScan:
    """:func:`_needs_repair` and :func:`_needs_merge` kept up to date as a window grows:
    :meth:`advance` scans only the messages appended since its last call (a window replaced
    by another list is scanned from the start)."""

    def __init__(self) -> None:
        self.source: list[Message] | None = None
        self.length = 0
        self.pending: set[object] = set()
        self.last_role: object = None
        self.broken = False  # a repair or a merge is needed before ``length``

    def advance(self, window: list[Message]) -> bool:
        """Whether ``window`` needs neither a repair nor a merge."""
        if window is not self.source or len(window) < self.length:
            self.source, self.length, self.pending = window, 0, set()
            self.last_role, self.broken = None, False
        if not self.broken:
            for message in window[self.length:]:
                role = message.get("role")
                if role in ("user", "assistant") and role == self.last_role:
                    self.broken = True  # _needs_merge
                if role == "tool":
                    call_id = message.get("tool_call_id")
                    if call_id not in self.pending:
                        self.broken = True  # a result without its call
                    self.pending.discard(call_id)
                else:
                    if self.pending:
                        self.broken = True  # a call without its result
                    if role == "assistant":
                        self.pending = set(tool_call_ids(message))
                self.last_role = role
                if self.broken:
                    break
        self.length = len(window)
        return not self.broken and not self.pending


@dataclass
class Wire:
    """The wire form of each message of the cached window (R-7.5), computed once per message
    (issue 32), when a request first needs it (a compression pass sends none): a read-only
    message without ``_`` keys is its own wire form, one with them a read-only copy without
    them.  ``None`` marks a message that could not be made read-only (not JSON-like data):
    its wire form is copied per request."""

    forms: list[Message | None] = field(default_factory=list)
    copied: int = 0  # how many ``None``
    todo: list[Message] = field(default_factory=list)  # appended, not made yet

    def reset(self, messages: Iterable[Message]) -> None:
        self.forms, self.copied, self.todo = [], 0, list(messages)

    def extend(self, messages: Iterable[Message]) -> None:
        self.todo.extend(messages)

    def request(self, window: list[Message]) -> list[Message]:
        """A new list of the wire forms of ``window`` (the window these forms were made
        for): O(1) Python work per message already made, unless it is not read-only."""
        for message in self.todo:
            form = wire_form(message)
            self.forms.append(form)
            self.copied += form is None
        self.todo = []
        forms = list(self.forms)
        if self.copied:
            for i, form in enumerate(forms):
                if form is None:
                    forms[i] = sanitize_for_wire([window[i]])[0]
        return forms  # type: ignore[return-value]


def _frozen(messages: Iterable[Message]) -> list[Message]:
    """``messages`` read-only (each frozen once, as it enters the cached window: the fence
    then shares them with engines and compares results by identity, issue 32); a message
    that is not JSON-like data stays as it is."""
    out: list[Message] = []
    for message in messages:
        try:
            out.append(freeze(message))
        except Unfreezable:
            out.append(message)
    return out


def _intake(session: Session, messages: list[Message], *, reset: bool) -> list[Message]:
    """``messages`` as they enter the cached window: texts too long for any request clipped
    (:mod:`hermes_host.session.intake`, issue 31), then frozen.  ``session._clipped`` keeps
    each clipped message with its original (``reset``: a window built afresh)."""
    config = session.host.config
    limit = intake.text_limit(config.model.context_length, config.model.max_output_tokens,
                              config.fence.max_result_bytes)
    clipped, at = intake.clip_all(messages, limit)
    frozen = _frozen(clipped)
    if reset:
        session._clipped = []
    session._clipped.extend((frozen[i], messages[i]) for i in at)
    return frozen


def _closes_open_call(message: Message) -> bool:
    """Is this the note :func:`repair_tool_pairs` adds for a call without a result?"""
    return message == {
        "role": "tool", "tool_call_id": message.get("tool_call_id"), "content": DANGLING_RESULT
    }


def _canonical(message: Message) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def built(session: Session) -> list[Message]:
    """The cached normalised window itself (private: :meth:`window` hands out copies)."""
    key = (len(session._window), session.compression_epoch)
    cache = session._window_cache
    if cache is not None and cache[0] == key:
        return cache[1]
    clean = session._scan.advance(session._window)
    if (clean and cache is not None and session._cache_clean
            and cache[0][1] == session.compression_epoch
            and session._cache_source is session._window and cache[0][0] < key[0]):
        new = _intake(session, session._window[cache[0][0]:], reset=False)
        built = cache[1]  # private: callers get copies
        built.extend(new)
        session._wire.extend(new)
        session._running.extend(new)
        session._window_cache = (key, built, session._running.total)
        return built
    merged, fixes, merges = list(session._window), 0, 0
    if not clean:
        if _needs_repair(merged):
            merged, fixes = repair_tool_pairs(merged)
        if _needs_merge(merged):
            merged, merges = normalize_alternation(merged)
    session.normalised = Normalisation(merged_adjacent=merges, tool_pairs_repaired=fixes)
    head: list[Message] = (
        [{"role": "system", "content": session.system_prompt}] if session.system_prompt else []
    )
    built = _frozen(head) + _intake(session, merged, reset=True)
    session._wire.reset(built)
    session._window_cache = (key, built, session._count_window(built))
    session._cache_clean = clean
    session._cache_source = session._window
    return built


def count_window(session: Session, built: list[Message]) -> int:
    """Tokens of ``built``, recounting only what changed since the last window: the
    unchanged prefix keeps its counts, so a turn costs O(new messages) in tokenising
    (equality of unchanged messages is a cheap identity-first comparison)."""
    previous = session._window_cache[1] if session._window_cache is not None else []
    same = 0
    for old, new in zip(previous, built, strict=False):
        if old != new:
            break
        same += 1
    session._running.truncate(same)
    stored, session._stored_counts = session._stored_counts, None
    if stored is None:
        session._running.extend(built[same:])
        return session._running.total
    # A resumed window: a message equal to the one the store handed at the same place (the
    # window's messages are the stored ones, frozen, unless normalised or clipped) has the
    # count the store made of it; only the others are tokenised (issue 32).
    messages, counts = stored
    head = 1 if session.system_prompt else 0
    running = session._running
    for at in range(same, len(built)):
        i = at - head
        message = built[at]
        if 0 <= i < len(counts) and message == messages[i]:
            running.append_counted(counts[i])
        else:
            running.append(message)
    return running.total


def check_cache(session: Session, base: list[Message]) -> bool:
    """R-1.3: the previous base (minus its open final message) must be a byte-identical
    prefix of ``base`` unless a compression was committed in between."""
    # Messages equal to last time's at the same place (found by C-level slice compares,
    # identity first: the cached window's messages are the same objects) keep their
    # canonical forms, so the check serialises only what is new this turn (issue 32).
    previous = session._last_base[1] if session._last_base is not None else []
    last = session._last_base_messages
    same = common_prefix(base, last, min(len(base), len(last), len(previous)))
    canon = previous[:same] + [_canonical(m) for m in base[same:]]
    session._last_base_messages = list(base)  # base may be the cached list, which grows
    ok = True
    if session._last_base is not None and session._last_base[0] == session.compression_epoch:
        prev = session._last_base[1]
        session.cache_checks += 1
        same_system = bool(prev) == bool(canon) and (not prev or prev[0] == canon[0])
        keep = prev[:-1] if len(prev) > 1 else prev[:1]
        ok = same_system and canon[: len(keep)] == keep
        if not ok:
            session.cache_violations += 1
    session._last_base = (session.compression_epoch, canon)
    return ok
