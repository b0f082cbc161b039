"""The store rules every backend shares, written once (issue 15/16): preparing messages,
planning a publish, numbering rotated titles, lease TTLs, engine-state encoding and the
user-facing wording of lost leases and rotated sessions.

A backend keeps only its SQL; everything here is plain Python over the codec's encoded
rows (``ROW_COLUMNS`` value tuples), so two backends plan a compression identically.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.models import Message
from hermes_host.store.base import Guards, Session, StaleWindowError, StoreError, WindowMarker
from hermes_host.store.codec import encode_message
from hermes_host.tokens import count_message

__all__ = [
    "COPIED_ON_ROTATE",
    "Prepared",
    "PublishPlan",
    "count_tokens",
    "encode_state",
    "guard_values",
    "lease_seconds",
    "lost_lease_message",
    "next_title",
    "numbered_titles",
    "plan_publish",
    "prepare_messages",
    "rotated_message",
    "session_from_row",
    "split_snapshot",
    "title_base",
    "window_moves",
]

Prepared = tuple[int, tuple[Any, ...]]
"""``(token_count, ROW_COLUMNS values)`` of one message ready to write."""

COPIED_ON_ROTATE = (
    "conversation_id, source, user_id, session_key, chat_id, chat_type, thread_id, model, "
    "model_config, system_prompt, cwd, goal, pinned, cooldown_until, fallback_streak, "
    "ineffective_count, ineffective_tokens"
)
"""Session columns a rotated child inherits from its parent (R-8.1)."""

_TITLE_NUMBER = re.compile(r"^(.*) #(\d+)$")


def count_tokens(message: Message) -> int:
    """The stored ``token_count`` of a message (an estimate if tiktoken cannot encode it)."""
    try:
        return count_message(message)
    except Exception:
        return 4 + math.ceil(len(json.dumps(message, default=str)) / 4)


def prepare_messages(
    messages: Sequence[Message],
    token_counts: Sequence[int] | None,
    known: dict[tuple[Any, ...], int] | None = None,
    *,
    count: bool = True,
) -> list[Prepared]:
    """Encode and count (outside any write transaction).  ``known`` maps already-stored rows
    to their token count, so a published window does not re-tokenize the rows it kept;
    ``count=False`` leaves the counts at 0 for a caller that counts elsewhere."""
    if isinstance(messages, dict | str | bytes):
        raise StoreError("messages must be a list of message objects")
    if token_counts is not None and len(token_counts) != len(messages):
        raise StoreError(f"got {len(token_counts)} token counts for {len(messages)} messages")
    prepared: list[Prepared] = []
    for index, message in enumerate(messages):
        values = encode_message(message, index).values
        if token_counts is None and not count:
            tokens = 0
        elif token_counts is None:
            stored = known.get(values) if known else None
            tokens = stored if stored is not None else count_tokens(message)
        else:
            tokens = token_counts[index]
            if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
                raise StoreError(f"message {index}: token count must be an int >= 0")
        prepared.append((tokens, values))
    return prepared


@dataclass(frozen=True)
class PublishPlan:
    """How a proposed window maps onto the rows of the window it replaces."""

    window: list[int | None]
    """Per proposed message: the id of the current row it *is* (kept), or ``None`` (new)."""
    fresh: list[Prepared]
    """The new rows to write, in window order."""
    fresh_at: list[int]
    """Their positions in the proposed window."""
    kept: set[int]
    replaced: list[int]
    """Ids of current rows the new window does not keep (to archive)."""

    def ids(self, written: Iterable[int]) -> list[int]:
        """The new window's row ids: the kept rows', with ``written`` (the ids of
        :attr:`fresh`, in order) in the places of the new rows."""
        new = iter(written)
        return [row_id if row_id is not None else next(new) for row_id in self.window]


def plan_publish(
    read: Iterable[tuple[int, tuple[Any, ...]]], prepared: Sequence[Prepared]
) -> PublishPlan:
    """``read`` is ``(row id, ROW_COLUMNS values)`` of the window the compression read, in
    window order.  A proposed message equal to one of those rows is that row (stored once,
    id kept); each row is used once, in window order."""
    rows = list(read)
    # only rows equal to a proposed message can be kept: a compression proposes a few
    # hundred messages for a window of any length, so rows are pooled by that test alone
    # (issue 32: a 100,000-row window costs one hash per row, not a pool entry per row)
    wanted = {encoded for _, encoded in prepared}
    pool: dict[tuple[Any, ...], list[int]] = {}
    for row_id, values in rows:
        key = tuple(values)
        if key in wanted:
            pool.setdefault(key, []).append(row_id)
    window: list[int | None] = []
    fresh: list[Prepared] = []
    fresh_at: list[int] = []
    for position, (tokens, encoded) in enumerate(prepared):
        same = pool.get(encoded)
        window.append(same.pop(0) if same else None)
        if window[-1] is None:
            fresh.append((tokens, encoded))
            fresh_at.append(position)
    kept = {row_id for row_id in window if row_id is not None}
    replaced = [row_id for row_id, _ in rows if row_id not in kept]
    return PublishPlan(window, fresh, fresh_at, kept, replaced)


def window_moves(
    plan: PublishPlan,
    ids: Sequence[int],
    read: Sequence[Any],
    later: Sequence[Any],
    base: int,
    in_place: bool,
) -> list[tuple[int, int]]:
    """``(row id, new seq)`` of the rows a publish moves: the kept rows to their places in
    the new window (``ids``), then the rows appended after the snapshot (``later``), all
    above ``base``.  ``read`` and ``later`` rows start ``(id, seq)``.  Nothing when an
    in-place publish only dropped rows (``/undo``): the rest stays in order."""
    if in_place and not plan.fresh:
        order = {r[0]: r[1] for r in read}
        if plan.window == sorted(plan.kept, key=order.__getitem__):
            return []
    moved = [(row_id, base + at + 1) for at, row_id in enumerate(ids) if row_id in plan.kept]
    return moved + [(r[0], base + len(ids) + j + 1) for j, r in enumerate(later)]


def split_snapshot(
    rows: Sequence[Any], session_id: str, snapshot: WindowMarker | None
) -> tuple[list[Any], list[Any]]:
    """Window rows (``row[0]`` is the id) split into those ``snapshot`` saw and those
    appended after it; :class:`StaleWindowError` when rows it saw are gone."""
    if snapshot is None:
        return list(rows), []
    read = [r for r in rows if r[0] <= snapshot.last_message_id]
    later = [r for r in rows if r[0] > snapshot.last_message_id]
    if snapshot.session_id != session_id or len(read) != snapshot.active_count:
        raise StaleWindowError(
            f"the window of session {session_id} changed since the compression read it "
            f"({snapshot.active_count} messages then, {len(read)} of them still there); "
            "nothing was published"
        )
    return read, later


def title_base(title: str) -> str:
    """``name`` of ``name #3`` (and of ``name``)."""
    match = _TITLE_NUMBER.match(title)
    return match.group(1) if match else title


