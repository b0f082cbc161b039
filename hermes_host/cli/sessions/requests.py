"""``sessions requests``, ``sessions show CONV --request N`` and ``sessions costs``: what the
model received at each call, and what the conversation cost (issue 29).

Read from the request manifests and compaction receipts the store keeps
(:mod:`hermes_host.store.manifests`).  Every message text is redacted, as in ``show`` and
``search``.  Costs are in *input-token equivalents* under a prompt-caching price model
(:mod:`hermes_host.cost`): the request's cacheable prefix — the leading tokens it shares with
the previous request — read from the cache, the rest written to it; summary requests as
billed.  Provider-reported usage is shown beside it when the caller reported it.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from hermes_host.cost import CostLedger, PriceModel
from hermes_host.messages import one_line, text_of
from hermes_host.models import CompactionReceipt, Message
from hermes_host.redact import redact, redact_messages
from hermes_host.store import StateStore
from hermes_host.store.conversations import ConversationRef
from hermes_host.store.manifests import (
    RecordingStore,
    RequestRecord,
    decode_entries,
    rebuild_request,
)

from ..config_cmd import console as make_console
from .opening import _common, _dumps_line, _opened, fail, find, only_session_option

__all__ = ["costs_cmd", "describe_request", "requests_cmd", "show_request"]

_PRICES = PriceModel()


def _recording(store: StateStore) -> RecordingStore:
    if not isinstance(store, RecordingStore):
        fail(f"the store {store.location} does not record requests (its backend has no "
             "request manifests)")
    return store


def _scope(ref: ConversationRef, only_session: bool) -> list[str]:
    return [ref.session.id] if only_session else [s.id for s in ref.sessions]


def _usage(record: RequestRecord) -> str:
    if not record.has_usage:
        return "—"
    return (f"in {record.input_tokens:,} · out {record.output_tokens:,} · "
            f"cache read {record.cache_read_tokens or 0:,}")


def _call_cost(record: RequestRecord) -> float:
    return _PRICES.call(record.tokens, record.prefix_tokens)


def describe_request(record: RequestRecord, previous: RequestRecord | None) -> dict[str, Any]:
    """JSON-ready facts of one request: size, cache, cost, usage, change since the last."""
    entries = record.decoded()
    before = previous.decoded() if previous is not None else []
    kept = set(before)
    now = set(entries)
    return {
        **record.as_dict(),
        "messages": len(entries),
        "cached_share": round(record.prefix_tokens / record.tokens, 4) if record.tokens else 0,
        "cost": round(_call_cost(record), 1),
        "added": len([e for e in entries if e not in kept]),
        "removed": len([e for e in before if e not in now]),
    }


def _receipt_line(receipt: CompactionReceipt) -> str:
    who = f", decided by {receipt.decided_by}" if receipt.decided_by else ""
    spent = receipt.summariser or {}
    return (f"compaction ({receipt.trigger}{who}): {receipt.engine or '-'} {receipt.outcome} "
            f"[{receipt.status}], {receipt.tokens_before:,} → {receipt.tokens_after:,} tokens; "
            f"summarised {receipt.summarised.messages}, pruned {receipt.pruned.messages}, "
            f"dropped {receipt.dropped.messages}, kept {receipt.kept.messages}; summariser "
            f"{spent.get('requests', 0)} request(s), {spent.get('input_tokens', 0):,} in / "
            f"{spent.get('output_tokens', 0):,} out")


@click.command("requests")
@_common
@only_session_option
@click.argument("conversation")
def requests_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, only_session: bool,
    conversation: str,
) -> None:
    """Every model call of a conversation, oldest first: its size in tokens, the leading
    tokens it shared with the call before (what a prompt-caching provider reads from its
    cache), its cost in input-token equivalents, the provider's usage when the caller
    reported it, and what the request bound condensed — with each compaction between the
    calls it came between.  ``sessions show CONV --request N`` shows one call whole.

    With ``--json``: one line, ``{"conversation_id", "requests": [...], "compactions":
    [...]}``."""
    with _opened(store_path, config_path, create=False) as store:
        ref = find(store, conversation)
        recording = _recording(store)
        scope = _scope(ref, only_session)
        records = recording.list_requests(scope)
        receipts = recording.list_receipts(scope)
    described = [describe_request(r, records[i - 1] if i else None)
                 for i, r in enumerate(records)]
    if as_json:
        click.echo(_dumps_line({
            "conversation_id": ref.id,
            "requests": [{"n": i + 1, **d} for i, d in enumerate(described)],
            "compactions": [r.model_dump() for r in receipts],
        }))
        return
    console = make_console()
    if not records:
        console.print(f"No requests recorded for {escape(ref.id)} (recording started with "
                      "this version; `store.record_requests: false` turns it off).")
        return
    table = Table("#", "when", "tokens", "cached", "cost", "provider usage", "note",
                  title=f"Requests of {escape(ref.id)}")
    pending = sorted(receipts, key=lambda r: r.at)
    for n, (record, facts) in enumerate(zip(records, described, strict=True), start=1):
        while pending and pending[0].at <= record.created_at:
            table.add_row("", "", "", "", "", "", escape(_receipt_line(pending.pop(0))),
                          style="yellow")
        note = record.details.get("condensed") or record.details.get("warning") or ""
        table.add_row(
            str(n), _when(record.created_at), f"{record.tokens:,}",
            f"{record.prefix_tokens:,} ({facts['cached_share']:.0%})", f"{facts['cost']:,.0f}",
            _usage(record), escape(redact(str(note))),
        )
    for receipt in pending:
        table.add_row("", "", "", "", "", "", escape(_receipt_line(receipt)), style="yellow")
    table.columns[0].no_wrap = True
    console.print(table)


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def show_request(store: StateStore, ref: ConversationRef, n: int, only_session: bool,
                 as_json: bool) -> None:
    """``sessions show CONV --request N``: the N-th model call, exactly as the model
    received it (redacted)."""
    recording = _recording(store)
    records = recording.list_requests(_scope(ref, only_session))
    if not records:
        fail(f"no requests recorded for {ref.id}")
    if not 1 <= n <= len(records):
        fail(f"{ref.id} has {len(records)} recorded request(s); --request takes 1 to "
             f"{len(records)}")
    record = records[n - 1]
    facts = describe_request(record, records[n - 2] if n > 1 else None)
    messages = redact_messages(rebuild_request(recording, record))
    if as_json:
        click.echo(_dumps_line({"conversation_id": ref.id, "n": n, "request": facts,
                                "messages": messages}))
        return
    console = make_console()
    console.print(
        f"request {n} of {len(records)} ({escape(ref.id)}, session {escape(record.session_id)}, "
        f"{_when(record.created_at)}): {record.tokens:,} tokens in {facts['messages']} "
        f"messages; cached prefix {record.prefix_tokens:,} ({facts['cached_share']:.0%}); "
        f"cost {facts['cost']:,.0f} input-token equivalents; provider usage {_usage(record)}; "
        f"since the request before: +{facts['added']} / -{facts['removed']} messages")
    for key in ("condensed", "warning"):
        if record.details.get(key):
            console.print(f"{key}: {escape(redact(str(record.details[key])))}")
    entries = decode_entries(record.entries)
    for entry, message in zip(entries, messages, strict=True):
        where = f"#{entry}" if isinstance(entry, int) else "(not a stored row)"
        console.print(f"[bold]{escape(str(message.get('role')))}[/bold] {where}: "
                      + escape(_message_text(message)))


def _message_text(message: Message) -> str:
    text = one_line(text_of(message), 300)
    calls = message.get("tool_calls") or []
    if calls:
        names = ", ".join(str((c.get("function") or {}).get("name")) for c in calls
                          if isinstance(c, dict))
        text += f" [calls: {names}]"
    return text


@click.command("costs")
@_common
@only_session_option
@click.argument("conversation", required=False)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1),
              help="Without CONVERSATION: how many of the most recent conversations.")
def costs_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, only_session: bool,
    conversation: str | None, limit: int,
) -> None:
    """What a conversation cost (without CONVERSATION: each recent conversation): model
    calls and the tokens they sent, the share a prompt-caching provider reads from its
    cache, compactions and their summariser requests and tokens, the host-estimated cost in
    input-token equivalents (cache read 0.1, cache write 1.25, summary input 1.0, summary
    output 5.0), and the provider-reported usage where the caller reported it."""
    with _opened(store_path, config_path, create=False) as store:
        recording = _recording(store)
        if conversation is not None:
            refs = [find(store, conversation)]
        else:
            refs = [find(store, c.id) for c in store.list_conversations(limit=limit)]
        rows = [_costs(recording, ref, only_session) for ref in refs]
    if as_json:
        click.echo(_dumps_line({"conversations": rows, "prices": _PRICES.as_dict()}))
        return
    table = Table("conversation", "calls", "tokens sent", "cached", "compactions",
                  "summariser", "cost", "provider usage",
                  title="Costs (input-token equivalents)")
    for row in rows:
        hit = row["cache_hit_rate"]
        table.add_row(
            escape(row["conversation_id"]), f"{row['model_calls']:,}",
            f"{row['request_tokens']:,}", "—" if hit is None else f"{hit:.0%}",
            f"{row['compactions']}",
            f"{row['summary_requests']} req · {row['summary_input_tokens']:,} in · "
            f"{row['summary_output_tokens']:,} out",
            f"{row['input_side_cost']:,.0f}",
            (f"in {row['provider_input_tokens']:,} · out {row['provider_output_tokens']:,} · "
             f"cache read {row['provider_cache_read_tokens']:,}") if row["reported_calls"]
            else "—",
        )
    table.columns[0].no_wrap = True
    make_console().print(table)


def _costs(store: RecordingStore, ref: ConversationRef, only_session: bool) -> dict[str, Any]:
    scope = _scope(ref, only_session)
    records = store.list_requests(scope)
    receipts = store.list_receipts(scope)
    ledger = CostLedger.from_store(records, receipts, _PRICES)
    reported = [r for r in records if r.has_usage]
    return {
        "conversation_id": ref.id,
        **ledger.as_dict(),
        "compactions": sum(1 for r in receipts if r.status == "committed"),
        "compaction_attempts": len(receipts),
        "reported_calls": len(reported),
        "provider_input_tokens": sum(r.input_tokens or 0 for r in reported),
        "provider_output_tokens": sum(r.output_tokens or 0 for r in reported),
        "provider_cache_read_tokens": sum(r.cache_read_tokens or 0 for r in reported),
        "provider_cache_write_tokens": sum(r.cache_write_tokens or 0 for r in reported),
    }
