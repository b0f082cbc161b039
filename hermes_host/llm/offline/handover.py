"""A platform's own continuation summary met in the middle ("This session is being continued
from a previous conversation …": Claude Code's compaction, a user message in the
transcript).  It is not a request, and its two ends — all the identifier index read of it —
are its preamble and its closing instruction; what a continuing agent needs of it sits in
between: the pending tasks, the work in progress, the next step, and the errors with how
they were fixed (issue 14: open threads, errors and whether fixed).  :func:`read_handover`
takes those out; the summary keeps them in *Active State* and *Key Decisions*."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hermes_host.messages import one_line

__all__ = ["CONTINUATION_PREFIX", "FIXED_LABEL", "HANDOVER_LABELS", "Handover", "read_handover"]

CONTINUATION_PREFIX = "This session is being continued from a previous conversation"
_HEADING_RE = re.compile(r"(?m)^[ \t]*\d{1,2}\.[ \t]+([A-Z][A-Za-z &/-]{2,60}):[ \t]*$")
_BULLET_RE = re.compile(r"(?m)^[ \t]{0,4}[-*•][ \t]+(.+)$")
_MARKUP_RE = re.compile(r"\*\*|__")
_MAX_ITEMS = 4
_MAX_FIXES = 5

HANDOVER_LABELS = (
    "Pending (platform summary)",
    "Current work (platform summary)",
    "Next step (platform summary)",
)
"""The *Active State* labels of what :func:`read_handover` found; a later round carries
these lines until a newer continuation summary replaces them."""
FIXED_LABEL = "Fixed (platform summary)"
"""The *Key Decisions* label of an error the continuation summary says was fixed, and how."""


@dataclass
class Handover:
    pending: list[str] = field(default_factory=list)
    current: str = ""
    next_step: str = ""
    fixes: list[str] = field(default_factory=list)

    def state_lines(self) -> list[str]:
        values = ("; ".join(self.pending), self.current, self.next_step)
        return [f"{label}: {value}" for label, value in zip(HANDOVER_LABELS, values,
                                                             strict=True) if value]


def read_handover(text: str) -> Handover | None:
    """The open threads and fixed errors of a continuation summary, ``None`` for any
    other text."""
    if not text[:200].lstrip().startswith(CONTINUATION_PREFIX):  # no copy of a long text
        return None
    sections: dict[str, str] = {}
    heads = list(_HEADING_RE.finditer(text))
    for m, nxt in zip(heads, [*heads[1:], None], strict=True):
        end = nxt.start() if nxt else len(text)
        sections.setdefault(m.group(1).strip().lower(), text[m.end():end])
    found = Handover(
        pending=[one_line(b, 160) for b in _bullets(sections.get("pending tasks", ""))]
        [:_MAX_ITEMS],
        current=_paragraph(sections.get("current work", ""), 300),
        next_step=_paragraph(sections.get("optional next step", ""), 200),
        fixes=[one_line(b, 240) for b in _bullets(sections.get("errors and fixes", ""))]
        [:_MAX_FIXES],
    )
    if not (found.pending or found.current or found.next_step or found.fixes):
        return None
    return found


def _bullets(body: str) -> list[str]:
    """The top-level bullets of a section (nested ones belong to the bullet above)."""
    return [_MARKUP_RE.sub("", b).strip() for b in _BULLET_RE.findall(body) if b.strip()]


def _paragraph(body: str, limit: int) -> str:
    """A section's text up to its first blank line, on one line, markup dropped."""
    first = body.strip().split("\n\n", 1)[0]
    return one_line(_MARKUP_RE.sub("", first), limit) if first else ""
