"""What the model received and what each compaction did (issue 29), as every backend stores it.

A **request manifest** records one model call: the ordered *entries* of the request as sent —
a stored message by its row id, anything else (the system prompt, an injection, a message a
``select_context`` engine added, a message the request bound condensed or normalisation merged)
by the hash of its content, stored once in ``request_parts`` — plus the request's host-counted
tokens, the leading tokens it shared with the previous request of the conversation (what a
prompt-caching provider can read from its cache), and, once the caller reports it, the
provider's usage.  Manifests hold ids, not copies: a window of 2,000 messages that grew by
appends is a handful of id ranges.

A **compaction receipt** records one compression attempt that reached an engine: who decided
and at what threshold, the engine, tokens before and after, what was pruned, summarised,
dropped and kept (counted by the host from the windows before and after, whatever the engine),
the summariser's tokens, duration, outcome, and the window's ids before and after (for the
before/after diff).  Committed receipts are also handed to the ``on_post_compress`` hook.

Entries are encoded as one compact string: comma-separated tokens, each ``<id>`` or
``<first>-<last>`` (a run of consecutive row ids, ascending) or ``#<hash>`` (a part).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hermes_host.messages import sanitize_for_wire
from hermes_host.models import CompactionReceipt, Message
from hermes_host.store.records import StoredMessage

__all__ = [
    "PART_PREFIX",
    "RecordingStore",
    "RequestRecord",
    "decode_entries",
    "encode_entries",
    "encode_ids",
    "extend_encoded",
    "part_hash",
    "part_json",
    "rebuild_request",
    "shared_prefix",
]

PART_PREFIX = "#"

Entry = int | str
"""A row id (``int``) or a part hash (``str``)."""


def part_json(message: Message) -> str:
    """The canonical JSON of a message stored as a request part (sorted keys)."""
    return json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)


def part_hash(text: str) -> str:
    """The content address of a part: 32 hex digits of SHA-256 of its canonical JSON."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def encode_entries(entries: Iterable[Entry]) -> str:
    """``[3, 4, 5, "ab12", 9]`` → ``"3-5,#ab12,9"``."""
    out: list[str] = []
    run_start: int | None = None
    run_end = 0

    def close() -> None:
        if run_start is not None:
            out.append(str(run_start) if run_start == run_end else f"{run_start}-{run_end}")

    for entry in entries:
        if isinstance(entry, int):
            if run_start is not None and entry == run_end + 1:
                run_end = entry
                continue
            close()
            run_start = run_end = entry
        else:
            close()
            run_start = None
            out.append(PART_PREFIX + entry)
    close()
    return ",".join(out)


def extend_encoded(encoded: str, last: Entry | None, added: Sequence[Entry]) -> str:
    """``encode_entries(previous + added)`` from ``encoded = encode_entries(previous)`` and
    ``last = previous[-1]``, in O(len(added)): a request that only grew is encoded by what
    it gained (a run of ids continues across the seam)."""
    if not added:
        return encoded
    tail = encode_entries(added)
    if not encoded:
        return tail
    first = added[0]
    if isinstance(last, int) and isinstance(first, int) and first == last + 1:
        head, _, token = encoded.rpartition(",")
        start = token.split("-", 1)[0]
        first_token, _, rest = tail.partition(",")
        end = first_token.split("-", 1)[-1]
        merged = f"{start}-{end}"
        return ",".join(t for t in (head, merged, rest) if t)
    return f"{encoded},{tail}"


def encode_ids(ids: Iterable[int]) -> str:
    """Row ids only (a window's ids before/after a compaction), in the same encoding."""
    return encode_entries(ids)


def decode_entries(text: str | None) -> list[Entry]:
    """The inverse of :func:`encode_entries`; an empty or missing text is no entries."""
    entries: list[Entry] = []
    for token in (text or "").split(","):
        token = token.strip()
        if not token:
            continue
        if token.startswith(PART_PREFIX):
            entries.append(token[len(PART_PREFIX):])
        elif "-" in token:
            first, last = token.split("-", 1)
            entries.extend(range(int(first), int(last) + 1))
        else:
            entries.append(int(token))
    return entries


