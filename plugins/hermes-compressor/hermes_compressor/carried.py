"""What an update round carries from the previous summary and the middle: the verbatim
request of the *Historical Task Snapshot* and the newest request an earlier summary held."""

from __future__ import annotations

from collections.abc import Sequence

from hermes_host.llm.offline import first_user_request
from hermes_host.models import Message

from hermes_compressor.summary import SNAPSHOT, section_body


def _snapshot_source(previous: str | None, middle: Sequence[Message]) -> str | None:
    """The verbatim request the *Historical Task Snapshot* must carry."""
    if previous:
        body = section_body(previous, SNAPSHOT)
        if body:
            return body
    # the same choice the offline summariser makes (platform injections are not requests)
    text = first_user_request(middle)
    if not text:
        return None
    return text if len(text) <= 1500 else text[:1500] + "…"


def _previous_latest(previous: str | None) -> str | None:
    """The newest request an earlier summary carried (its *Goal* line, else its snapshot)."""
    if not previous:
        return None
    goal = section_body(previous, "## Goal") or ""
    for line in goal.splitlines():
        if line.startswith("Latest user request:"):
            return line[len("Latest user request:"):].strip() or None
    return None
