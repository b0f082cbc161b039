"""``hermes-host eval`` end to end: a real subprocess, the real host, store, fence and the
installed engines (R-14.5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from eval_helpers import coding_session, write_jsonl

from hermes_host.cli import cli
from hermes_host.cli.eval import AGENT_LEGEND


def _cli(*args: str, home: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HERMES_HOST_HOME=str(home), NO_COLOR="1")
    env.pop("HERMES_HOST_CONFIG", None)
    env.pop("ANTHROPIC_API_KEY", None)
    code = "from hermes_host.cli import cli; cli()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=home,
    )


def _invoke(*args: str, home: Path, monkeypatch: pytest.MonkeyPatch):
    """In-process (fast) for the cases that need no process boundary."""
    monkeypatch.setenv("HERMES_HOST_HOME", str(home))
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    monkeypatch.chdir(home)
    return CliRunner().invoke(cli, list(args))


def _installed(name: str) -> bool:
    from importlib.metadata import entry_points

    return any(e.name == name for e in entry_points(group="hermes_host.context_engines"))


needs_engines = pytest.mark.skipif(
    not all(_installed(n) for n in ("compressor", "retrieval", "topic_router")),
    reason="needs the compressor, retrieval and topic_router distributions installed",
)


@needs_engines
def test_eval_json_compares_engine_sets_on_one_budget(tmp_path: Path):
    """Same context length for every set; retrieval makes more needed-later artifacts
    visible after compressions of a session that keeps returning to early files."""
    transcript = write_jsonl(tmp_path / "session.jsonl", coding_session(turns=40, filler_words=40))
    proc = _cli(
        "eval", str(transcript), "--engines", "compressor,compressor+retrieval",
        "--context-length", "5000", "--json", home=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["context_length"] == 5000 and report["summarizer"] == "offline"
    assert report["engine_sets"] == ["compressor", "compressor+retrieval"]
    base, retrieval = report["runs"]
    for run in (base, retrieval):
        assert run["model_calls"] == 40
        assert run["compressions"] >= 2
        assert run["invariant_violations"] == 0
        assert run["tokens_sent"]["max_per_call"] <= 5000 - 2500  # the request budget
        assert run["recall_points"] and all(
            0 <= p["visible"] <= p["needed"] for p in run["recall_points"]
        )
    assert base["compressions"] == retrieval["compressions"]
    assert retrieval["needed_later_recall"] > base["needed_later_recall"]
    # issue 14's measures beside the old key: retrieval's gain here comes from its names
    # index, a bare list, so in-context recall shows less of it than needed-later recall
    for run in (base, retrieval):
        assert 0 <= run["in_context_recall"] <= run["needed_later_recall"]
        assert 0 < run["precision"] <= 1 and run["recall_per_1k_tokens"] > 0
        assert set(run["recall_after_compression"]) == {"1", "5", "10", "25"}
        assert run["recall_after_compression"]["1"] == run["recall_points"][0]["recall"]
        assert all(p["tokens"] > 0 and p["listed"] >= p["visible"] >= p["in_context"]
                   for p in run["recall_points"])
    assert retrieval["in_context_recall"] < retrieval["needed_later_recall"]
    # issue 28's agent rule beside them: a subset of the needed artifacts at every point
    for run in (base, retrieval):
        assert set(run["recall_after_compression_agent"]) == {"1", "5", "10", "25"}
        assert "needed_later_recall_agent" in run and "in_context_recall_agent" in run
        assert all(0 <= p["in_context_agent"] <= p["visible_agent"] <= p["needed_agent"]
                   <= p["needed"] for p in run["recall_points"])
    assert retrieval["select_adopted"].get("retrieval", 0) >= 1
    overall = report["overall"]
    assert overall["compressor+retrieval"]["median_needed_later_recall"] == (
        retrieval["needed_later_recall"]
    )
    pooled = overall["compressor"]
    assert pooled["pooled_in_context_recall"] == base["in_context_recall"]  # one transcript
    assert pooled["pooled_needed_later_recall_agent"] == base["needed_later_recall_agent"]
    assert set(pooled["recall_10th_over_1st_agent"]) == {"all_transcripts", "same_transcripts"}
    assert pooled["pooled_precision"] == base["precision"]
    assert pooled["recall_after_compression"]["1"]["transcripts"] == 1
    assert "eval session.jsonl [compressor]" in proc.stderr
    assert not list(tmp_path.glob("*.db")), "eval stores are temporary"


@needs_engines
def test_eval_table_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    transcript = write_jsonl(tmp_path / "t.jsonl", coding_session(turns=12, filler_words=40))
    result = _invoke("eval", str(transcript), "--engines", "compressor+topic_router",
                     "--context-length", "5000", home=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert "compressor+topic_router" in result.stdout and "overall" in result.stdout
    for heading in ("recall measures per transcript", "overall recall measures",
                    "overall recall measures, agent rule", "recall (agent rule)"):
        assert heading in result.stdout
    # the one-line legend of the agent rule, however the terminal wraps it
    assert " ".join(AGENT_LEGEND.split()) in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--engines", "compressor+retrievl"],
         ["unknown engine 'retrievl'", "installed engines:"]),
        (["--engines", "compressor,,x"], ["--engines: empty engine set"]),
        (["--context-length", "10"], ["--context-length"]),
    ],
)
def test_eval_errors_are_clear_not_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args, needles
):
    transcript = write_jsonl(tmp_path / "t.jsonl", coding_session(turns=2))
    result = _invoke("eval", str(transcript), *args, home=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for needle in needles:
        assert needle in result.stderr


def test_eval_bad_transcript_names_file_and_line_before_any_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    good = write_jsonl(tmp_path / "good.jsonl", coding_session(turns=2))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\nnot json\n', encoding="utf-8")
    result = _invoke("eval", str(good), str(bad), "--engines", "compressor",
                     home=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert "bad.jsonl:2: not a JSON object" in result.stderr
    assert "eval good.jsonl" not in result.stderr, "nothing replayed before the check"
    missing = _invoke("eval", str(tmp_path / "nope.jsonl"), home=tmp_path,
                      monkeypatch=monkeypatch)
    assert missing.exit_code == 2 and "nope.jsonl" in missing.stderr
