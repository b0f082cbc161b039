"""Evaluating engine sets on recorded transcripts (``hermes-host eval``).

Two parts, kept apart so each can be tested on its own:

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
  (:data:`AFTER_NTH`).
* **The driver** (:func:`evaluate`): replays each transcript with each *engine set* through a
  real :class:`~hermes_host.host.ContextHost` (its own temporary SQLite store, the real fence,
  the configured engines) using the replay driver of ``hermes-host replay`` unchanged, and
  records every request the host builds.  It reports per transcript and engine set: model
  calls, tokens sent per call, auxiliary LLM calls, compressions, invariant violations and
  the measures above; :func:`summarise_runs` gives medians over transcripts and pooled
  figures (all needed artifacts of all transcripts together).

An engine set is written ``compressor+topic_router+retrieval``: the first name answers the
lifecycle hooks (``context.engine``); the others form the ``select_context`` chain, in order.
"""

from __future__ import annotations

import bisect
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
    "AFTER_NTH",
    "BARE_LIST_MIN",
    "EngineSet",
    "EvalRun",
    "PointRecall",
    "artifact_in_context",
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


def _artifact_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, artifact)`` of every artifact occurrence of ``text``, in text order."""
    spans: list[tuple[int, int, str]] = []
    if not text:
        return spans
    claimed = bytearray(len(text))
    for kind, pattern in _ARTIFACT_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if claimed.find(1, start, end) >= 0:
                continue
            value = match.group(0)
            if kind == "url":
                value = value.rstrip(".,;:!?")
            elif kind == "path" and value.startswith("./"):
                value = value[2:]
            if len(value) < _MIN_LEN:
                continue
            claimed[start:end] = b"\x01" * (end - start)
            spans.append((start, end, value))
    spans.sort()
    return spans


def extract_artifacts(text: str) -> set[str]:
    """The artifacts of ``text`` (see the module docstring), exactly as written.

    Paths lose a leading ``./``; URLs lose trailing punctuation; anything shorter than four
    characters is ignored (``a_b`` is not a fact worth remembering).
    """
    return {value for _, _, value in _artifact_spans(text)}


def message_text(message: Message) -> str:
    """Everything of ``message`` a model reads: content and tool-call names and arguments."""
    parts = [text_of(message)]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def _whole_token(artifact: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(artifact) + r"(?![A-Za-z0-9_])")


def artifact_visible(artifact: str, text: str) -> bool:
    """True when ``artifact`` occurs in ``text`` as a whole token (a path may be the tail of a
    longer path: ``repomap.py`` is visible in ``aider/repomap.py``)."""
    start = text.find(artifact)
    if start < 0:
        return False
    return _whole_token(artifact).search(text, start) is not None


_WORD_PIECE = re.compile(r"[A-Za-z0-9_]+")


def _visible(candidates: Iterable[str], text: str) -> set[str]:
    """``{a for a in candidates if artifact_visible(a, text)}``, fast for many candidates.

    A whole-token occurrence makes every ``[A-Za-z0-9_]`` run of the artifact a whole run of
    the text, so a candidate with a run the text lacks is skipped without a search."""
    pieces = set(_WORD_PIECE.findall(text))
    return {
        a for a in candidates
        if all(p in pieces for p in _WORD_PIECE.findall(a)) and artifact_visible(a, text)
    }


# A names list: artifacts with only list punctuation (or "and" / "or") between them.
_LIST_GAP = re.compile(r"(?:[\s,;|\"'`*•·.\d\-]|\band\b|\bor\b)*", re.IGNORECASE)
BARE_LIST_MIN = 4
"""Artifacts in a row, with nothing but list punctuation between them, that make a bare list."""


def _bare_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s artifact occurrences that stand in a *bare list*: a run of at
    least :data:`BARE_LIST_MIN` artifacts separated only by whitespace, ``, ; |``, quotes,
    bullets, digits, dots, hyphens and the words "and" / "or" — a names dump, an index of
    names, an ``ls`` listing.  Sorted by start."""
    spans = _artifact_spans(text)
    bare: list[tuple[int, int]] = []
    run: list[tuple[int, int]] = []
    for start, end, _ in spans:
        if run and _LIST_GAP.fullmatch(text, run[-1][1], start) is None:
            if len(run) >= BARE_LIST_MIN:
                bare.extend(run)
            run = []
        run.append((start, end))
    if len(run) >= BARE_LIST_MIN:
        bare.extend(run)
    return bare