@dataclass(frozen=True)
class RequestRecord:
    """One stored request manifest (``sessions requests``, ``browse``)."""

    id: int
    session_id: str
    created_at: float
    entries: str
    """Encoded entries (:func:`decode_entries`)."""
    tokens: int
    """Host-counted tokens of the request as sent."""
    prefix_tokens: int
    """Leading tokens shared with the conversation's previous request (its cacheable
    prefix); 0 for the first request or after the prefix changed at its start."""
    details: dict[str, Any] = field(default_factory=dict)
    """``source`` (``build_request`` / ``fit_request``), ``condensed`` (what the request
    bound did), ``select`` (the select_context decisions), ``warning``."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    @property
    def has_usage(self) -> bool:
        return self.input_tokens is not None

    def decoded(self) -> list[Entry]:
        return decode_entries(self.entries)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "created_at": self.created_at,
            "entries": self.entries,
            "tokens": self.tokens,
            "prefix_tokens": self.prefix_tokens,
            "details": self.details,
            "usage": None if not self.has_usage else {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
        }


def shared_prefix(previous: Sequence[Entry], current: Sequence[Entry]) -> int:
    """How many leading entries two requests share."""
    if len(previous) <= len(current) and list(current[: len(previous)]) == list(previous):
        return len(previous)  # the common case: the request only grew
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += 1
    return n


@runtime_checkable
class RecordingStore(Protocol):
    """A store that keeps request manifests and compaction receipts (both bundled stores do).

    Optional: a store without these methods still works — nothing is recorded, and
    ``browse`` / ``sessions requests`` say so.  Every method raises
    :class:`~hermes_host.store.StoreError` with a user-facing message."""

    def record_request(
        self,
        session_id: str,
        entries: str,
        parts: Mapping[str, tuple[str, int]],
        *,
        tokens: int,
        prefix_tokens: int,
        details: Mapping[str, Any],
    ) -> int:
        """Store one manifest (``parts``: hash → (canonical JSON, tokens), each written
        once, an existing hash left as it is); returns its id."""
        ...

    def record_request_usage(
        self,
        request_id: int,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
    ) -> None:
        """Attach the provider-reported usage of the call a manifest describes."""
        ...

    def list_requests(self, session_ids: Sequence[str]) -> list[RequestRecord]:
        """The manifests of these sessions, oldest first."""
        ...

    def request_parts(self, hashes: Iterable[str]) -> dict[str, Message]:
        """Parts by hash (a hash the store does not hold is left out)."""
        ...

    def active_ids(self, session_id: str, after_id: int = 0) -> list[int]:
        """Row ids of the session's window in window order (only ids above ``after_id``:
        what was appended since)."""
        ...

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        """Stored rows by id, in any session (an id the store does not hold is left out)."""
        ...

    def record_receipt(self, receipt: CompactionReceipt) -> int:
        """Store one compaction receipt; returns its id."""
        ...

    def list_receipts(self, session_ids: Sequence[str]) -> list[CompactionReceipt]:
        """The receipts of compressions of these sessions, oldest first."""
        ...


def rebuild_request(store: RecordingStore, record: RequestRecord) -> list[Message]:
    """The request a manifest describes, as the model received it: stored rows in their wire
    form, parts as stored.  An entry the store no longer holds (a deleted session) becomes a
    ``{"role": "unknown", "content": "(row N is no longer stored)"}`` placeholder."""
    entries = record.decoded()
    rows = store.messages_by_id([e for e in entries if isinstance(e, int)])
    parts = store.request_parts([e for e in entries if isinstance(e, str)])
    out: list[Message] = []
    for entry in entries:
        if isinstance(entry, int):
            row = rows.get(entry)
            out.append(sanitize_for_wire([row.message])[0] if row is not None else
                       {"role": "unknown", "content": f"(row {entry} is no longer stored)"})
        else:
            out.append(parts.get(entry) or
                       {"role": "unknown", "content": f"(part {entry} is no longer stored)"})
    return out
