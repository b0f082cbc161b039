"""The tutorial's finished engine (docs/tutorial/hermes-count-trigger) works as the page says
(R-0.5): its own tests and the conformance kit pass, its entry point names it, and a real
host configured as on the page lets it decide when to compress."""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance_helpers import REPO, run
from docs_blocks import blocks

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost

DIST = REPO / "docs" / "tutorial" / "hermes-count-trigger"


@pytest.fixture
def tutorial() -> Iterator[Any]:
    sys.path.insert(0, str(DIST))
    try:
        yield importlib.import_module("hermes_count_trigger")
    finally:
        sys.path.remove(str(DIST))
        for name in [m for m in sys.modules if m.startswith("hermes_count_trigger")]:
            del sys.modules[name]


def test_tutorial_tests_and_conformance_kit_pass() -> None:
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=DIST,
        env={"PYTHONPATH": str(DIST), "HERMES_HOST_TRANSCRIPTS": ""},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert int(summary.split(" passed")[0].split()[-1]) >= 20, summary
    assert "failed" not in summary


def test_entry_point_names_the_engine(tutorial: Any) -> None:
    meta = tomllib.loads((DIST / "pyproject.toml").read_text())
    value = meta["project"]["entry-points"]["hermes_host.context_engines"]["count_trigger"]
    module, _, attr = value.partition(":")
    assert getattr(importlib.import_module(module), attr) is tutorial.CountTrigger


def test_the_page_shows_the_tested_files() -> None:
    """The page's listings are inlined (readable in the repository, issue 30) and are the
    tested files: the whole file, or for pyproject.toml its head (the tutorial copy adds a
    lint section below)."""
    shown = {b.title: b.text for b in blocks(REPO / "docs" / "tutorial" / "index.md")
             if b.title and b.title != "config.yaml"}
    assert set(shown) == {"pyproject.toml", "hermes_count_trigger/__init__.py",
                          "hermes_count_trigger/engine.py", "tests/test_engine.py",
                          "tests/test_conformance.py"}
    for path, text in shown.items():
        source = (DIST / path).read_text(encoding="utf-8")
        if path == "pyproject.toml":
            assert source.startswith(text), path
        else:
            assert text == source, path


def test_selected_as_on_the_page_it_decides_when_to_compress(
    tutorial: Any, tmp_path: Path
) -> None:
    config = HermesConfig.model_validate(
        {
            "context": {"engine": "compressor", "hooks": {"should_compress": ["count_trigger"]}},
            "engines": {"count_trigger": {"max_messages": 6}},
            "summarizer": {"provider": "offline"},
            "memory": {"providers": []},
        }
    )
    engine = tutorial.CountTrigger(options=config.engines["count_trigger"])
    host = ContextHost.from_config(
        config, store=tmp_path / "state.db", extra_plugins={"count_trigger": engine}
    )
    with host:
        session = host.open_session(title="tutorial", system_prompt="You are helpful.")
        outcomes = []
        for turn in range(8):
            session.add_user(f"question {turn}: what about item {turn}?")
            session.build_request()
            session.add_assistant(f"answer {turn}: item {turn} is fine.")
            outcomes.append(session.end_turn())
    first = outcomes[0]
    assert first.decided_by == "engine:count_trigger"
    assert (first.decision.compress, first.decision.reason) == (False, "below_message_limit")
    assert first.window_tokens < 200, "tokens alone would never trigger compression here"
    compressed = [o for o in outcomes if o.decision.compress]
    assert compressed, [o.decision for o in outcomes]
    assert compressed[0].decided_by == "engine:count_trigger"
    assert compressed[0].decision.reason.endswith("messages > 6")
    report = compressed[0].compression
    assert report is not None and report.status in ("committed", "not_committed"), report
