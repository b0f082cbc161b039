"""What each ``browse`` page shows, built from the store (no HTTP, no HTML: the templates
render these; ``sessions export --format html`` renders the same).

Every text taken from the store passes :func:`hermes_host.redact.redact` (messages through
:func:`~hermes_host.redact.redacted_for_reading`) here, before any template sees it; the
templates escape it (Jinja2 autoescape).  Only reading methods of the store are called.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.cli.sessions.snippets import find_matches, snippet
from hermes_host.cost import CostLedger, PriceModel
from hermes_host.messages import is_summary, text_of
from hermes_host.models import CompactionReceipt, Message
from hermes_host.redact import redact, redacted_for_reading
from hermes_host.store import StateStore
from hermes_host.store.conversations import ConversationRef
from hermes_host.store.manifests import RecordingStore, RequestRecord, decode_entries
from hermes_host.store.records import StoredMessage

__all__ = [
    "PAGE_SIZE",
    "ConversationPage",
    "ConversationRow",
    "MessageView",
    "ReceiptView",
    "RequestPage",
    "SearchHitView",
    "conversation_page",
    "conversation_rows",
    "request_page",
    "search_hits",
]

PAGE_SIZE = 100
"""Messages per conversation page (a 10,000-message lineage is 100 pages)."""
MAX_SHOWN_CHARS = 8_000
"""A message longer than this is cut on the conversation page (the request page and the
export show it whole)."""
_REDACT_MARGIN = 4_096
"""Characters past the cut that are redacted with the text shown (longer than any secret
form but a PEM block, whose key lines are redacted without its END line)."""


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _recording(store: StateStore) -> RecordingStore | None:
    return store if isinstance(store, RecordingStore) else None


def _ids(text: str) -> list[int]:
    return [e for e in decode_entries(text) if isinstance(e, int)]


def request_cost(record: RequestRecord, prices: PriceModel) -> tuple[int, float]:
    """``(cached tokens, cost in input-token equivalents)``: the provider's cache read when it
    reported one, else the host-counted shared prefix."""
    cached = record.cache_read_tokens if record.cache_read_tokens is not None \
        else record.prefix_tokens
    cached = min(cached, record.tokens)
    return cached, prices.call(record.tokens, cached)


def ledger(requests: Sequence[RequestRecord], receipts: Sequence[CompactionReceipt],
           prices: PriceModel | None = None) -> CostLedger:
    """The conversation's calls and summary requests, priced (:mod:`hermes_host.cost`)."""
    book = CostLedger(prices=prices or PriceModel())
    for record in requests:
        cached, _ = request_cost(record, book.prices)
        book.request_tokens.append(record.tokens)
        book.cached_tokens.append(cached)
    for receipt in receipts:
        s = receipt.summariser
        book.add_summary(s.get("requests", 0), s.get("input_tokens", 0),
                         s.get("output_tokens", 0), s.get("cached_tokens", 0))
    return book


# -- conversations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConversationRow:
    id: str
    title: str
    source: str
    model: str
    sessions: int
    messages: int
    turns: int
    input_tokens: int
    output_tokens: int
    window_tokens: int | None
    cost_usd: float
    cost_equivalents: float | None
    requests: int | None
    compactions: int
    last_activity: str


def conversation_rows(store: StateStore, *, limit: int = 50, offset: int = 0
                      ) -> list[ConversationRow]:
    """The ``/`` page: one row per conversation, most recent activity first."""
    recording = _recording(store)
    rows = []
    for c in store.list_conversations(limit=limit, offset=offset, include_archived=True):
        ids = [sid for sid in store.lineage(c.tip.id)
               if (store.get_session(sid).conversation_id or sid) == c.id] or [c.tip.id]
        turns = sum(1 for sid in ids for r in store.all_messages(sid)
                    if r.message.get("role") == "user")
        requests = recording.list_requests(ids) if recording else None
        receipts = recording.list_receipts(ids) if recording else []
        book = ledger(requests or [], receipts)
        tip = c.tip
        rows.append(ConversationRow(
            id=c.id, title=redact(tip.title or ""), source=redact(tip.source or ""),
            model=redact(tip.model or ""), sessions=c.sessions, messages=c.message_count,
            turns=turns, input_tokens=c.input_tokens, output_tokens=c.output_tokens,
            window_tokens=requests[-1].tokens if requests else None,
            cost_usd=tip.cost_usd,
            cost_equivalents=book.calls_cost + book.summary_cost if requests else None,
            requests=len(requests) if requests is not None else None,
            compactions=sum(1 for r in receipts if r.status == "committed") if recording
            else tip.compression_count,
            last_activity=when(tip.last_activity_at),
        ))
    return rows


# -- one conversation -------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallView:
    name: str
    arguments: str
    id: str


