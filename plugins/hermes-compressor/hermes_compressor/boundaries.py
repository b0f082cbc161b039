"""Steps 2 and 3: protect the head, find the tail cut by tokens (R-6.2, R-6.3, R-6.7).

The window is split into ``head`` (kept verbatim), ``middle`` (summarised) and ``tail`` (kept
verbatim).  Indices are into a *working* list in which blank echoes are gone and an earlier
summary block has been taken out (see :mod:`hermes_compressor.summary`).

Tail rules, in the order they apply:

1. walk back from the end accumulating tokens until the tail budget is spent — but keep at
   least the count floor (``protect_last_n``, capped by ``max_tail_message_floor``) while the
   tail stays under the soft ceiling of 1.5 × budget, and always at least
   :data:`MIN_TAIL_MESSAGES` messages whatever they cost;
2. align backward: a cut inside a run of ``tool`` results moves before their parent
   ``assistant`` — a tool-call group is never split;
3. latest-user rule: the newest ``min_tail_user_messages`` actionable user messages are pulled
   into the tail when that keeps the tail under the soft ceiling.  When they lie further back
   (long unattended agent runs) they go to the summary, whose *Historical Task Snapshot*
   keeps the request verbatim;
4. role-collision rule: when the cut lands exactly on the newest actionable user message, the
   older assistant/tool bridge before it is kept too, so the summary (pinned to ``user`` after
   the system prompt) and the first tail message cannot collide into one role.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hermes_host.messages import is_summary, text_of
from hermes_host.models import Message

from hermes_compressor.summary import choose_role

__all__ = [
    "MIN_TAIL_MESSAGES",
    "SOFT_CEILING",
    "align_backward",
    "find_cut",
    "head_size",
    "is_actionable_user",
    "own_role_cut",
    "short_session_cut",
]

MIN_TAIL_MESSAGES = 3
"""Compression needs head + at least this many tail messages + at least one middle (R-6.7)."""
SOFT_CEILING = 1.5
"""The tail may exceed its budget up to this factor to honour the message-count floor."""


def is_actionable_user(message: Message) -> bool:
    """A real user turn: role ``user``, not blank, not a summary block."""
    return (
        message.get("role") == "user"
        and bool(text_of(message).strip() or message.get("content"))
        and not is_summary(message)
    )


def head_size(messages: Sequence[Message], *, first_round: bool, protect_first_n: int) -> int:
    """Messages protected at the start (R-6.2): the system prompt always; ``protect_first_n``
    more on the first compression only — later rounds let early turns go to the summary so
    they do not fossilise.  The head never ends inside a tool-call group."""
    n = 1 if messages and messages[0].get("role") == "system" else 0
    if first_round:
        n += protect_first_n
    n = min(n, len(messages))
    while n < len(messages) and messages[n].get("role") == "tool":
        n += 1
    return n


def align_backward(messages: Sequence[Message], cut: int, floor: int) -> int:
    """Move ``cut`` out of a run of ``tool`` results to before their parent assistant."""
    while cut > floor and cut < len(messages) and messages[cut].get("role") == "tool":
        cut -= 1
    return cut


class _LazyCounts:
    """``count(messages[i])`` on first use: the tail cut walks back from the end and stops
    at its budget, so a long session's middle is never counted here (issue 15)."""

    def __init__(self, messages: Sequence[Message], count: Callable[[Message], int]) -> None:
        self._messages = messages
        self._count = count
        self._counts: dict[int, int] = {}

    def __getitem__(self, index: int) -> int:
        hit = self._counts.get(index)
        if hit is None:
            hit = self._counts[index] = self._count(self._messages[index])
        return hit


def _tokens_from(tokens: _LazyCounts, start: int, n: int, ceiling: int) -> int:
    """Tokens of messages ``start`` to ``n - 1``, counted from the end; stops once past
    ``ceiling`` (the caller only compares against it)."""
    total = 0
    for i in range(n - 1, start - 1, -1):
        total += tokens[i]
        if total > ceiling:
            break
    return total


