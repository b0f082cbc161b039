"""``hermes-host eval`` with its defaults measures something (issue 30, deliverable 5).

Before: with no ``--context-length`` every run used the 200,000-token default window, no
recorded transcript compressed, and every recall cell was ``—`` with no hint why.  Now the
window is picked per transcript (``auto``) unless ``--context-length`` or the config file
states one, the output says which, and a run that had nothing to measure says why.
"""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.evaluation import AUTO_RULE, auto_context_length, transcript_size
from hermes_host.transcripts import load_transcript
from tests.host_helpers import TRANSCRIPTS

AIDER = TRANSCRIPTS / "aider-2024-08-06-0855.jsonl"
MARSHMALLOW = TRANSCRIPTS / "sweagent-fc-marshmallow-1867.jsonl"
needs_transcript = pytest.mark.skipif(
    not (AIDER.is_file() and MARSHMALLOW.is_file()),
    reason=f"real transcripts not found in {TRANSCRIPTS} (HERMES_HOST_TRANSCRIPTS)",
)
needs_compressor = pytest.mark.skipif(
    "compressor" not in {e.name for e in entry_points(group="hermes_host.context_engines")},
    reason="needs the compressor distribution installed",
)
pytestmark = [needs_transcript, needs_compressor]


def _eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./config.yaml unless the test writes one
    return CliRunner().invoke(cli, ["eval", *args])


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text + "memory:\n  providers: []\n", encoding="utf-8")
    return path


def test_defaults_pick_a_window_per_transcript_that_compresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    result = _eval(tmp_path, monkeypatch, str(AIDER), str(MARSHMALLOW), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["context_length_source"] == "auto"
    assert report["context_length_rule"] == AUTO_RULE
    assert report["context_length"] is None, "two transcripts, two windows"
    for run, path in zip(report["runs"], (AIDER, MARSHMALLOW), strict=True):
        size = transcript_size(load_transcript(path))
        assert run["transcript_tokens"] == size.tokens
        assert run["context_length"] == auto_context_length(size, 8192)
        assert run["context_length"] < size.tokens < 200_000  # the old default never compressed
        assert run["compressions"] >= 2
        assert run["needed_later_recall"] is not None
        assert run["requests_over_budget"] == 0 and run["invariant_violations"] == 0
    aider = report["runs"][0]
    assert aider["context_length"] == 6000, "half of 12,797 tokens, rounded down"
    assert report["hints"] == []


def test_auto_window_leaves_room_for_the_largest_message():
    """marshmallow: half its 7,930 tokens is 3,000, whose request budget (1,500 beside the
    reply's reservation) cannot hold its 2,050-token tool output and system prompt."""
    size = transcript_size(load_transcript(MARSHMALLOW))
    assert size.tokens // 2 // 1000 * 1000 == 3000 and size.largest > 1500
    assert auto_context_length(size, 8192) == 5000
    assert auto_context_length(size, 0) == 3000, "no reply reservation: half is enough"


def test_table_says_which_window_and_shows_it_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    result = _eval(tmp_path, monkeypatch, str(AIDER))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    # the title wraps at the table's width (a pipe has no width limit, the table has one)
    assert f"context length per transcript ({AUTO_RULE})" in " ".join(out.split())
    assert "6,000 of 12,797" in out
    assert "hint:" not in out


def test_a_window_from_the_config_is_kept_and_an_idle_run_gets_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    config = _config(tmp_path, "model:\n  context_length: 200000\n")
    result = _eval(tmp_path, monkeypatch, str(AIDER), "--config", str(config), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["context_length_source"] == "config"
    assert report["context_length"] == 200_000 and report["runs"][0]["compressions"] == 0
    [hint] = report["hints"]
    assert "aider-2024-08-06-0855.jsonl: no compression at a 200,000-token window" in hint
    assert "try --context-length 6000 or --context-length auto" in hint
    table = _eval(tmp_path, monkeypatch, str(AIDER), "--config", str(config))
    assert "context length 200,000, model.context_length" in table.stdout
    assert f"hint: {hint}" in table.stdout
    # auto asked for by name wins over the config's window
    auto = _eval(tmp_path, monkeypatch, str(AIDER), "--config", str(config),
                 "--context-length", "auto", "--json")
    assert auto.exit_code == 0, auto.stderr
    picked = json.loads(auto.stdout)
    assert picked["context_length_source"] == "auto" and picked["context_length"] == 6000


def test_an_explicit_window_applies_to_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    result = _eval(tmp_path, monkeypatch, str(AIDER), str(MARSHMALLOW),
                   "--context-length", "8,000", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["context_length_source"] == "option" and report["context_length"] == 8000
    assert {run["context_length"] for run in report["runs"]} == {8000}
    assert report["context_length_rule"] is None


@pytest.mark.parametrize(("value", "needle"), [
    ("lots", "'lots' is neither a number of tokens nor 'auto'"),
    ("100", "100 is smaller than 256 tokens"),
])
def test_a_bad_context_length_is_exit_2_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, needle: str
):
    result = _eval(tmp_path, monkeypatch, str(AIDER), "--context-length", value)
    assert result.exit_code == 2
    assert needle in result.stderr and "--context-length" in result.stderr
    assert "Traceback" not in result.output
