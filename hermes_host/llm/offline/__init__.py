"""The offline extractive summariser: the eleven sections of R-7.2 without any LLM.

It reads the *structure* of the middle — tool calls and their results, user requests,
assistant decisions — rather than prose, so it is deterministic (same job → same text), fast
(a 600 KB transcript in well under a second) and available with no key and no network.  It
is what ``provider: auto`` uses without ``ANTHROPIC_API_KEY`` and what the compressor can fall
back to.

What goes where (R-7.2):

* **Historical Task Snapshot** — the first real user request, verbatim (platform echoes,
  ``<system-reminder>`` injections, skill bodies and earlier summaries are not requests); on
  an update round the previous snapshot is kept.
* **Goal** — the latest user request; for sessions with no user turn (cron / agent) the fixed
  line :data:`CRON_GOAL` plus what the assistant set out to do.
* **Constraints & Preferences** — user sentences that state a rule (``must``, ``don't``,
  ``only``, ``never`` …), verbatim; nothing is invented.
* **Completed Actions** — ``N. ACTION target — outcome [tool: name]`` per tool call, with
  commands, paths, exit codes, errors and line counts, and for an edit or write the names it
  adds (for a whole-file write, those the file did not hold when the session last saw it —
  this round's read, or the previous summary's lines about it); numbering continues the
  previous summary's; with ``job.today`` each is a dated past-tense fact.
* **Active State** — working directory, changed files, last test run, background processes,
  and the pending tasks, current work and next step of a platform's own continuation
  summary met in the middle (Claude Code's "This session is being continued …"), carried
  until a newer one replaces them.
* **Blocked** — exact error lines whose command/target has not succeeded since.
* **Key Decisions** — assistant sentences that decide something and say why, and the errors a
  continuation summary says were fixed, with the fix.
* **Resolved Questions** — user questions and the first sentence of the answer; unattended
  sessions get :data:`NO_USER_QUESTIONS`.
* **Relevant Files** (changed files first, then the most used; each with what the session
  did to it — read, edited … — and, for the first few, the names their edits added and the
  names they define, merged with the previous round's notes), **Critical Context** (an identifier
  index, memory context, a note when credentials were redacted), **Pruned Skills**
  (``[SKILL_PRUNED: …]`` markers verbatim).

``job.budget_tokens`` (measured with :func:`hermes_host.tokens.count_text`) is respected: each
section gets a share of what the fixed parts leave (a share a section does not need flows to
the others) and keeps its highest-priority items; the oldest actions are condensed into one
line that keeps the numbering.  Items mentioning ``job.focus_topic`` are listed first and are
kept first.  The fixed parts — the snapshot (capped at 30 % of the budget), the goal and the
pruned-skill markers — are always present, so only a budget smaller than they are is exceeded.

Every text is redacted again (input messages, memory context and the final summary): a secret
never reaches the summary even when a caller forgot to redact the job.
"""


from __future__ import annotations

from hermes_host.llm.base import SummaryJob
from hermes_host.llm.offline.extract import _Extractor
from hermes_host.llm.offline.sections import SECTIONS, _Composer, parse_sections
from hermes_host.llm.offline.user_requests import (
    CRON_GOAL,
    NO_USER_QUESTIONS,
    SKILL_MARKER_RE,
    first_user_request,
    is_user_request,
    latest_user_request,
    request_text,
)
from hermes_host.redact import redact, redacted_for_reading

__all__ = [
    "CRON_GOAL",
    "NO_USER_QUESTIONS",
    "SECTIONS",
    "SKILL_MARKER_RE",
    "OfflineSummarizer",
    "first_user_request",
    "is_user_request",
    "latest_user_request",
    "parse_sections",
    "request_text",
]


class OfflineSummarizer:
    """Deterministic, extractive, no network (``name="offline"``, ``calls_llm=False``)."""

    name = "offline"
    calls_llm = False

    def __init__(self, *, max_actions: int = 400, max_identifiers: int = 80) -> None:
        self.max_actions = max_actions
        self.max_identifiers = max_identifiers

    def summarize(self, job: SummaryJob) -> str:
        # The job's messages are redacted by contract; redacting again costs ~0.1 s on the
        # largest transcript and keeps a bare secret out of the identifier index.
        messages = redacted_for_reading([m for m in (job.messages or []) if isinstance(m, dict)])
        facts = _Extractor(messages, job.previous_summary).run()
        composer = _Composer(self, job, facts)
        # Defence in depth: the job's messages should already be redacted.
        return redact(composer.compose())
