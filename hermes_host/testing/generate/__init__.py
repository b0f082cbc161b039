"""Sessions the conformance kit generates itself: realistic windows and adversarial ones.

Every session is a *valid window* — the host only ever hands engines windows that satisfy
the invariants (alternation, tool pairs, at most one summary block) — but each one stresses
something real engines get wrong: tool-call groups (parallel calls included), outputs of
hundreds of kilobytes, topic switches, cron sessions with no user turn, an existing summary
block, content given as a list of parts, empty and ``None`` content, calls closed by the
dangling-call sanitiser, and text in many scripts.

Generation is seeded: the same seed gives the same sessions, so a failure reproduces.
:func:`transcript_sessions` turns a folder of OpenAI-format JSONL transcripts into sessions
too, normalised exactly as the host normalises a window before sending it.
"""

from __future__ import annotations

from hermes_host.messages import check_invariants
from hermes_host.testing.generate.adversarial import adversarial_sessions
from hermes_host.testing.generate.realistic import realistic_sessions
from hermes_host.testing.generate.session import DEFAULT_SEED, Session
from hermes_host.testing.generate.transcripts import interleave_transcripts, transcript_sessions

__all__ = [
    "DEFAULT_SEED",
    "Session",
    "adversarial_sessions",
    "generated_sessions",
    "interleave_transcripts",
    "realistic_sessions",
    "transcript_sessions",
]


def generated_sessions(seed: int = DEFAULT_SEED) -> list[Session]:
    """Every session the kit generates itself (realistic, then adversarial)."""
    sessions = realistic_sessions(seed) + adversarial_sessions(seed)
    for session in sessions:  # a kit bug must not be blamed on the engine
        problems = check_invariants(session.messages)
        if problems:
            raise RuntimeError(f"generated session {session.id} is invalid: {problems[0]}")
    return sessions
