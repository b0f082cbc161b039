"""The summary block: extraction, post-processing and injection (R-6.6, R-6.10, R-6.11,
R-7.4–R-7.6).

* :func:`extract_previous` finds the earlier summary block(s) in a window, returns their body
  as ``previous summary`` and the window without them: a standalone block is dropped, a block
  merged into a tail message is unwrapped (the original message text stays).  At most one
  summary block ever exists after a compression.
* :func:`postprocess` cleans what a summariser wrote: strip ``<think>`` blocks, redact again,
  restore ``[SKILL_PRUNED: …]`` markers verbatim, ground the *Historical Task Snapshot*
  against the input.
* :func:`choose_role` and :func:`inject` place the block between head and tail: the role that
  alternates with both neighbours (``user`` right after the system prompt, as Anthropic
  requires); when neither role fits, the summary is merged into the first tail message.
  Every block starts with :data:`hermes_host.messages.SUMMARY_PREFIX`, ends with
  :data:`SUMMARY_END_MARKER`, and carries the ``_compressed_summary`` metadata key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hermes_host.llm.offline import SKILL_MARKER_RE
from hermes_host.llm.offline.budget import escape_headings, unescape_headings
from hermes_host.messages import (
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_METADATA_KEY,
    SUMMARY_PREFIX,
    is_summary,
    text_of,
)
from hermes_host.models import Message
from hermes_host.redact import redact

__all__ = [
    "CONTINUATION_TEXT",
    "SKILL_MARKER_RE",
    "SUMMARY_END_MARKER",
    "Extracted",
    "check_provenance",
    "choose_role",
    "ensure_latest_request",
    "extract_previous",
    "inject",
    "postprocess",
    "section_body",
    "strip_reasoning",
    "summary_text",
]

SUMMARY_END_MARKER = (
    "[END OF CONTEXT SUMMARY — the conversation continues below; respond to the latest "
    "user message, not to the summary.]"
)
CONTINUATION_TEXT = (
    "Continue from the compressed conversation context above. This marker exists because no "
    "human user turn was available."
)
_THINK_RE = re.compile(
    r"<(think|thinking|reasoning)>.*?</\1>\s*", re.DOTALL | re.IGNORECASE
)
_UNCLOSED_THINK_RE = re.compile(
    r"^\s*<(?:think|thinking|reasoning)>.*?(?=^## )", re.DOTALL | re.MULTILINE | re.IGNORECASE
)
_UNCLOSED_INPUT_THINK_RE = re.compile(
    r"\s*<(?:think|thinking|reasoning)>(?!.*</(?:think|thinking|reasoning)>).*",
    re.DOTALL | re.IGNORECASE,
)
GOAL = "## Goal"
LATEST_REQUEST_LABEL = "Latest user request:"
_SECTION_RE = re.compile(r"^## [^\n]*$", re.MULTILINE)
SNAPSHOT = "## Historical Task Snapshot"
RELEVANT_FILES = "## Relevant Files"
_PATH_RE = re.compile(
    r"[\w.~-]*[/\\][\w./\\-]+|\b[\w-]+\.(?:py|js|ts|tsx|go|rs|rb|java|c|h|cpp|md|json|ya?ml|toml|ex|exs|sh|txt|cfg|ini|sql|html|css)\b"
)
PRUNED_SKILLS = "## Pruned Skills"


@dataclass
class Extracted:
    messages: list[Message]
    previous_summary: str | None


def _split_block(text: str) -> tuple[str, str]:
    """(summary body, text after the end marker) of a summary block's text."""
    body = text.lstrip()
    for prefix in (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX):
        if body.startswith(prefix):
            body = body[len(prefix) :]
            break
    rest = ""
    if SUMMARY_END_MARKER in body:
        body, rest = body.split(SUMMARY_END_MARKER, 1)
    rest = rest.replace(CONTINUATION_TEXT, "").strip()
    return body.strip(), rest


def _unwrapped(message: Message, rest: str) -> Message:
    new = {k: v for k, v in message.items() if k != SUMMARY_METADATA_KEY}
    content = message.get("content")
    if isinstance(content, list):
        parts = list(content[1:])  # the merged summary is always the first text part
        new["content"] = parts if parts else rest
    else:
        new["content"] = rest
    return new


