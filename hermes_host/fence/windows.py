"""What the fence knows of a frozen message list, so a call costs O(change), not O(window)
(issues 15 and 32).

A :class:`Window` holds a list of read-only messages (:mod:`hermes_host.fence.frozen`) and,
measured once when first needed, each message's size and summary flag and the list's
invariant violations.  A result that reuses most of it is measured and validated only where
it differs (:meth:`Window.splice`); the next request's list is rebased on it
(:meth:`Window.rebase`).  :func:`window_of` finds the window of a list among those recently
seen, and :func:`hand_out` gives a read-only engine its own list of a window's messages,
recognised by identity when the engine answers with it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.fence.frozen import FrozenDict, freeze, size_of
from hermes_host.messages import Violation, check_invariants, is_summary
from hermes_host.models import _SHARED_LISTS

__all__ = ["Splice", "Window", "common_prefix", "common_suffix", "hand_out", "remember",
           "window_of"]


@dataclass(frozen=True)
class Splice:
    """A result's messages as ``ref[:prefix] + middle + ref[len(ref) - suffix:]``."""

    prefix: int
    suffix: int
    middle: list[Any]


def _is_summary(message: Any) -> bool:
    return isinstance(message, dict) and is_summary(message)


@dataclass
class Window:
    """A frozen message list and what the fence knows of it (sizes, summaries, validity).

    ``ref`` is the fence's own list (never handed out); ``items`` the list the caller's
    request holds (the same frozen messages; the caller may change the *list*, which
    :func:`window_of` notices).

    Sizes and summary flags are measured when first needed, not when the window is built
    (issue 32): a compression's result keeps a small part of a large window, and is measured
    and checked by what it keeps (O(result)); a result that keeps most of the window (a
    ``select_context`` answer, the next request) measures the whole window once and then
    reuses it, as before."""

    ref: list[FrozenDict]
    items: list[Any]
    _sizes: list[int] | None = field(default=None, repr=False)
    _summaries: list[bool] | None = field(default=None, repr=False)
    _total: int = 0
    _violations: list[Violation] | None = field(default=None, repr=False)
    _summary_count: int = 0
    shared: int = 0  # messages taken from the window this one was rebased on

    @classmethod
    def build(cls, messages: Sequence[Any], *, violations: list[Violation] | None = None
              ) -> Window:
        ref = [freeze(m) for m in messages]
        return cls(ref, list(ref), _violations=violations)

    @property
    def sizes(self) -> list[int]:
        """Bytes of each message (:func:`size_of`), measured once."""
        if self._sizes is None:
            self._sizes = [size_of(m) for m in self.ref]
            self._total = sum(self._sizes)
        return self._sizes

    @property
    def total(self) -> int:
        """Bytes of the whole window."""
        self.sizes  # noqa: B018 - measured once, on first need
        return self._total

    @property
    def summaries(self) -> list[bool]:
        """Whether each message is a summary block, found once."""
        if self._summaries is None:
            self._summaries = [_is_summary(m) for m in self.ref]
            self._summary_count = sum(self._summaries)
        return self._summaries

    @property
    def summary_count(self) -> int:
        self.summaries  # noqa: B018 - found once, on first need
        return self._summary_count

    def _keeps_little(self, cut: Splice) -> bool:
        """Does ``cut`` keep less than half of a window not measured yet?  Then what it keeps
        is measured alone, and the window is left unmeasured."""
        return self._sizes is None and 2 * (cut.prefix + cut.suffix) < len(self.ref)

    @property
    def violations(self) -> list[Violation]:
        if self._violations is None:
            self._violations = check_invariants(self.ref)
        return self._violations

    def splice(self, out: list[Any]) -> Splice:
        """``out`` against ``ref``: the longest equal prefix and suffix (C-level compares;
        on equality the fence's own objects are used, never the engine's)."""
        ref = self.ref
        if len(out) == len(ref) and out == ref:
            return Splice(len(ref), 0, [])
        limit = min(len(out), len(ref))
        prefix = common_prefix(out, ref, limit)
        room = limit - prefix
        suffix = common_suffix(out, ref, room)
        return Splice(prefix, suffix, out[prefix:len(out) - suffix])

    def derive(self, cut: Splice, middle: list[FrozenDict]) -> Window:
        """The window of an adopted result (already validated: no violations)."""
        n, p, s = len(self.ref), cut.prefix, cut.suffix
        if p == n and not middle:  # unchanged: share everything but the caller's list
            return Window(self.ref, list(self.ref), self._sizes, self._summaries, self._total,
                          [], self._summary_count)
        if self._keeps_little(cut):  # measured when (and if) the new window is asked
            ref = [*self.ref[:p], *middle, *self.ref[n - s:]]
            return Window(ref, list(ref), _violations=[])
        sizes_mid = [size_of(m) for m in middle]
        flags_mid = [is_summary(m) for m in middle]
        ref = [*self.ref[:p], *middle, *self.ref[n - s:]]
        sizes = [*self.sizes[:p], *sizes_mid, *self.sizes[n - s:]]
        summaries = [*self.summaries[:p], *flags_mid, *self.summaries[n - s:]]
        total = self.total - sum(self.sizes[p:n - s]) + sum(sizes_mid)
        count = self.summary_count - sum(self.summaries[p:n - s]) + sum(flags_mid)
        return Window(ref, list(ref), sizes, summaries, total, [], count)

    def rebase(self, messages: Sequence[Any]) -> Window | None:
        """The window of ``messages`` (a new list, e.g. the next request's) built from this
        one: messages equal to this window's are shared (their sizes and summary flags
        reused), only the rest frozen and measured, and — when this window is known valid —
        only the change checked for invariants (issue 15).  None when nothing is shared."""
        out = list(messages)
        cut = self.splice(out)
        if cut.prefix + cut.suffix == 0:
            return None
        middle = [freeze(m) for m in cut.middle]
        violations: list[Violation] | None = None
        if self._violations is not None and not self._violations:  # known valid: the change
            violations = self.splice_violations(cut, middle)
        built = self.derive(cut, middle)
        built._violations = violations  # None: checked in full when first asked
        built.shared = cut.prefix + cut.suffix
        return built

    def kept_size(self, cut: Splice) -> int:
        """Bytes of the messages a splice keeps from ``ref``."""
        n = len(self.ref)
        if self._keeps_little(cut):
            return sum(size_of(m) for m in (*self.ref[:cut.prefix], *self.ref[n - cut.suffix:]))
        return self.total - sum(self.sizes[cut.prefix:n - cut.suffix])

    def splice_violations(self, cut: Splice, middle: list[Any], *, max_summaries: int = 1
                          ) -> list[Violation]:
        """The window invariants of ``ref[:p] + middle + ref[n-s:]``, checked only around
        the change when ``ref`` itself is valid (invariants are local to a tool group and
        its neighbours; the summary count is kept per message)."""
        ref, n, p, s = self.ref, len(self.ref), cut.prefix, cut.suffix
        if p + s == n and not middle and self._violations == []:
            return []  # unchanged, and known valid (a select_context that kept its window)
        # Check the result whole when nothing is known to hold, or when it is less than half
        # a window not checked yet: that costs less than learning whether the window holds
        # (issue 32: a compression keeps a tail of a long window).
        small = self._violations is None and 2 * (p + s + len(middle)) < n
        if small or self.violations:
            return check_invariants([*ref[:p], *middle, *ref[n - s:]],
                                    max_summaries=max_summaries)
        a = p
        while a > 0 and ref[a - 1].get("role") == "tool":
            a -= 1
        if a > 0:
            a -= 1  # the head of the group the prefix ends in
        b = n - s
        while b < n and ref[b].get("role") == "tool":
            b += 1
        if b < n:
            b += 1  # the next group's head, and its results
            while b < n and ref[b].get("role") == "tool":
                b += 1
        local = [*ref[a:p], *middle, *ref[n - s:b]]
        found = [
            v for v in check_invariants(local, max_summaries=len(local) + 1)
            if v.rule != "summary_count"
        ]
        shift = a
        found = [Violation(v.rule, None if v.index is None else v.index + shift, v.detail)
                 for v in found]
        summaries = (self.summary_count - sum(self.summaries[p:n - s])
                     + sum(1 for m in middle if isinstance(m, dict) and is_summary(m)))
        if summaries > max_summaries:
            found.append(Violation(
                "summary_count", None, f"{summaries} summary blocks (at most {max_summaries})"
            ))
        return found


