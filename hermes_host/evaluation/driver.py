"""The driver: replay each transcript with each engine set through a real
:class:`~hermes_host.host.ContextHost` (its own temporary SQLite store, the real fence, the
configured engines) and record every request the host builds."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hermes_host.config import HermesConfig
from hermes_host.evaluation.engine_sets import EngineSet
from hermes_host.evaluation.recall import needed_later_recall
from hermes_host.evaluation.runs import EvalRun
from hermes_host.models import Message
from hermes_host.tokens import count_messages


def _run_one(
    config: HermesConfig,
    path: Path,
    store_path: Path,
    engines: EngineSet,
    on_step: Callable[[int, int], None] | None = None,
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

    def step(done: int, total: int) -> None:
        nonlocal added
        added = done
        if on_step is not None:
            on_step(done, total)

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
            host, transcript, on_step=step, on_compression=on_compression,
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
        cost=result.cost,
        requests_over_budget=result.requests_over_budget,
        compression_sizes=[(c.tokens_before, c.tokens_after) for c in result.committed],
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
    on_step: Callable[[int, int], None] | None = None,
) -> list[EvalRun]:
    """Replay every transcript with every engine set, each in a fresh SQLite store.
    ``on_run`` is called with each finished run, ``on_step(done, total)`` with the messages
    of the current run replayed so far (a progress bar's feed).

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
                run = _run_one(config, Path(path), store, engines, on_step)
                runs.append(run)
                if on_run is not None:
                    on_run(run)
    return runs
