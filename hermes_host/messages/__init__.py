"""OpenAI-format message lists: validation, invariants, and the sanitisers.

* :func:`validate_messages` — structure (roles, content types, ``tool_calls`` ids); raises
  :class:`MessageError` naming the index and the reason.
* :func:`check_invariants` — the window rules every engine result must obey: role alternation
  (R-1.4), tool call/result pairing (R-6.9), at most one summary block (R-6.6).  Returns a
  list of :class:`Violation` (empty = valid).
* :func:`sanitize_for_wire` — strips every top-level ``_`` key (R-7.5).
* :func:`repair_tool_pairs` — the orphan-pair sanitiser, the last line of defence (R-6.9).
* :func:`normalize_alternation` — merges adjacent user / adjacent assistant messages, as real
  transcripts (aider console lines, interrupted Claude Code turns) need before they are sent.
"""

from __future__ import annotations

from hermes_host.messages.invariants import check_invariants, validate_messages
from hermes_host.messages.reading import (
    DANGLING_RESULT as DANGLING_RESULT,
)
from hermes_host.messages.reading import (
    IMMUTABLE_TYPES,
    LEGACY_SUMMARY_PREFIX,
    ROLES,
    SUMMARY_METADATA_KEY,
    SUMMARY_PREFIX,
    MessageError,
    Violation,
    copy_data,
    is_summary,
    one_line,
    strip_reference_blocks,
    text_of,
    tool_call_ids,
    turn_starts,
)
from hermes_host.messages.wire import (
    MERGED_SEGMENTS_KEY,
    as_parts,
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
    segments_of,
    wire_form,
)

__all__ = [
    "IMMUTABLE_TYPES",
    "LEGACY_SUMMARY_PREFIX",
    "MERGED_SEGMENTS_KEY",
    "ROLES",
    "SUMMARY_METADATA_KEY",
    "SUMMARY_PREFIX",
    "MessageError",
    "Violation",
    "as_parts",
    "check_invariants",
    "copy_data",
    "is_summary",
    "normalize_alternation",
    "one_line",
    "repair_tool_pairs",
    "sanitize_for_wire",
    "segments_of",
    "strip_reference_blocks",
    "text_of",
    "tool_call_ids",
    "turn_starts",
    "validate_messages",
    "wire_form",
]
