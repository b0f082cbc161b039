"""``evaluate`` on a real transcript (skipped when the transcripts are absent)."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hermes_host.config import parse_config
from hermes_host.evaluation import evaluate, parse_engine_sets, summarise_runs

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"
)
AIDER = TRANSCRIPTS / "aider-2024-08-06-0855.jsonl"
ENGINES = {e.name for e in entry_points(group="hermes_host.context_engines")}


@pytest.mark.skipif(not AIDER.is_file(), reason=f"{AIDER} not found (HERMES_HOST_TRANSCRIPTS)")
@pytest.mark.skipif(
    not {"compressor", "retrieval", "topic_router"} <= ENGINES,
    reason="needs the compressor, retrieval and topic_router distributions installed",
)
def test_real_aider_session_every_set_valid_and_composition_keeps_recall():
    config = parse_config(
        {"model": {"context_length": 8000}, "summarizer": {"provider": "offline"}}
    )
    sets = parse_engine_sets("compressor,compressor+topic_router+retrieval")
    runs = evaluate(config, [AIDER], sets)
    base, composed = runs
    assert base.model_calls == composed.model_calls > 0
    assert base.compressions >= 1 and base.points, "the 8K window forces compressions"
    assert base.invariant_violations == composed.invariant_violations == 0
    assert composed.select_engines.get("topic_router", 0) == composed.model_calls
    assert composed.recall is not None and base.recall is not None
    assert composed.recall >= base.recall
    overall = summarise_runs(runs)
    assert set(overall) == {"compressor", "compressor+topic_router+retrieval"}
