"""The ``auto`` window of ``hermes-host eval``: each transcript gets its own context length,
derived from its size as the host counts it — half its tokens rounded down to 1,000s, at least
:data:`AUTO_MINIMUM`, raised until one request holds the largest message — so that the
session outgrows the window and compresses (at the 200,000-token default window no recorded
transcript would)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_host.tokens import count_messages

if TYPE_CHECKING:
    from hermes_host.transcripts import Transcript

AUTO_MINIMUM = 2_000
AUTO_RULE = (
    "half the transcript's tokens, rounded down to a multiple of 1,000, at least "
    f"{AUTO_MINIMUM:,} and at least what leaves the request room for the system prompt and "
    "the largest message beside the reply"
)
"""How ``auto`` picks a transcript's window, in the words the output uses."""


@dataclass(frozen=True)
class TranscriptSize:
    """A transcript's size as the host counts it."""

    tokens: int
    """The whole transcript, system prompt included."""
    largest: int
    """The system prompt plus the largest single message: what one request must hold."""
    messages: int = 0
    """Messages after the system prompt (what a replay steps through)."""


def transcript_size(transcript: Transcript) -> TranscriptSize:
    system = count_messages([{"role": "system", "content": transcript.system_prompt}]) if (
        transcript.system_prompt) else 0
    sizes = [count_messages([m]) for m in transcript.messages]
    return TranscriptSize(system + sum(sizes), system + max(sizes, default=0), len(sizes))


def auto_context_length(size: TranscriptSize, max_output_tokens: int) -> int:
    """The window ``auto`` gives a transcript: half its tokens, so the session outgrows the
    window and compresses a few times (2 to 14 times on the recorded transcripts), rounded
    down to a multiple of 1,000 and at least :data:`AUTO_MINIMUM`; raised by 1,000s until
    the request budget (the window less the reply's reservation) holds the system prompt and
    the largest message, so no request is over budget by construction."""
    # imported here, like the driver's host and replay: importing the package stays light
    from hermes_host.session.bound import request_budget

    window = max(AUTO_MINIMUM, size.tokens // 2 // 1000 * 1000)
    while request_budget(window, max_output_tokens) < size.largest:
        window += 1000
    return window