def _in_context(candidates: Iterable[str], text: str) -> set[str]:
    """The candidates (already known visible in ``text``) with at least one whole-token
    occurrence outside a bare list (:func:`_bare_spans`)."""
    bare = _bare_spans(text)
    starts = [s for s, _ in bare]
    found: set[str] = set()
    for artifact in candidates:
        for match in _whole_token(artifact).finditer(text):
            at = bisect.bisect_right(starts, match.start()) - 1
            if at < 0 or match.end() > bare[at][1]:
                found.add(artifact)
                break
    return found


def artifact_in_context(artifact: str, text: str) -> bool:
    """True when ``artifact`` is visible in ``text`` (:func:`artifact_visible`) at least once
    outside a bare list of names: ``"src/app.py fails on import"`` shows ``src/app.py`` in
    context, ``"a.py, b.py, c.py, src/app.py"`` only lists it."""
    return artifact_visible(artifact, text) and bool(_in_context([artifact], text))


@dataclass
class PointRecall:
    """Needed-later recall, precision and size of the request at one compression point."""

    point: int
    """Messages of the transcript (system prompt excluded) added before the compression."""
    request_at: int
    """Messages added when the request right after the compression was built."""
    needed: int
    """Artifacts of the messages before the point used again after it (system prompt's out)."""
    visible: int
    """Needed artifacts occurring anywhere in the request."""
    missing_examples: list[str] = field(default_factory=list)
    in_context: int = 0
    """Needed artifacts occurring in the request at least once outside a bare list."""
    listed: int = 0
    """History artifacts (of the messages before the point, system prompt's out) occurring
    anywhere in the request, needed later or not."""
    tokens: int = 0
    """Tokens of the request."""

    @property
    def recall(self) -> float | None:
        return self.visible / self.needed if self.needed else None

    @property
    def in_context_recall(self) -> float | None:
        return self.in_context / self.needed if self.needed else None

    @property
    def precision(self) -> float | None:
        return self.visible / self.listed if self.listed else None

    @property
    def recall_per_1k_tokens(self) -> float | None:
        return _per_1k([self])

    def as_dict(self) -> dict[str, Any]:
        return {
            "point": self.point,
            "request_at": self.request_at,
            "needed": self.needed,
            "visible": self.visible,
            "recall": _round(self.recall),
            "missing_examples": self.missing_examples,
            "in_context": self.in_context,
            "in_context_recall": _round(self.in_context_recall),
            "listed": self.listed,
            "precision": _round(self.precision),
            "tokens": self.tokens,
            "recall_per_1k_tokens": _round(self.recall_per_1k_tokens),
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
    minus the system prompt's; visible = those that occur in ``request``; in_context = those
    that occur there outside a bare list; listed = artifacts of ``messages[:point]`` (system
    prompt's out) that occur in ``request``; tokens = the request's tokens.
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
        before: set[str] = set().union(*per_message[:point]) - fixed if point else set()
        needed = before & suffix[point]
        text = "\n".join(message_text(m) for m in request)
        listed = _visible(before, text)
        visible = listed & needed
        missing = sorted(needed - visible)[:examples]
        results.append(PointRecall(
            point, point, len(needed), len(visible), missing,
            in_context=len(_in_context(visible, text)),
            listed=len(listed),
            tokens=count_messages(request),
        ))
    return results


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _ratio(points: Sequence[PointRecall]) -> float | None:
    needed = sum(p.needed for p in points)
    return sum(p.visible for p in points) / needed if needed else None


def _in_context_ratio(points: Sequence[PointRecall]) -> float | None:
    needed = sum(p.needed for p in points)
    return sum(p.in_context for p in points) / needed if needed else None


def _precision(points: Sequence[PointRecall]) -> float | None:
    listed = sum(p.listed for p in points)
    return sum(p.visible for p in points) / listed if listed else None


def _per_1k(points: Sequence[PointRecall]) -> float | None:
    """In-context recall of ``points`` (pooled) per 1,000 tokens of their mean request;
    points that need nothing are left out."""
    needy = [p for p in points if p.needed]
    recall = _in_context_ratio(needy)
    tokens = sum(p.tokens for p in needy) / len(needy) if needy else 0
    return None if recall is None or not tokens else recall * 1000 / tokens


AFTER_NTH = (1, 5, 10, 25)
"""The compressions after which recall is reported on its own (1st, 5th, 10th, 25th)."""


def _nth(points: Sequence[PointRecall], n: int) -> PointRecall | None:
    """The point of the ``n``-th committed compression (1-based), if it needs anything."""
    return points[n - 1] if len(points) >= n and points[n - 1].needed else None




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
    def in_context_recall(self) -> float | None:
        return _in_context_ratio(self.points)

    @property
    def precision(self) -> float | None:
        return _precision(self.points)

    @property
    def recall_per_1k_tokens(self) -> float | None:
        return _per_1k(self.points)

    def recall_after(self, n: int) -> float | None:
        """Needed-later recall right after the ``n``-th committed compression (1-based)."""
        point = _nth(self.points, n)
        return None if point is None else point.recall

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
            "in_context_recall": _round(self.in_context_recall),
            "precision": _round(self.precision),
            "recall_per_1k_tokens": _round(self.recall_per_1k_tokens),
            "recall_after_compression": {
                str(n): _round(self.recall_after(n)) for n in AFTER_NTH
            },
            "in_context_recall_after_compression": {
                str(n): _round(None if (p := _nth(self.points, n)) is None
                               else p.in_context_recall)
                for n in AFTER_NTH
            },
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


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _after_nth(runs: Sequence[EvalRun], n: int) -> dict[str, Any]:
    """Recall right after the ``n``-th compression, over the runs that reached it: pooled
    (all their needed artifacts at that compression together), median, and the same runs'
    pooled recall after their 1st compression (a like-for-like baseline for the decay)."""
    reached = [(r, p) for r in runs if (p := _nth(r.points, n)) is not None]
    points = [p for _, p in reached]
    firsts = [f for r, _ in reached if (f := _nth(r.points, 1)) is not None]
    return {
        "transcripts": len(reached),
        "pooled_recall": _round(_ratio(points)),
        "median_recall": _median(p.recall for p in points),
        "pooled_in_context_recall": _round(_in_context_ratio(points)),
        "pooled_recall_after_1st_same_transcripts": _round(_ratio(firsts)),
    }


def summarise_runs(runs: Sequence[EvalRun]) -> dict[str, dict[str, Any]]:
    """Per engine set, over all transcripts: median and mean of the per-transcript recall
    (transcripts without a compression point that needs anything are left out), the pooled
    recall (all needed artifacts of all transcripts together), the same for in-context
    recall, precision and recall per 1,000 tokens, recall after the 1st/5th/10th/25th
    compression, mean tokens per model call, and totals."""
    out: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(r.engines for r in runs):
        mine = [r for r in runs if r.engines == label]
        recalls = [r.recall for r in mine if r.recall is not None]
        calls = [t for r in mine for t in r.tokens_per_call]
        points = [p for r in mine for p in r.points]
        out[label] = {
            "transcripts": len(mine),
            "transcripts_with_recall": len(recalls),
            "median_needed_later_recall": round(statistics.median(recalls), 4) if recalls else None,
            "mean_needed_later_recall": round(statistics.fmean(recalls), 4) if recalls else None,
            "pooled_needed_later_recall": _round(_ratio(points)),
            "median_in_context_recall": _median(r.in_context_recall for r in mine),
            "pooled_in_context_recall": _round(_in_context_ratio(points)),
            "median_precision": _median(r.precision for r in mine),
            "pooled_precision": _round(_precision(points)),
            "median_recall_per_1k_tokens": _median(r.recall_per_1k_tokens for r in mine),
            "pooled_recall_per_1k_tokens": _round(_per_1k(points)),
            "recall_after_compression": {str(n): _after_nth(mine, n) for n in AFTER_NTH},
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
