"""Evaluating engine sets on recorded transcripts (``hermes-host eval``).

Two parts, kept apart so each can be tested on its own:

* **The metric** (pure functions): :func:`extract_artifacts` finds the *artifacts* of a text —
  file paths, ``snake_case`` / ``CamelCase`` identifiers, error class names, URLs and hex ids —
  the concrete things an agent must not forget.  :func:`needed_later_recall` takes a
  transcript's messages and, for each compression point, the request the model received right
  after it, and measures **needed-later recall**: of the artifacts that appeared before the
  compression point *and are used again after it*, the share visible in that request.
  Artifacts of the system prompt are left out (they are never at risk).
* **The driver** (:func:`evaluate`): replays each transcript with each *engine set* through a
  real :class:`~hermes_host.host.ContextHost` (its own temporary SQLite store, the real fence,
  the configured engines) using the replay driver of ``hermes-host replay`` unchanged, and
  records every request the host builds.  It reports per transcript and engine set: model
  calls, tokens sent per call, auxiliary LLM calls, compressions, invariant violations and
  needed-later recall.

An engine set is written ``compressor+topic_router+retrieval``: the first name answers the
lifecycle hooks (``context.engine``); the others form the ``select_context`` chain, in order.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_host.config import HermesConfig
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.tokens import count_messages

__all__ = [
    "EngineSet",
    "EvalRun",
    "PointRecall",
    "artifact_visible",
    "check_engine_sets",
    "evaluate",
    "extract_artifacts",
    "message_text",
    "needed_later_recall",
    "parse_engine_sets",
    "summarise_runs",
]

# --- artifacts ----------------------------------------------------------------------------

_EXTENSIONS = (
    "py|pyi|pyx|js|jsx|mjs|ts|tsx|md|rst|json|jsonl|ya?ml|toml|txt|cfg|ini|conf|rs|go|java|kt"
    "|c|h|cc|cpp|hpp|rb|ex|exs|erl|sh|bash|sql|html|css|scss|lock|xml|csv|ipynb|pony|heex|eex"
)
# Kinds in claiming order: a URL's text is not mined again for paths, a path's not for names.
_ARTIFACT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+")),
    (
        "path",
        re.compile(
            r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.(?:" + _EXTENSIONS + r")\b"
            r"|(?<![\w/.-])[\w-]+\.(?:" + _EXTENSIONS + r")\b"
        ),
    ),
    ("error", re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b")),
    (
        "hex",
        re.compile(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
            r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
        ),
    ),
    (
        "camel",
        re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+\b"),
    ),
    ("snake", re.compile(r"\b_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}\b")),
)
_MIN_LEN = 4


def extract_artifacts(text: str) -> set[str]:
    """The artifacts of ``text`` (see the module docstring), exactly as written.

    Paths lose a leading ``./``; URLs lose trailing punctuation; anything shorter than four
    characters is ignored (``a_b`` is not a fact worth remembering).
    """
    found: set[str] = set()
    if not text:
        return found
    claimed: list[tuple[int, int]] = []
    for kind, pattern in _ARTIFACT_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(s < end and start < e for s, e in claimed):
                continue
            value = match.group(0)
            if kind == "url":
                value = value.rstrip(".,;:!?")
            elif kind == "path" and value.startswith("./"):
                value = value[2:]
            if len(value) < _MIN_LEN:
                continue
            claimed.append((start, end))
            found.add(value)
    return found


def message_text(message: Message) -> str:
    """Everything of ``message`` a model reads: content and tool-call names and arguments."""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def artifact_visible(artifact: str, text: str) -> bool:
    """True when ``artifact`` occurs in ``text`` as a whole token (a path may be the tail of a
    longer path: ``repomap.py`` is visible in ``aider/repomap.py``)."""
    start = text.find(artifact)
    if start < 0:
        return False
    pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(artifact) + r"(?![A-Za-z0-9_])")
    return pattern.search(text, start) is not None


@dataclass
class PointRecall:
    """Needed-later recall at one compression point."""

    point: int
    """Messages of the transcript (system prompt excluded) added before the compression."""
    request_at: int
    """Messages added when the request right after the compression was built."""
    needed: int
    visible: int
    missing_examples: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float | None:
        return self.visible / self.needed if self.needed else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "point": self.point,
            "request_at": self.request_at,
            "needed": self.needed,
            "visible": self.visible,
            "recall": None if self.recall is None else round(self.recall, 4),
            "missing_examples": self.missing_examples,
        }


def needed_later_recall(
    messages: Sequence[Message],
    points: Iterable[tuple[int, Sequence[Message]]],
    *,
    system_prompt: str = "",
    examples: int = 5,
) -> list[PointRecall]:
    """Recall at each ``(point, request)``: ``point`` messages of ``messages`` came before
    the compression; ``request`` is the message list the model received right after it.

    needed = artifacts of ``messages[:point]`` that occur again in ``messages[point:]``,
    minus the system prompt's; visible = those that occur in ``request``.
    """
    # Artifacts come from the redacted text: a secret is not a fact a summary should keep
    # (it is redacted from it, R-7.1), and the report lists missing ones by name.
    per_message = [extract_artifacts(redact(message_text(m))) for m in messages]
    fixed = extract_artifacts(system_prompt)
    suffix: list[set[str]] = [set() for _ in range(len(per_message) + 1)]
    for i in range(len(per_message) - 1, -1, -1):
        suffix[i] = suffix[i + 1] | per_message[i]
    results: list[PointRecall] = []
    for point, request in points:
        point = max(0, min(point, len(per_message)))
        before: set[str] = set().union(*per_message[:point]) if point else set()
        needed = (before & suffix[point]) - fixed
        text = "\n".join(message_text(m) for m in request)
        visible = {a for a in needed if artifact_visible(a, text)}
        missing = sorted(needed - visible)[:examples]
        results.append(PointRecall(point, point, len(needed), len(visible), missing))
    return results


def _ratio(points: Sequence[PointRecall]) -> float | None:
    needed = sum(p.needed for p in points)
    return sum(p.visible for p in points) / needed if needed else None


# --- engine sets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineSet:
    """``compressor+topic_router+retrieval``: ``engine`` answers the lifecycle hooks,
    ``select`` is the ``select_context`` chain."""

    engine: str
    select: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return "+".join((self.engine, *self.select))

    def apply(self, config: HermesConfig) -> HermesConfig:
        hooks = {k: v for k, v in config.context.hooks.items() if k != "select_context"}
        if self.select:
            hooks["select_context"] = list(self.select)
        context = config.context.model_copy(update={"engine": self.engine, "hooks": hooks})
        return config.model_copy(update={"context": context})


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_engine_sets(spec: str) -> list[EngineSet]:
    """``"compressor,compressor+retrieval"`` → two :class:`EngineSet`; ``ValueError`` naming
    the bad part otherwise."""
    sets: list[EngineSet] = []
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            raise ValueError(
                f"empty engine set in {spec!r}; write e.g. compressor,compressor+retrieval"
            )
        names = [n.strip() for n in part.split("+")]
        for name in names:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} in engine set {part!r} is not an engine name")
        if len(set(names)) != len(names):
            raise ValueError(f"engine set {part!r} names an engine twice")
        sets.append(EngineSet(names[0], tuple(names[1:])))
    return sets


# --- the driver ------------------------------------------------------------------------------


@dataclass
class EvalRun:
    """One transcript replayed with one engine set."""

    transcript: str
    engines: str
    messages: int
    turns: int
    model_calls: int
    tokens_per_call: list[int]
    aux_llm_calls: int
    compressions: int
    compression_attempts: int
    invariant_violations: int
    points: list[PointRecall]
    seconds: float
    select_engines: dict[str, int] = field(default_factory=dict)

    @property
    def recall(self) -> float | None:
        return _ratio(self.points)

    @property
    def mean_tokens(self) -> float:
        return statistics.fmean(self.tokens_per_call) if self.tokens_per_call else 0.0

    def as_dict(self) -> dict[str, Any]:
        calls = self.tokens_per_call
        return {
            "transcript": self.transcript,
            "engines": self.engines,
            "messages": self.messages,
            "turns": self.turns,
            "model_calls": self.model_calls,
            "tokens_sent": {
                "total": sum(calls),
                "mean_per_call": round(self.mean_tokens, 1),
                "median_per_call": statistics.median(calls) if calls else 0,
                "max_per_call": max(calls) if calls else 0,
                "mean_per_turn": round(sum(calls) / self.turns, 1) if self.turns else 0.0,
            },
            "aux_llm_calls": self.aux_llm_calls,
            "compressions": self.compressions,
            "compression_attempts": self.compression_attempts,
            "invariant_violations": self.invariant_violations,
            "needed_later_recall": None if self.recall is None else round(self.recall, 4),
            "recall_points": [p.as_dict() for p in self.points],
            "select_adopted": self.select_engines,
            "seconds": round(self.seconds, 2),
        }


def _run_one(
    config: HermesConfig,
    path: Path,
    store_path: Path,
    engines: EngineSet,
) -> EvalRun:
    from hermes_host.host import ContextHost
    from hermes_host.replay import CompressionRecord, replay_transcript
    from hermes_host.transcripts import load_transcript

    transcript = load_transcript(path)
    host = ContextHost.from_config(engines.apply(config), store=store_path)
    added = 0
    tokens_per_call: list[int] = []
    waiting: list[int] = []  # commit points still waiting for the first request after them
    pairs: list[tuple[int, list[Message]]] = []
    request_at: list[int] = []
    attempts = 0
    adopted: dict[str, int] = {}

    def on_step(done: int, total: int) -> None:
        nonlocal added
        added = done

    def on_compression(record: CompressionRecord) -> None:
        nonlocal attempts
        attempts += 1
        if record.status == "committed":
            waiting.append(added + 1)  # called inside end_turn, before on_step

    def on_request(index: int, request: list[Message], decisions: list[dict[str, Any]]) -> None:
        tokens_per_call.append(count_messages(request))
        for entry in decisions:
            if entry.get("provenance") == "ok":
                adopted[entry["engine"]] = adopted.get(entry["engine"], 0) + 1
        while waiting and index >= waiting[0]:  # only these requests are kept
            pairs.append((waiting.pop(0), request))
            request_at.append(index)

    started = time.monotonic()
    try:
        result = replay_transcript(
            host, transcript, on_step=on_step, on_compression=on_compression,
            on_request=on_request,
        )
    finally:
        host.close()
    elapsed = time.monotonic() - started

    points = needed_later_recall(
        transcript.messages, pairs, system_prompt=transcript.system_prompt or ""
    )
    for p, at in zip(points, request_at, strict=True):
        p.request_at = at
    return EvalRun(
        transcript=path.name,
        engines=engines.label,
        messages=result.messages,
        turns=result.turns,
        model_calls=len(tokens_per_call),
        tokens_per_call=tokens_per_call,
        aux_llm_calls=result.llm_calls,
        compressions=len(result.committed),
        compression_attempts=attempts,
        invariant_violations=result.invariant_violations,
        points=points,
        seconds=elapsed,
        select_engines=adopted,
    )


def _without_memory(config: HermesConfig) -> HermesConfig:
    memory = config.memory.model_copy(update={"providers": []})
    return config.model_copy(update={"memory": memory})


def check_engine_sets(config: HermesConfig, engine_sets: Sequence[EngineSet]) -> None:
    """Load every set's engines once, before any replay: an unknown or broken engine is a
    :class:`~hermes_host.plugins.PluginError` naming it and what is installed."""
    from hermes_host.plugins import load_plugins

    for engines in engine_sets:
        load_plugins(_without_memory(engines.apply(config)))


def evaluate(
    config: HermesConfig,
    transcripts: Sequence[Path],
    engine_sets: Sequence[EngineSet],
    *,
    work_dir: Path | None = None,
    on_run: Callable[[EvalRun], None] | None = None,
) -> list[EvalRun]:
    """Replay every transcript with every engine set, each in a fresh SQLite store.

    Memory providers are switched off (an evaluation must not write anyone's MEMORY.md).
    Raises what the host raises for a bad config, a missing engine or a bad transcript
    (:class:`~hermes_host.config.ConfigError`, :class:`~hermes_host.plugins.PluginError`,
    :class:`~hermes_host.transcripts.TranscriptError`).
    """
    config = _without_memory(config)
    runs: list[EvalRun] = []
    with tempfile.TemporaryDirectory(prefix="hermes-eval-", dir=work_dir) as tmp:
        for t_index, path in enumerate(transcripts):
            for s_index, engines in enumerate(engine_sets):
                store = Path(tmp) / f"{t_index:03d}-{s_index:02d}.db"
                run = _run_one(config, Path(path), store, engines)
                runs.append(run)
                if on_run is not None:
                    on_run(run)
    return runs


def summarise_runs(runs: Sequence[EvalRun]) -> dict[str, dict[str, Any]]:
    """Per engine set, over all transcripts: median and mean of the per-transcript recall
    (transcripts without a compression point that needs anything are left out), mean tokens
    per model call, and totals."""
    out: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(r.engines for r in runs):
        mine = [r for r in runs if r.engines == label]
        recalls = [r.recall for r in mine if r.recall is not None]
        calls = [t for r in mine for t in r.tokens_per_call]
        out[label] = {
            "transcripts": len(mine),
            "transcripts_with_recall": len(recalls),
            "median_needed_later_recall": round(statistics.median(recalls), 4) if recalls else None,
            "mean_needed_later_recall": round(statistics.fmean(recalls), 4) if recalls else None,
            "pooled_needed_later_recall": (
                None
                if (pooled := _ratio([p for r in mine for p in r.points])) is None
                else round(pooled, 4)
            ),
            "model_calls": sum(r.model_calls for r in mine),
            "mean_tokens_per_call": round(statistics.fmean(calls), 1) if calls else 0.0,
            "mean_tokens_per_turn": (
                round(sum(calls) / turns, 1) if (turns := sum(r.turns for r in mine)) else 0.0
            ),
            "total_tokens_sent": sum(calls),
            "aux_llm_calls": sum(r.aux_llm_calls for r in mine),
            "compressions": sum(r.compressions for r in mine),
            "invariant_violations": sum(r.invariant_violations for r in mine),
        }
    return out