@dataclass
class MessageView:
    """One stored message as a page shows it (redacted)."""

    id: int
    role: str
    text: str
    tool_calls: list[ToolCallView]
    tool_call_id: str
    name: str
    session_id: str
    when: str
    tokens: int
    summary: bool
    state: str = "seen"
    """In model view: ``seen`` (in the last request), ``condensed`` (in the window, sent as a
    condensed part), ``unsent`` (in the window, not in the request) or ``gone`` (no longer
    in the window)."""
    cut: int = 0
    """Characters left out of :attr:`text` on this page."""


def message_view(row: StoredMessage | None, message: Message, *, limit: int | None = None,
                 entry_id: int = 0) -> MessageView:
    """``message`` redacted, for a page (``row``: its stored bookkeeping, if any).  With
    ``limit``, a longer text is cut: only its first ``limit`` + :data:`_REDACT_MARGIN`
    characters are redacted (a secret that starts before the cut ends within the margin),
    then it is cut at ``limit``."""
    content = message.get("content")
    full = len(content) if isinstance(content, str) else 0
    if limit is not None and isinstance(content, str) and full > limit + _REDACT_MARGIN:
        message = {**message, "content": content[: limit + _REDACT_MARGIN]}
    clean = redacted_for_reading([message])[0]
    text = text_of(clean)
    if not isinstance(clean.get("content"), str | list | None):
        text = json.dumps(clean.get("content"), ensure_ascii=False, default=str)
    cut = 0
    if limit is not None and len(text) > limit:
        cut, text = max(full, len(text)) - limit, text[:limit]
    calls = []
    for call in clean.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        fn = call.get("function")
        fn = fn if isinstance(fn, dict) else {}
        args = fn.get("arguments", "")
        calls.append(ToolCallView(
            name=redact(str(fn.get("name", "?"))),
            arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
            id=redact(str(call.get("id", ""))),
        ))
    return MessageView(
        id=row.id if row else entry_id, role=redact(str(clean.get("role", "?"))), text=text,
        tool_calls=calls, tool_call_id=redact(str(clean.get("tool_call_id") or "")),
        name=redact(str(clean.get("name") or "")), session_id=row.session_id if row else "",
        when=when(row.timestamp) if row else "", tokens=row.token_count if row else 0,
        summary=is_summary(clean), cut=cut,
    )


@dataclass
class ReceiptView:
    """One compaction attempt, as a marker at its place in the transcript."""

    number: int
    receipt: CompactionReceipt
    committed: bool
    after_row: int
    """The marker stands after this row id (the newest row of the window before it)."""
    summaries: list[MessageView]
    left: list[int]
    came_in: list[int]
    notes: list[str]
    message: str
    when: str


@dataclass
class RequestMark:
    """A request's place in the transcript: after the newest row it sent."""

    number: int
    tokens: int
    prefix_tokens: int
    after_row: int


@dataclass
class Item:
    """One line of a conversation page: a message, a compaction marker or a request mark."""

    kind: str
    message: MessageView | None = None
    receipt: ReceiptView | None = None
    request: RequestMark | None = None


@dataclass
class ConversationPage:
    ref_id: str
    title: str
    source: str
    session_ids: list[str]
    model_view: bool
    page: int
    pages: int
    total_messages: int
    items: list[Item]
    recorded: bool
    """Whether the store records requests (else model view shows the live window)."""
    requests: int
    compactions: int
    last_request: RequestMark | None
    condensed: str
    seen: int
    window_tokens: int | None
    cost: dict[str, Any]
    page_first: int = 0
    page_last: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class _Rows:
    """The conversation's rows: an index of ``(id, session_id, active)`` by id, and the rows
    themselves fetched only for what a page shows (a store with ``message_index`` and
    ``messages_by_id``; any other store is read whole with ``all_messages``)."""

    def __init__(self, store: StateStore, session_ids: Sequence[str]) -> None:
        self.store = store
        index = getattr(store, "message_index", None)
        self.loaded: dict[int, StoredMessage] = {}
        if callable(index) and isinstance(store, RecordingStore):
            self.index: list[tuple[int, str, bool]] = index(session_ids)
        else:
            for sid in session_ids:
                self.loaded.update((r.id, r) for r in store.all_messages(sid))
            self.index = sorted((r.id, r.session_id, r.active) for r in self.loaded.values())

    def fetch(self, ids: Sequence[int]) -> dict[int, StoredMessage]:
        missing = [i for i in ids if i not in self.loaded]
        if missing and isinstance(self.store, RecordingStore):
            self.loaded.update(self.store.messages_by_id(missing))
        return {i: self.loaded[i] for i in ids if i in self.loaded}