def common_prefix(a: list[Any], b: list[Any], room: int) -> int:
    """The length of the longest equal prefix of ``a`` and ``b`` (at most ``room``): a
    galloping then binary search over C-level slice compares (a window that grew by one
    turn costs a few slice compares, not a Python loop over every message)."""
    if room <= 0 or not (a[0] is b[0] or a[0] == b[0]):
        return 0
    if a[:room] == b[:room]:  # the common case (nothing changed): one compare
        return room
    good, step = 1, 2
    while step <= room and a[:step] == b[:step]:
        good, step = step, step * 2
    bad = min(step, room + 1)
    while bad - good > 1:
        mid = (good + bad) // 2
        if a[:mid] == b[:mid]:
            good = mid
        else:
            bad = mid
    return good


def common_suffix(a: list[Any], b: list[Any], room: int) -> int:
    """The length of the longest equal suffix of ``a`` and ``b`` (at most ``room``): a
    galloping then binary search over C-level slice compares."""
    if room <= 0 or not (a[-1] is b[-1] or a[-1] == b[-1]):
        return 0
    if a[len(a) - room:] == b[len(b) - room:]:  # one compare when all of ``room`` is equal
        return room
    good, step = 1, 2
    while step <= room and a[-step:] == b[-step:]:
        good, step = step, step * 2
    bad = min(step, room + 1)
    while bad - good > 1:
        mid = (good + bad) // 2
        if a[-mid:] == b[-mid:]:
            good = mid
        else:
            bad = mid
    return good