def extract_previous(messages: Sequence[Message]) -> Extracted:
    """Take every summary block out of ``messages`` (R-6.10 self-healing scan)."""
    out: list[Message] = []
    bodies: list[str] = []
    for message in messages:
        if not is_summary(message) or message.get("role") == "system":
            out.append(message)
            continue
        content = message.get("content")
        first = content[0] if isinstance(content, list) and content else None
        text = first.get("text", "") if isinstance(first, dict) else text_of(message)
        body, rest = _split_block(str(text))
        if body:
            bodies.append(body)
        has_more_parts = isinstance(content, list) and len(content) > 1
        if rest or has_more_parts or message.get("tool_calls"):
            out.append(_unwrapped(message, rest))
    previous = "\n\n".join(bodies) if bodies else None
    return Extracted(out, previous)


def section_body(summary: str, title: str) -> str | None:
    """The text under ``title`` up to the next ``## `` heading, or ``None`` if absent."""
    start = summary.find(title)
    if start < 0:
        return None
    start += len(title)
    nxt = _SECTION_RE.search(summary, start)
    return summary[start : nxt.start() if nxt else len(summary)].strip()


def _replace_section(summary: str, title: str, body: str) -> str:
    start = summary.find(title)
    if start < 0:
        return f"{title}\n{body}\n\n{summary}".strip()
    after = start + len(title)
    nxt = _SECTION_RE.search(summary, after)
    end = nxt.start() if nxt else len(summary)
    return f"{summary[:after]}\n{body}\n\n{summary[end:]}".rstrip()


def _strip_echoed_prefix(text: str) -> str:
    """A summariser that echoes :data:`SUMMARY_PREFIX` or starts with the legacy
    ``[CONTEXT SUMMARY]:`` would carry it into the block (where the host adds the prefix
    again): drop every leading copy, and an echoed end marker."""
    while True:
        stripped = text.lstrip()
        for prefix in (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX):
            if stripped.startswith(prefix):
                text = stripped[len(prefix):]
                break
        else:
            break
    text = text.strip()
    if text.endswith(SUMMARY_END_MARKER):
        text = text[: -len(SUMMARY_END_MARKER)].rstrip()
    return text