_ROW_NUMBER = re.compile(r"(?<![#\w])\d+(?!\w)")
"""A row id in encoded entries (a number not inside a ``#`` part hash)."""


def _max_row(entries: str) -> int:
    """The largest row id of encoded entries, without expanding their runs."""
    return max(map(int, _ROW_NUMBER.findall(entries)), default=0)


def _receipt_view(number: int, receipt: CompactionReceipt, before: list[int],
                  came_in: list[int], rows: dict[int, StoredMessage]) -> ReceiptView:
    after_set = set(_ids(receipt.after_ids))
    return ReceiptView(
        number=number, receipt=receipt, committed=receipt.status == "committed",
        after_row=max(before) if before else 0,
        summaries=[message_view(rows[i], rows[i].message) for i in came_in if i in rows],
        left=[i for i in before if i not in after_set], came_in=came_in,
        notes=[redact(n) for n in receipt.notes], message=redact(receipt.message or ""),
        when=when(receipt.at),
    )


def conversation_page(store: StateStore, ref: ConversationRef, *, model_view: bool,
                      page: int | None = 1, at: int | None = None,
                      page_size: int | None = PAGE_SIZE) -> ConversationPage:
    """The ``/c/<conversation>`` page: the lineage as one transcript (``page_size`` rows a
    page, ``None``: all of it), with each compaction's marker and each request's mark at
    its place; ``at`` picks the page holding that row id.  Only the page's rows are read
    whole and redacted."""
    recording = _recording(store)
    ids = [s.id for s in ref.sessions]
    rows = _Rows(store, ids)
    requests = recording.list_requests(ids) if recording else []
    receipts = recording.list_receipts(ids) if recording else []

    # each receipt: where it stands (after the newest row of the window before it) and the
    # rows it brought in (its summaries, shown inside its marker, not in the list)
    placed = []
    summary_rows: set[int] = set()
    for number, receipt in enumerate(receipts, 1):
        before = _ids(receipt.before_ids)
        before_set = set(before)
        came_in = [i for i in _ids(receipt.after_ids) if i not in before_set]
        if receipt.status == "committed":
            summary_rows.update(came_in)
        placed.append((max(before, default=0), number, receipt, before, came_in))
    listed = [r for r in rows.index if r[0] not in summary_rows]

    # what the model sees now: the last request's rows, else (nothing recorded) the window
    last = requests[-1] if requests else None
    window = {i for i, sid, active in rows.index if active and sid == ref.tip.id}
    seen = set(_ids(last.entries)) if last else set(window)
    condensed = redact(str(last.details.get("condensed") or "")) if last else ""

    size = page_size or max(1, len(listed))
    pages = max(1, -(-len(listed) // size))
    if at is not None:
        position = next((i for i, r in enumerate(listed) if r[0] >= at), len(listed) - 1)
        page = position // size + 1
    page = min(max(1, page or 1), pages)
    chunk = listed[(page - 1) * size : page * size]
    first = chunk[0][0] if chunk else 0
    last_id = chunk[-1][0] if chunk else 0
    # a page holds the marks placed after (previous page's last row, its last row]; the first
    # and the last page are open-ended
    lower = listed[(page - 1) * size - 1][0] + 1 if page > 1 else -1
    upper = last_id if page < pages else float("inf")

    on_page = [p for p in placed if lower <= p[0] <= upper]
    fetched = rows.fetch([r[0] for r in chunk] + [i for p in on_page for i in p[4]])
    extra: list[tuple[float, int, Item]] = []
    for after_row, number, receipt, before, came_in in on_page:
        view = _receipt_view(number, receipt, before, came_in, fetched)
        for m in view.summaries:
            m.state = "seen" if m.id in seen else ("unsent" if m.id in window else "gone")
        extra.append((after_row, 1, Item("compaction", receipt=view)))
    # a request's mark stands after the newest row sent so far (a running maximum: a request
    # whose newest message went out condensed sent an older row last), found by bisection
    places = list(itertools.accumulate((_max_row(r.entries) for r in requests), max))
    for n in range(bisect.bisect_left(places, lower), bisect.bisect_right(places, upper)):
        record = requests[n]
        extra.append((places[n], 2, Item("request", request=RequestMark(
            n + 1, record.tokens, record.prefix_tokens, places[n]))))
    last_mark = RequestMark(len(requests), last.tokens, last.prefix_tokens,
                            places[-1]) if last else None
    extra.sort(key=lambda t: (t[0], t[1]))

    items: list[Item] = []
    k = 0
    limit = MAX_SHOWN_CHARS if page_size else None
    for row_id, _, _ in chunk:
        while k < len(extra) and extra[k][0] < row_id:
            items.append(extra[k][2])
            k += 1
        row = fetched.get(row_id)
        if row is None:  # deleted meanwhile
            continue
        shown = message_view(row, row.message, limit=limit)
        if row_id in seen:
            shown.state = "seen"
        elif row_id in window:
            shown.state = "condensed" if condensed else "unsent"
        else:
            shown.state = "gone"
        items.append(Item("message", message=shown))
    items += [e[2] for e in extra[k:]]

    book = ledger(requests, receipts)
    return ConversationPage(
        ref_id=ref.id, title=redact(ref.tip.title or ""), source=redact(ref.tip.source or ""),
        session_ids=ids, model_view=model_view, page=page, pages=pages,
        total_messages=len(rows.index), items=items, recorded=bool(requests),
        requests=len(requests),
        compactions=sum(1 for r in receipts if r.status == "committed"),
        last_request=last_mark, condensed=condensed,
        seen=len(seen), window_tokens=last.tokens if last else None,
        cost=book.as_dict(), page_first=first, page_last=last_id,
    )


# -- one request ------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryView:
    """One entry of a request: a stored row (``row``) or a part (``part``)."""

    row: int | None
    part: str | None
    message: MessageView


@dataclass
class RequestPage:
    ref_id: str
    title: str
    number: int
    count: int
    record: RequestRecord
    entries: list[EntryView]
    cached: int
    cost: float
    cache_hit: float
    added: list[str]
    removed: list[str]
    shared_entries: int
    condensed: str
    warning: str
    when: str
    after_row: int
    """The newest stored row it sent (where its mark stands on the conversation page)."""


def _entry_label(entry: int | str) -> str:
    return f"#{entry}" if isinstance(entry, int) else f"part {entry[:10]}"


def request_page(store: StateStore, ref: ConversationRef, number: int
                 ) -> RequestPage | None:
    """The ``/c/<conversation>/r/<n>`` page (``None``: no such request)."""
    from hermes_host.store.manifests import rebuild_request

    recording = _recording(store)
    if recording is None:
        return None
    requests = recording.list_requests([s.id for s in ref.sessions])
    if not 1 <= number <= len(requests):
        return None
    record = requests[number - 1]
    entries = record.decoded()
    sent = rebuild_request(recording, record)
    rows = recording.messages_by_id([e for e in entries if isinstance(e, int)])
    views = [EntryView(e if isinstance(e, int) else None, e if isinstance(e, str) else None,
                       message_view(rows.get(e) if isinstance(e, int) else None, m,
                                    entry_id=e if isinstance(e, int) else 0))
             for e, m in zip(entries, sent, strict=True)]
    previous = requests[number - 2].decoded() if number > 1 else []
    before, now = set(previous), set(entries)
    shared = 0
    for a, b in zip(previous, entries, strict=False):
        if a != b:
            break
        shared += 1
    cached, cost = request_cost(record, PriceModel())
    return RequestPage(
        ref_id=ref.id, title=redact(ref.tip.title or ""), number=number, count=len(requests),
        record=record, entries=views, cached=cached, cost=cost,
        cache_hit=cached / record.tokens if record.tokens else 0.0,
        added=[_entry_label(e) for e in entries if e not in before],
        removed=[_entry_label(e) for e in previous if e not in now],
        shared_entries=shared,
        condensed=redact(str(record.details.get("condensed") or "")),
        warning=redact(str(record.details.get("warning") or "")),
        when=when(record.created_at),
        after_row=max((e for e in entries if isinstance(e, int)), default=0),
    )


# -- search -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHitView:
    conversation_id: str
    session_id: str
    message_id: int
    role: str
    active: bool
    when: str
    segments: list[tuple[str, bool]]
    """The snippet as ``(text, is_match)`` pieces."""
    more: int


def search_hits(store: StateStore, query: str, *, limit: int = 50) -> list[SearchHitView]:
    """Hits of ``query`` over every stored message, each with a redacted snippet whose
    matches are marked."""
    hits = store.session_search(query, None, True, limit)
    conversations: dict[str, str] = {}
    out = []
    for hit in hits:
        if hit.session_id not in conversations:
            row = store.get_session(hit.session_id)
            conversations[hit.session_id] = row.conversation_id or row.id
        text = redact(hit.content or "")
        matches = find_matches(text, query)
        cut = snippet(text, matches)
        segments: list[tuple[str, bool]] = []
        cursor = 0
        for start, end in cut.matches:
            segments += [(cut.text[cursor:start], False), (cut.text[start:end], True)]
            cursor = end
        segments.append((cut.text[cursor:], False))
        out.append(SearchHitView(
            conversation_id=conversations[hit.session_id], session_id=hit.session_id,
            message_id=hit.message_id, role=hit.role, active=hit.active,
            when=when(hit.timestamp), segments=[s for s in segments if s[0]],
            more=max(0, len(matches) - len(cut.matches)),
        ))
    return out
