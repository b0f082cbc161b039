"""Evaluating engine sets on recorded transcripts (``hermes-host eval``).

Three parts, kept apart so each can be tested on its own:

* **The metric** (pure functions): :func:`extract_artifacts` finds the *artifacts* of a text —
  file paths, ``snake_case`` / ``CamelCase`` identifiers, error class names, URLs and hex ids —
  the concrete things an agent must not forget.  :func:`needed_later_recall` takes a
  transcript's messages and, for each compression point, the request the model received right
  after it, and measures **needed-later recall**: of the artifacts that appeared before the
  compression point *and are used again after it*, the share visible in that request.
  Artifacts of the system prompt are left out (they are never at risk).  Beside it, so that
  a dump of every name ever seen cannot score like real context: **in-context recall** (a
  needed artifact counts only where it occurs outside a *bare list* of names,
  :func:`artifact_in_context`), **recall per 1,000 tokens** of the request (in-context
  recall ÷ request tokens / 1000), **precision** (of the history artifacts visible in the
  request, the share needed later) and recall **after the 1st/5th/10th/25th compression**
  (:data:`AFTER_NTH`).  Each recall figure is also reported under a second rule of "needed
  later", *the agent names it again* (the ``…_agent`` keys): an artifact counts only if a
  later assistant message names it in its own text or tool-call arguments
  (:func:`agent_text`), not merely a later tool output or user message;
  :func:`needed_later_sets` gives both needed sets of a point.
* **The driver** (:func:`evaluate`): replays each transcript with each *engine set* through a
  real :class:`~hermes_host.host.ContextHost` (its own temporary SQLite store, the real fence,
  the configured engines) using the replay driver of ``hermes-host replay`` unchanged, and
  records every request the host builds.  It reports per transcript and engine set: model
  calls, tokens sent per call, auxiliary LLM calls, compressions, invariant violations and
  the measures above; :func:`summarise_runs` gives medians over transcripts and pooled
  figures (all needed artifacts of all transcripts together).
* **The window** (:func:`auto_context_length`): with ``--context-length auto`` each transcript
  gets its own window, from its :func:`transcript_size` (:data:`AUTO_RULE`); a run whose
  recall is ``—`` gets a line saying why (:func:`recall_hints`).

An engine set is written ``compressor+topic_router+retrieval``: the first name answers the
lifecycle hooks (``context.engine``); the others form the ``select_context`` chain, in order.
"""

from __future__ import annotations

from hermes_host.evaluation.artifacts import (
    BARE_LIST_MIN,
    agent_text,
    artifact_in_context,
    artifact_visible,
    extract_artifacts,
    message_text,
)
from hermes_host.evaluation.auto_window import (
    AUTO_RULE,
    TranscriptSize,
    auto_context_length,
    transcript_size,
)
from hermes_host.evaluation.driver import check_engine_sets, evaluate
from hermes_host.evaluation.engine_sets import EngineSet, configured_engine_set, parse_engine_sets
from hermes_host.evaluation.hints import recall_hints
from hermes_host.evaluation.recall import (
    AFTER_NTH,
    PointRecall,
    needed_later_recall,
    needed_later_sets,
)
from hermes_host.evaluation.runs import EvalRun, summarise_runs

__all__ = [
    "AFTER_NTH",
    "AUTO_RULE",
    "BARE_LIST_MIN",
    "EngineSet",
    "EvalRun",
    "PointRecall",
    "TranscriptSize",
    "agent_text",
    "artifact_in_context",
    "artifact_visible",
    "auto_context_length",
    "check_engine_sets",
    "configured_engine_set",
    "evaluate",
    "extract_artifacts",
    "message_text",
    "needed_later_recall",
    "needed_later_sets",
    "parse_engine_sets",
    "recall_hints",
    "summarise_runs",
    "transcript_size",
]