# --- the windows the fence has seen: one freeze per window, then O(change) -------------------

_CACHE_SIZE = 32
_cache: OrderedDict[int, Window] = OrderedDict()
_cache_lock = threading.Lock()


def remember(window: Window) -> Window:
    with _cache_lock:
        _cache[id(window.items)] = window
        _cache.move_to_end(id(window.items))
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return window


_HANDED_SIZE = 8
"""Lists kept to be recognised, in :data:`_aliases` and in :data:`_handed` each: the calls
in flight at once and the sessions taking turns in one process.  With more sessions than
this interleaving, a call finds its list evicted and rebases (a compare per message, still
O(change) in Python work); each kept list also keeps its messages alive until evicted."""
_aliases: OrderedDict[int, tuple[list[Any], Window]] = OrderedDict()
"""Callers' own lists :func:`window_of` has seen, by ``id`` (the list is kept, so the id is
not reused while it is here): the window each held when last seen."""

_REBASE_FROM = 3  # how many of the most recent windows a new list is compared against


def window_of(messages: list[Any]) -> Window:
    """The :class:`Window` of a request's message list: the remembered one while the list
    still holds exactly its messages (one C-level compare); else one rebased on the recent
    window it shares the most messages with (a host builds a fresh list of fresh dicts per
    request: only what changed is frozen, measured and checked); else a new one (one
    freeze).  Raises :class:`Unfreezable` for a message that is not JSON-like data."""
    key = id(messages)
    with _cache_lock:
        known = _cache.get(key)
        if known is not None:
            _cache.move_to_end(key)  # in use: not the next one evicted
        alias = _aliases.get(key)
    if known is not None and known.items is messages and messages == known.ref:
        return known
    if alias is not None and alias[0] is messages:
        known = alias[1]  # a caller's own list seen before (a session's cached window)
        if len(messages) == len(known.ref) and messages == known.ref:
            return known
    with _cache_lock:
        recent = list(_cache.values())[-_REBASE_FROM:]
    candidates = [known] if known is not None else []  # e.g. this list, changed in place
    candidates += [w for w in reversed(recent) if w is not known]
    best: Window | None = None
    for previous in candidates:
        candidate = previous.rebase(messages)
        if candidate is not None and (best is None or candidate.shared > best.shared):
            best = candidate
            if best.shared == len(best.ref):
                break
    window = remember(best if best is not None else Window.build(messages))
    with _cache_lock:  # the next call with this very list, unchanged, is one compare
        _aliases[key] = (messages, window)
        _aliases.move_to_end(key)
        while len(_aliases) > _HANDED_SIZE:
            _aliases.popitem(last=False)
    return window


# --- the lists handed to read-only engines: recognised when they come back -----------------

_handed: OrderedDict[int, tuple[list[Any], list[FrozenDict]]] = OrderedDict()


def hand_out(window: Window) -> list[Any]:
    """A list of ``window``'s frozen messages for a read-only engine (its own list: it may
    change the list, never the messages).  An engine that answers with this very list, still
    holding them, is recognised by :func:`_handed_back` in one C-level compare (issue 32)."""
    out = list(window.ref)
    with _cache_lock:
        _handed[id(out)] = (out, window.ref)
        while len(_handed) > _HANDED_SIZE:
            _handed.popitem(last=False)
    return out


def _handed_back(value: list[Any]) -> list[Any] | None:
    """The fence's own messages when ``value`` is a list :func:`hand_out` made and it still
    holds exactly them (equal messages count: the fence's are returned), else None."""
    with _cache_lock:
        entry = _handed.get(id(value))
    if entry is None or entry[0] is not value:
        return None
    ref = entry[1]
    return list(ref) if len(value) == len(ref) and value == ref else None


_SHARED_LISTS.append(_handed_back)