def strip_reasoning(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with ``<think>`` / ``<thinking>`` / ``<reasoning>`` blocks removed from
    assistant text (an unclosed block runs to the end of the text), so a model's
    private reasoning never reaches the summariser's prompt (R-6.11).  Unchanged messages are
    returned as they are; changed ones are new dicts."""
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "assistant" or not content:
            out.append(message)
            continue
        if isinstance(content, str):
            cleaned: Any = _strip_think_text(content)
        elif isinstance(content, list):
            cleaned = [
                {**part, "text": _strip_think_text(part["text"])}
                if isinstance(part, dict) and isinstance(part.get("text"), str)
                else part
                for part in content
            ]
        else:
            cleaned = content
        out.append(message if cleaned == content else {**message, "content": cleaned})
    return out


def _strip_think_text(text: str) -> str:
    if "<" not in text:
        return text
    return _UNCLOSED_INPUT_THINK_RE.sub("", _THINK_RE.sub("", text))


def ensure_latest_request(summary: str, latest: str | None, *, limit: int = 1500) -> str:
    """``summary`` with the newest real user request in it verbatim (its first ``limit``
    characters): when no section quotes it, *Goal* gains a ``Latest user request:`` line —
    the request must survive compression word for word, whatever the summariser wrote.

    A request's own markdown headings are written escaped (``\\### Steps``, so they cannot
    split the summary) and count as verbatim; an earlier ``Latest user request:`` block of
    *Goal* (the label line and the request's lines after it) is replaced, not kept beside
    the new one."""
    if not latest:
        return summary
    latest = redact(latest.strip())
    plain = unescape_headings(summary)
    if len(latest) > limit:
        latest = latest[:limit]
        if latest in plain:
            return summary
        latest += "…"
    if not latest or latest in plain:
        return summary
    goal = section_body(summary, GOAL)
    line = f"{LATEST_REQUEST_LABEL} {escape_headings(latest)}"
    if goal is None:
        return _insert_after_snapshot(summary, f"{GOAL}\n{line}")
    kept: list[str] = []
    for g in goal.splitlines():
        if g.startswith(LATEST_REQUEST_LABEL):
            break  # the earlier request block runs to the end of the section
        kept.append(g)
    return _replace_section(summary, GOAL, "\n".join([*kept, line]).strip())


def _insert_after_snapshot(summary: str, block: str) -> str:
    start = summary.find(SNAPSHOT)
    if start < 0:
        return f"{block}\n\n{summary}".strip()
    nxt = _SECTION_RE.search(summary, start + len(SNAPSHOT))
    end = nxt.start() if nxt else len(summary)
    return f"{summary[:end].rstrip()}\n\n{block}\n\n{summary[end:]}".rstrip()


def _norm(text: str) -> str:
    return " ".join(text.replace(">", " ").replace('"', " ").split()).lower()


def _grounded(snapshot: str, source: str) -> bool:
    probe = _norm(snapshot)[:80]
    return bool(probe) and not probe.startswith("user asked") and probe in _norm(source)


def check_provenance(summary: str, seen: str) -> tuple[str, int]:
    """Drop *Relevant Files* lines naming only paths the summariser never saw (R-6.11's
    provenance check: an invented file would send a resumed agent looking for it)."""
    body = section_body(summary, RELEVANT_FILES)
    if not body:
        return summary, 0
    kept: list[str] = []
    dropped = 0
    for line in body.splitlines():
        paths = _PATH_RE.findall(line)
        if paths and not any(path in seen for path in paths):
            dropped += 1
            continue
        kept.append(line)
    if not dropped:
        return summary, 0
    return _replace_section(summary, RELEVANT_FILES, "\n".join(kept) or "None."), dropped


def postprocess(
    raw: str,
    *,
    source_text: str,
    snapshot_fallback: str | None,
    max_chars: int,
    seen_text: str | None = None,
) -> str:
    """Clean a summariser's answer (R-6.11).

    ``source_text`` holds the redacted requests, previous summary, memory text and skill
    markers; ``snapshot_fallback`` is the verbatim request to use when the *Historical Task
    Snapshot* section is missing or is not grounded in the input (an LLM paraphrase such as
    "User asked: …" is replaced); ``seen_text`` (the prompt) grounds *Relevant Files*.
    """
    text = _THINK_RE.sub("", raw)
    text = _UNCLOSED_THINK_RE.sub("", text).strip()
    text = _strip_echoed_prefix(text)
    text = redact(text)
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n…[summary truncated to its size limit]"
    snapshot = section_body(text, SNAPSHOT)
    if snapshot_fallback and (snapshot is None or not _grounded(snapshot, source_text)):
        text = _replace_section(text, SNAPSHOT, redact(snapshot_fallback))
    markers = list(dict.fromkeys(SKILL_MARKER_RE.findall(source_text)))
    missing = [m for m in markers if m not in text]
    if missing:
        existing = section_body(text, PRUNED_SKILLS)
        if existing is None:
            text = f"{text}\n\n{PRUNED_SKILLS}\n" + "\n".join(missing)
        else:
            lines = [existing] if existing and existing.lower() not in ("none", "none.") else []
            text = _replace_section(text, PRUNED_SKILLS, "\n".join([*lines, *missing]))
    if seen_text is not None:
        text, _ = check_provenance(text, seen_text)
    return text


def summary_text(body: str, *, continuation: bool) -> str:
    """The injected text: prefix, body, end marker (and R-7.6's continuation when asked)."""
    text = f"{SUMMARY_PREFIX}\n\n{body.strip()}\n\n{SUMMARY_END_MARKER}"
    if continuation:
        text += f"\n\n{CONTINUATION_TEXT}"
    return text


Role = Literal["user", "assistant"]


def choose_role(prev_role: str | None, next_role: str | None) -> tuple[Role, bool]:
    """(role of the summary message, merge into the first tail message?) (R-6.11).

    After the system prompt (or at the very start) the summary is pinned to ``user``.  After
    an assistant/tool message it is ``user``, after a user message ``assistant``.  If that
    collides with the first tail message, the other role is used when the head allows it;
    otherwise the summary merges into the first tail message.
    """
    pinned = prev_role in (None, "system")
    role: Role = "user" if pinned or prev_role in ("assistant", "tool") else "assistant"
    if next_role is None or role != next_role:
        return role, False
    flipped: Role = "assistant" if role == "user" else "user"
    if not pinned and flipped != prev_role:
        return flipped, False
    return role, True


def inject(
    head: Sequence[Message], body: str, tail: Sequence[Message], *, continuation: bool
) -> list[Message]:
    """head + summary block + tail, alternation kept (role choice or merge)."""
    prev_role = head[-1].get("role") if head else None
    next_role = tail[0].get("role") if tail else None
    role, merge = choose_role(prev_role, next_role)
    text = summary_text(body, continuation=continuation)
    if not merge:
        block: Message = {"role": role, "content": text, SUMMARY_METADATA_KEY: True}
        return [*head, block, *tail]
    first = dict(tail[0])
    content: Any = first.get("content")
    if isinstance(content, list):
        first["content"] = [{"type": "text", "text": text}, *content]
    else:
        first["content"] = f"{text}\n\n{content or ''}".rstrip()
    first[SUMMARY_METADATA_KEY] = True
    return [*head, first, *tail[1:]]
