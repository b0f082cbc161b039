"""A conversation as Markdown (``sessions export --format markdown``, issue 29): every stored
message in the order written, each compaction as a marker where its summary entered the
window (its receipt in one line), and for each message whether the model still sees it (the
last recorded request's manifest says so).  Redacted unless the caller asks for verbatim."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from hermes_host.messages import text_of
from hermes_host.models import CompactionReceipt, Message
from hermes_host.redact import redact, redact_messages
from hermes_host.store import StoredMessage
from hermes_host.store.conversations import ConversationRef
from hermes_host.store.manifests import RequestRecord, decode_entries

__all__ = ["conversation_markdown"]


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _fence(text: str) -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text}\n{ticks}"


def _receipt(receipt: CompactionReceipt) -> str:
    spent = receipt.summariser or {}
    who = f", decided by {receipt.decided_by}" if receipt.decided_by else ""
    threshold = (f" at a threshold of {receipt.threshold_tokens:,} tokens"
                 if receipt.threshold_tokens else "")
    return (f"> **Compaction** ({receipt.trigger}{who}{threshold}) — {receipt.engine or '-'}: "
            f"{receipt.outcome}, {receipt.tokens_before:,} → {receipt.tokens_after:,} tokens. "
            f"Summarised {receipt.summarised.messages} messages "
            f"({receipt.summarised.tokens:,} tokens), pruned {receipt.pruned.messages}, "
            f"dropped {receipt.dropped.messages}, kept {receipt.kept.messages}. Summariser: "
            f"{spent.get('requests', 0)} request(s), {spent.get('input_tokens', 0):,} tokens "
            f"in, {spent.get('output_tokens', 0):,} out; {receipt.duration:.2f} s.")


def _body(message: Message) -> str:
    text = text_of(message)
    calls = message.get("tool_calls") or []
    lines = [_fence(text)] if text.strip() else []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            lines.append(f"*calls* `{fn.get('name')}` with " + _fence(str(fn.get("arguments"))))
    return "\n\n".join(lines) or "*(empty)*"


def conversation_markdown(
    ref: ConversationRef,
    rows: Sequence[StoredMessage],
    receipts: Sequence[CompactionReceipt],
    last_request: RequestRecord | None,
    *,
    verbatim: bool = False,
) -> str:
    """The Markdown document of a conversation: ``rows`` in the order written, ``receipts``
    of its committed compactions at their place, ``last_request`` (its newest manifest, if
    any) deciding which messages are marked as out of the model's window: those it did not
    hold, except the live window's messages written after it (the next request holds them).
    A message the wire merged with its neighbour was sent as a part, not as its row, and is
    marked too."""
    seen = ({e for e in decode_entries(last_request.entries) if isinstance(e, int)}
            if last_request is not None else None)
    # what came after the last request is in the next one while it is in the live window
    newest = max(seen, default=0) if seen is not None else 0
    markers: dict[int, list[CompactionReceipt]] = {}
    tail: list[CompactionReceipt] = []
    for receipt in receipts:
        if receipt.status != "committed":
            continue
        before = {e for e in decode_entries(receipt.before_ids) if isinstance(e, int)}
        new = [e for e in decode_entries(receipt.after_ids)
               if isinstance(e, int) and e not in before]
        if new:
            markers.setdefault(min(new), []).append(receipt)
        else:
            tail.append(receipt)
    clean = (lambda t: t) if verbatim else redact
    messages = [r.message for r in rows]
    if not verbatim:
        messages = redact_messages(messages)
    tip = ref.tip
    out = [f"# {clean(tip.title or ref.id)}", ""]
    out.append(f"- conversation: `{ref.id}` ({len(ref.sessions)} session(s), newest "
               f"`{tip.id}`)")
    out.append(f"- source: {tip.source or '-'} · model: {tip.model or '-'}")
    out.append(f"- messages stored: {len(rows)} · compactions: "
               f"{sum(1 for r in receipts if r.status == 'committed')}")
    if seen is None:
        out.append("- no request recorded: the model's view is not known")
    else:
        out.append("- messages marked *(not in the model's window)* were not in the last "
                   "request the model received")
    if ref.root.system_prompt:
        out += ["", "## System prompt", "", _fence(clean(ref.root.system_prompt))]
    out += ["", "## Messages"]
    for row, message in zip(rows, messages, strict=True):
        for receipt in markers.get(row.id, []):
            out += ["", _receipt(receipt)]
        gone = seen is not None and row.id not in seen and not (
            row.id > newest and row.active)
        note = " *(not in the model's window)*" if gone else ""
        out += ["", f"### {message.get('role')} · #{row.id} · {_when(row.timestamp)}{note}",
                "", _body(message)]
    for receipt in tail:
        out += ["", _receipt(receipt)]
    return "\n".join(out) + "\n"
