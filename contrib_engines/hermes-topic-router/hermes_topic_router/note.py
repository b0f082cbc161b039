"""The note the router writes into the incoming message when it leaves turns out: the
topic, the other topics' labels, the names the left-out turns mention, and this topic's
earlier requests not shown — reference only, never a secret (R-7.1)."""

from __future__ import annotations

import copy
from collections import Counter

from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import contains_secret
from hermes_topic_router.options import TopicRouterOptions
from hermes_topic_router.reading import REPLY_CHARS, message_names
from hermes_topic_router.state import RouterState
from hermes_topic_router.turns import Segment

__all__ = ["NOTE_END", "NOTE_START", "left_out_names", "with_note"]

NOTE_START = "[TOPIC ROUTER — REFERENCE ONLY]"
NOTE_END = "[END TOPIC ROUTER NOTE]"


def left_out_names(
    messages: list[Message], omitted: list[Segment], kept_text: str, opts: TopicRouterOptions
) -> list[str]:
    """The names the left-out turns mention that the sent turns do not, most frequent
    first: the model learns what exists elsewhere in the session for a few tokens."""
    if not opts.note_names:
        return []
    counts: Counter[str] = Counter()
    for seg in omitted:
        for message in messages[seg.start : seg.end]:
            counts.update(message_names(text_of(message)[:REPLY_CHARS]))
    ranked = sorted(counts, key=lambda n: (-counts[n], n))
    shown: list[str] = []
    for name in ranked:
        if len(shown) >= opts.note_names:
            break
        if name not in kept_text and not contains_secret(name):
            shown.append(name)
    return shown


def with_note(
    message: Message,
    omitted: list[Segment],
    state: RouterState,
    topic: str,
    left_out: list[str],
    earlier: list[str],
) -> Message:
    """A copy of the incoming ``message`` with the note in front (the caller's message is
    never changed: the fence shares it, issue 15)."""
    others: list[str] = []
    for seg in omitted:
        tid = state.turns.get(seg.key)
        label = state.topics.get(tid or "", {}).get("label") or "an earlier topic"
        if label not in others:
            others.append(label)
    shown = "; ".join(f"“{t}”" for t in others[:3]) + (" …" if len(others) > 3 else "")
    plural = "s" if len(omitted) != 1 else ""
    note = (
        f"{NOTE_START} This request belongs to the topic “{state.topics[topic]['label']}”. "
        f"{len(omitted)} earlier turn{plural} (topics: {shown}) are left out of this "
        f"request; they remain in the stored history."
        + (f" They mention: {', '.join(left_out)}." if left_out else "")
        + (
            " Earlier requests of this topic not shown here: "
            + " → ".join(f"“{d}”" for d in earlier) + "."
            if earlier else ""
        )
        + f" {NOTE_END}"
    )
    new = copy.copy(message)
    content = message.get("content")
    if isinstance(content, list):
        new["content"] = [{"type": "text", "text": note}, *content]
    else:
        new["content"] = f"{note}\n\n{content or ''}".rstrip("\n")
    return new
