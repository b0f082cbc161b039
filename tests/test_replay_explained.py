"""``hermes-host replay``'s plain output tells the truth (issue 30, deliverable 3): the
trigger threshold, the attempts counted by status and outcome, a line of plain words per
status and outcome that occurred (``dropped`` included), and the reason of every attempt that
did not commit.  The words cover every status and outcome the host and the compressor report,
and docs/embedding.md lists the same ones."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.cli.replay import OUTCOME_MEANINGS, STATUS_MEANINGS
from hermes_host.models import SummaryOutcome
from hermes_host.session.reports import ReportStatus
from tests.host_helpers import TRANSCRIPTS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "embedding.md"
PYDICOM = TRANSCRIPTS / "sweagent-gpt4-pydicom-1458.jsonl"


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                    encoding="utf-8")
    return path


def _replay(tmp_path: Path, transcript: Path, context_length: int, *args: str) -> str:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [
        "replay", str(transcript), "--config", str(_config(tmp_path)),
        "--store", str(tmp_path / f"s{len(args)}.db"), "--context-length", str(context_length),
        *args,
    ])
    assert result.exit_code == 0, result.output
    return result.stdout


def _synthetic(tmp_path: Path, turns: int = 24) -> Path:
    """A long chat with no tool calls: it goes over a 4K window's threshold many times."""
    rows = [{"role": "system", "content": "You are a careful assistant."}]
    for n in range(turns):
        rows.append({"role": "user", "content": f"question {n}: " + "tell me more " * 30})
        rows.append({"role": "assistant", "content": f"answer {n}: " + "here is more " * 30})
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_status_and_outcome_has_plain_words_and_the_docs_list_them() -> None:
    assert set(typing.get_args(ReportStatus)) <= set(STATUS_MEANINGS)
    assert set(typing.get_args(SummaryOutcome)) <= set(OUTCOME_MEANINGS)
    # what the host itself decides (hermes_host/session/compression.py)
    assert {"declined", "compression_deferred", "timeout", "error", "invalid", "no_engine",
            "lease_lost", "store_refused", "window_changed"} <= set(OUTCOME_MEANINGS)
    assert all(len(words) > 20 for words in (*STATUS_MEANINGS.values(),
                                             *OUTCOME_MEANINGS.values()))
    doc = DOCS.read_text(encoding="utf-8")
    for name in (*STATUS_MEANINGS, *OUTCOME_MEANINGS):
        assert f"| `{name}` |" in doc, name
    assert "feasibility skip" in OUTCOME_MEANINGS["dropped"]


def test_plain_replay_shows_the_threshold_and_only_the_outcomes_that_occurred(
    tmp_path: Path,
) -> None:
    transcript = _synthetic(tmp_path)
    data = json.loads(_replay(tmp_path, transcript, 4000, "--json"))
    threshold = data["threshold_tokens"]
    assert isinstance(threshold, int) and 0 < threshold < 4000
    out = _replay(tmp_path, transcript, 4000)
    assert re.search(rf"threshold\s+│ {threshold:,} tokens: a window over it starts a "
                     "compression attempt", out), out
    committed = [c for c in data["compressions"] if c["status"] == "committed"]
    assert committed
    assert f"{len(committed)} committed (" in out
    lines = out.splitlines()
    start = lines.index("what the statuses and outcomes mean:")
    legend = {line.split()[0] for line in lines[start + 1:] if line.startswith("  ")}
    occurred = {c["status"] for c in data["compressions"]} | {
        c["outcome"] for c in data["compressions"]}
    assert legend == occurred
    flat = {" ".join(line.split()) for line in lines}
    for name in occurred:  # a whole line each, never wrapped
        assert f"{name} {({**STATUS_MEANINGS, **OUTCOME_MEANINGS})[name]}" in flat, name


@pytest.mark.skipif(not PYDICOM.is_file(), reason=f"no transcript at {PYDICOM}")
def test_at_16k_the_threshold_is_6800_and_dropped_and_noop_are_explained(
    tmp_path: Path,
) -> None:
    data = json.loads(_replay(tmp_path, PYDICOM, 16000, "--json"))
    assert data["threshold_tokens"] == 6800
    pairs = {(c["status"], c["outcome"]) for c in data["compressions"]}
    assert {("committed", "summarised"), ("not_committed", "noop"),
            ("not_committed", "dropped")} <= pairs, pairs
    out = _replay(tmp_path, PYDICOM, 16000)
    flat = " ".join(out.split())
    assert re.search(r"threshold\s+│ 6,800 tokens", out)
    counts = {p: sum(1 for c in data["compressions"] if (c["status"], c["outcome"]) == p)
              for p in pairs}
    noop = counts[("not_committed", "noop")]
    assert f"not committed ({noop} noop, " in flat
    lines = out.splitlines()
    assert any(line.lstrip().startswith("dropped ") and "feasibility skip" in line
               and "summarised offline" in line for line in lines)
    assert any(line.lstrip().startswith("noop ") and "nothing worth compressing" in line
               for line in lines)
    assert not any(line.lstrip().startswith("fallback ") for line in lines)
    # every attempt that did not commit says why, on a whole line
    others = [c for c in data["compressions"] if c["status"] != "committed"]
    for c in others:
        head = f"turn {c['turn']} step {c['step']}: {c['status']} ({c['outcome']}): "
        (line,) = [ln for ln in lines if ln.startswith(head)]
        assert len(line) > len(head) + 10
    assert any("too few messages to compress" in line for line in lines)