def find_cut(
    messages: Sequence[Message],
    count: Callable[[Message], int],
    *,
    head_end: int,
    budget: int,
    floor_count: int,
    min_tail_user_messages: int = 1,
    keep_last_turns: int | None = None,
) -> int:
    """Index where the protected tail starts (see the module docstring for the rules)."""
    n = len(messages)
    tokens = _LazyCounts(messages, count)  # only the tail's messages are counted
    ceiling = int(budget * SOFT_CEILING)
    floor_count = max(MIN_TAIL_MESSAGES, floor_count)
    users = [i for i in range(head_end, n) if is_actionable_user(messages[i])]

    if keep_last_turns is not None:
        # `/compress here N`: exactly the last N user turns stay.
        if keep_last_turns <= 0:
            cut = n
        elif len(users) >= keep_last_turns:
            cut = users[-keep_last_turns]
        else:
            cut = head_end
        return _bridge(messages, align_backward(messages, cut, head_end), head_end, users)

    cut = n
    acc = 0
    for i in range(n - 1, head_end - 1, -1):
        kept = n - cut
        if kept >= MIN_TAIL_MESSAGES and acc + tokens[i] > ceiling:
            break
        if kept >= floor_count and acc + tokens[i] > budget:
            break
        acc += tokens[i]
        cut = i
    cut = align_backward(messages, cut, head_end)

    if min_tail_user_messages > 0 and users:
        wanted = users[-min(min_tail_user_messages, len(users))]
        if wanted < cut and _tokens_from(tokens, wanted, n, ceiling) <= ceiling:
            cut = wanted
    return _bridge(messages, cut, head_end, users)


def _bridge(messages: Sequence[Message], cut: int, head_end: int, users: list[int]) -> int:
    """Role-collision rule: a cut exactly on the newest actionable user message keeps the
    assistant/tool bridge before it."""
    if users and cut == users[-1] and cut - 1 > head_end:
        bridge = align_backward(messages, cut - 1, head_end)
        if messages[bridge].get("role") == "assistant" and bridge > head_end:
            return bridge
    return cut


def short_session_cut(
    messages: Sequence[Message], head_end: int, *, shrink_head: bool = True
) -> tuple[int, int]:
    """(head end, cut) for a window whose tail rules left no middle (R-6.7).

    The tail is the last :data:`MIN_TAIL_MESSAGES` messages (aligned out of a tool-call
    group, backwards first, else forwards); when the protected head then still meets the
    tail and ``shrink_head`` is true, the head shrinks to the system prompt alone.  The
    caller allows that only when the protected head itself is too large to keep (one huge
    task message, issue 14); otherwise the first messages stay protected (R-6.2) and a
    short chat is a no-op.  Returns the inputs' ``head_end`` and a cut at or before it when
    no middle is left."""
    n = len(messages)
    if n <= MIN_TAIL_MESSAGES:
        return head_end, head_end
    system = 1 if messages[0].get("role") == "system" else 0
    for head in dict.fromkeys((head_end, system) if shrink_head else (head_end,)):
        cut = align_backward(messages, n - MIN_TAIL_MESSAGES, head)
        if cut <= head:
            cut = n - MIN_TAIL_MESSAGES
            while cut < n and messages[cut].get("role") == "tool":
                cut += 1
        if head < cut < n:
            return head, cut
    return head_end, head_end


def own_role_cut(messages: Sequence[Message], head_end: int, cut: int) -> int:
    """``cut`` moved, where it can be, so that the summary gets a role of its own instead
    of merging into the first tail message: one exchange back (the R-6.3 bridge), else one
    forward while :data:`MIN_TAIL_MESSAGES` stay.  A merged summary is unwrapped on the next
    round into a copy of that message, which the store would then hold twice."""
    n = len(messages)
    prev = messages[head_end - 1].get("role") if head_end > 0 else None

    def merges(at: int) -> bool:
        return at < n and choose_role(prev, messages[at].get("role"))[1]

    if not merges(cut):
        return cut
    back = align_backward(messages, cut - 1, head_end)
    if back > head_end and not merges(back):
        return back
    forward = cut + 1
    while forward < n and messages[forward].get("role") == "tool":
        forward += 1
    if n - forward >= MIN_TAIL_MESSAGES and not merges(forward):
        return forward
    return cut
