"""The active context (R-1.1): system prompt + the normalised window (R-1.4, R-6.9), built
incrementally as it grows, its running token total, and the prompt-caching check (R-1.3).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_host.messages import (
    DANGLING_RESULT,
    normalize_alternation,
    repair_tool_pairs,
    tool_call_ids,
)
from hermes_host.models import (
    Message,
)
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
        new = session._window[cache[0][0]:]
        built = cache[1]  # private: callers get copies
        built.extend(new)
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
    built = head + merged
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
    session._running.extend(built[same:])
    return session._running.total


def check_cache(session: Session, base: list[Message]) -> bool:
    """R-1.3: the previous base (minus its open final message) must be a byte-identical
    prefix of ``base`` unless a compression was committed in between."""
    # A message equal to the one at the same place last time has the same canonical
    # form: reuse it, so the check serialises only what is new this turn.
    previous = session._last_base[1] if session._last_base is not None else []
    canon = [
        previous[i]
        if i < len(previous) and i < len(session._last_base_messages)
        and m == session._last_base_messages[i]
        else _canonical(m)
        for i, m in enumerate(base)
    ]
    session._last_base_messages = base
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
