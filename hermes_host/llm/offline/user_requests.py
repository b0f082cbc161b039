"""Which user messages are requests: what a human (or the task giver) wrote, as opposed to
platform injections, command echoes and earlier summaries (R-7.2's snapshot and goal)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hermes_host.messages import is_summary, segments_of
from hermes_host.models import Message

CRON_GOAL = "[Historical cron/agent objective inferred only from assistant and tool activity]"
NO_USER_QUESTIONS = "None. No user-authored questions exist."
SYNTHETIC_USER_MARKER = "Continue from the compressed conversation context above."

_NOT_REQUEST_PREFIXES = (
    "<system-reminder>",
    "<local-command-",
    "<command-name>",
    "Caveat: The messages below",
    "Base directory for this skill:",
    "This session is being continued from a previous conversation",
    "[Request interrupted",
    "<task-notification>",
    SYNTHETIC_USER_MARKER,
)
_PLATFORM_NAMES = frozenset({"aider_console"})
_NO_REQUEST_SNAPSHOT = "No user request in this span."

_SLASH_COMMAND_RE = re.compile(r"^/[a-z][\w:-]*(?:[ \t][^\n]{0,80})?$")
"""``/clear``, ``/ex``, ``/model opus``: front-end commands, not requests."""
SKILL_MARKER_RE = re.compile(r"\[SKILL_PRUNED:[^\]\n]*\]")
"""A ``[SKILL_PRUNED: …]`` marker the prune step leaves where a skill body was."""


def _is_request_text(text: str) -> bool:
    return (bool(text) and not text.startswith(_NOT_REQUEST_PREFIXES)
            and not _SLASH_COMMAND_RE.match(text))


def request_text(message: Message) -> str | None:
    """What a human (or the task giver) wrote in ``message``, verbatim, or ``None`` for a
    platform injection.  A message merged from several user messages
    (:func:`~hermes_host.messages.normalize_alternation`) is read segment by segment, so a
    request glued after a continuation notice or a command echo is still a request."""
    if message.get("role") != "user" or message.get("name") in _PLATFORM_NAMES:
        return None
    if is_summary(message):
        return None
    parts = [t.strip() for t in segments_of(message)]
    kept = [t for t in parts if _is_request_text(t)]
    return "\n\n".join(kept) if kept else None


def is_user_request(message: Message) -> bool:
    """True for a message a human (or the task giver) wrote, not a platform injection."""
    return request_text(message) is not None


def first_user_request(messages: Iterable[Message]) -> str | None:
    """The first real user request, verbatim (``None`` when the session has none)."""
    for message in messages:
        text = request_text(message)
        if text is not None:
            return text
    return None


def latest_user_request(messages: Sequence[Message]) -> str | None:
    """The newest real user request, verbatim (``None`` when the session has none)."""
    for message in reversed(messages):
        text = request_text(message)
        if text is not None:
            return text
    return None
