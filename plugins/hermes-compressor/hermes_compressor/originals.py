"""What the offline summariser reads of the middle: step 1's one-liners stand for the old
tool outputs in an LLM's prompt (R-6.1), but an extractive summariser costs no tokens to read
more — and the names a file defines, the exact error line, the failing test are exactly what
a one-liner drops and a later turn needs again (issue 14: artifacts lost across re-summaries).
So its job carries, for the newest pruned outputs within a character budget, the original's
two ends (:func:`hermes_host.llm.offline.actions.bounded_output`, sizes kept true); older
ones keep their one-liner.  The same holds for the tool-call arguments step 1 clipped: a
``Write`` of a whole module or an ``Edit``'s new text clipped to its first 300 characters
left the summary's "what changed" with the first few names of the file (issue 14: a
13,900-character write noted 3 of the functions it added); the job carries the calls'
original arguments, within the same budget."""

from __future__ import annotations

from collections.abc import Sequence

from hermes_host.llm.offline.actions import bounded_output
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import redact, redact_messages

__all__ = ["ORIGINALS_MAX_CHARS", "with_originals"]

ORIGINALS_MAX_CHARS = 120_000
"""Characters of original outputs one job carries at most (newest first): the redaction of
what is added stays bounded however large the middle is."""


def with_originals(
    messages: Sequence[Message],
    pruned: Sequence[Message],
    original: Sequence[Message],
    *,
    max_chars: int = ORIGINALS_MAX_CHARS,
) -> list[Message]:
    """``messages`` (the middle as the summariser reads it, aligned with ``pruned``) with
    each tool output step 1 replaced (``pruned[i] is not original[i]``) given back as its
    bounded original, and each assistant message whose call arguments it clipped given its
    original calls, redacted (R-7.1), newest first until ``max_chars``; the other messages
    are the very objects of ``messages``, none mutated."""
    out = list(messages)
    spent = 0
    for i in range(min(len(out), len(pruned), len(original)) - 1, -1, -1):
        new, old = pruned[i], original[i]
        if new is old:
            continue
        if new.get("role") == "assistant" and old.get("tool_calls"):
            calls = old["tool_calls"]
            size = sum(len(str((c.get("function") or {}).get("arguments") or ""))
                       for c in calls if isinstance(c, dict))
            if spent + size > max_chars:
                break
            spent += size
            (clean,) = redact_messages([{"role": "assistant", "tool_calls": calls}])
            out[i] = {**out[i], "tool_calls": clean["tool_calls"]}
            continue
        if new.get("role") != "tool" or not isinstance(old.get("content"), str):
            continue
        text = bounded_output(text_of(old))
        if spent + len(text) > max_chars:
            break
        spent += len(text)
        out[i] = {**out[i], "content": redact(text)}
    return out
