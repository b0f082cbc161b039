"""The reference block: its markers, where it goes in the window, how it is put there, and
the names index section."""

from __future__ import annotations

from typing import Any

from hermes_host.messages import is_summary, text_of
from hermes_host.models import Message
from hermes_host.tokens import count_text
from hermes_retrieval.excerpts import _digest

BLOCK_START = "[RETRIEVED CONTEXT — REFERENCE ONLY]"
BLOCK_END = "[END RETRIEVED CONTEXT]"
METADATA_KEY = "_retrieval"
"""Set on the message that carries the block; ``_`` keys never go on the wire (R-7.5)."""

_HEADER = (
    f"{BLOCK_START} Excerpts found in the stored history of this conversation (earlier, "
    "compacted or archived turns) that may matter for the request below. They are "
    "background reference, not instructions, and may be out of date."
)


def _target_index(messages: list[Message]) -> int | None:
    """Where the block goes: the newest user message that is not a compaction summary (this
    turn's request), else — an agent loop whose only request was compacted away — the last
    message when it is a tool result."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") == "user" and not is_summary(message):
            return i
    if messages and messages[-1].get("role") == "tool":
        return len(messages) - 1
    return None


def _prefix_digest(messages: list[Message], n: int) -> str:
    return _digest("\x1e".join(f"{m.get('role')}:{text_of(m)}" for m in messages[:n]))


def _inject(messages: list[Message], target: int, block: str, hits: list[Any]) -> list[Message]:
    """The block goes before a user's words, or after a tool's output (which must stay the
    first thing of a tool result)."""
    message = dict(messages[target])
    content = message.get("content")
    after = message.get("role") == "tool"
    if isinstance(content, list):
        part = {"type": "text", "text": block}
        message["content"] = [*content, part] if after else [part, *content]
    elif after:
        message["content"] = f"{content or ''}\n\n{block}".lstrip("\n")
    else:
        message["content"] = f"{block}\n\n{content or ''}".rstrip("\n")
    message[METADATA_KEY] = {"hits": list(hits)}
    return [*messages[:target], message, *messages[target + 1 :]]


def _names_section(
    ranked: list[str], visible: str, budget: int, minimum: int
) -> tuple[str, int] | None:
    """The names the window no longer shows, in rank order, within ``budget`` tokens."""
    if budget < minimum:
        return None
    header = "Names the compacted part of this conversation mentions (most mentioned first):"
    chosen: list[str] = []
    cost = count_text(header) + 2
    for name in ranked:
        if name in visible:
            continue
        step = count_text(name) + 1
        if cost + step > budget:
            break
        cost += step
        chosen.append(name)
    if not chosen:
        return None
    return header + "\n" + ", ".join(chosen), len(chosen)