def numbered_titles(base: str, rows: Iterable[tuple[str, str]]) -> list[tuple[int, str]]:
    """``(N, session id)`` of the ``(id, title)`` rows titled exactly ``base #N``."""
    return [
        (int(m.group(2)), sid)
        for sid, title in rows
        if (m := _TITLE_NUMBER.match(title)) and m.group(1) == base
    ]


def next_title(base: str, numbered: Iterable[tuple[int, str]]) -> str:
    """``name`` → ``name #2`` → ``name #3`` (R-8.1), skipping numbers already taken."""
    return f"{base} #{max((n for n, _ in numbered), default=1) + 1}"


def lease_seconds(default: float, ttl: float | None) -> float:
    value = default if ttl is None else float(ttl)
    if not value > 0:
        raise StoreError(f"a lease TTL must be > 0 seconds, got {ttl!r}")
    return value


def lost_lease_message(session_id: str, holder: str, now_holder: str | None, doing: str) -> str:
    now_held = f"now held by {now_holder}" if now_holder else "now held by nobody"
    return (
        f"the compression lease of session {session_id} is no longer held by "
        f"{holder} ({now_held}); could not {doing}, nothing was changed"
    )


def rotated_message(session_id: str, child: str, outcome: str) -> str:
    """Why a session a compression rotated takes no more writes."""
    into = child if child != session_id else "a child session"
    return (
        f"session {session_id} was already compressed into {into} (work on the newest "
        f"session: resume follows rotations); {outcome}"
    )


def encode_state(engine: str, state: dict[str, Any]) -> str:
    """An engine's state as stored JSON, or a :class:`StoreError` naming the engine."""
    try:
        return json.dumps(state, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"engine {engine!r} returned state that is not JSON-serialisable: {exc}"
        ) from None


def guard_values(guards: Guards) -> tuple[float | None, int, int, int | None]:
    """The stored values of the four guard columns (``cooldown_until``, ``fallback_streak``,
    ``ineffective_count``, ``ineffective_tokens``)."""
    tokens = guards.ineffective_tokens
    return (guards.cooldown_until, int(guards.fallback_streak), int(guards.ineffective_count),
            None if tokens is None else int(tokens))


def session_from_row(row: Any) -> Session:
    """A :class:`Session` from a ``sessions`` row read by column name (``sqlite3.Row``, a
    dict …) plus ``message_count`` and ``active_count``."""
    return Session(
        id=row["id"],
        created_at=row["created_at"],
        last_activity_at=row["last_activity_at"],
        source=row["source"],
        user_id=row["user_id"],
        session_key=row["session_key"],
        chat_id=row["chat_id"],
        chat_type=row["chat_type"],
        thread_id=row["thread_id"],
        model=row["model"],
        model_config=json.loads(row["model_config"] or "{}"),
        system_prompt=row["system_prompt"],
        parent_session_id=row["parent_session_id"],
        conversation_id=row["conversation_id"] or row["id"],
        title=row["title"],
        cwd=row["cwd"],
        goal=row["goal"],
        ended_at=row["ended_at"],
        end_reason=row["end_reason"],
        archived=bool(row["archived"]),
        pinned=bool(row["pinned"]),
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        cache_read_tokens=int(row["cache_read_tokens"]),
        cache_write_tokens=int(row["cache_write_tokens"]),
        reasoning_tokens=int(row["reasoning_tokens"]),
        cost_usd=float(row["cost_usd"]),
        compression_count=int(row["compression_count"]),
        guards=Guards(
            row["cooldown_until"], row["fallback_streak"], row["ineffective_count"],
            row["ineffective_tokens"],
        ),
        message_count=int(row["message_count"]),
        active_count=int(row["active_count"]),
    )
