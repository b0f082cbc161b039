"""``hermes-host replay`` over every real transcript, and its errors (R-14.5, R-14.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.messages import check_invariants, normalize_alternation, repair_tool_pairs
from hermes_host.store import open_store
from hermes_host.tokens import count_message, count_messages
from tests.host_helpers import TRANSCRIPTS, transcript_files

MIN_CONTEXT_LENGTH = 8_000

needs_transcripts = pytest.mark.skipif(
    not transcript_files(),
    reason=f"no transcripts at {TRANSCRIPTS} (set HERMES_HOST_TRANSCRIPTS)",
)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        "summarizer:\n  provider: offline\nmemory:\n  providers: []\n", encoding="utf-8"
    )
    return path


def _context_length(path: Path) -> int:
    """A small window that is still feasible for this transcript: 1.5 × (system prompt + the
    largest run of 4 consecutive messages as sent), at least 8K.  A compressed window keeps
    at least its last 3 messages plus the summary (R-6.7), and a step's fresh tool outputs
    cannot be pruned before the model has seen them, so no engine can go below that."""
    system_prompt, messages = _input_messages(path)
    system = count_message({"role": "system", "content": system_prompt}) if system_prompt else 0
    # as sent: adjacent same-role messages are merged into one
    sent, _ = normalize_alternation(repair_tool_pairs(messages)[0])
    sizes = [count_message(m) for m in sent]
    largest = max(sum(sizes[i : i + 4]) for i in range(len(sizes)))
    wanted = int(1.5 * (system + largest))
    return max(MIN_CONTEXT_LENGTH, -(-wanted // 1000) * 1000)


def _input_messages(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    messages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if messages and messages[0]["role"] == "system":
        return messages[0]["content"], messages[1:]
    return None, messages


def _recovered(store_path: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message the replay added, read back from the store across the lineage: each
    row once, in the order written, without the rows a publish wrote (a summary, a pruned
    copy), which carry the creation time of the child the publish made (a later window may
    keep them, moving them on).  (A rotation used to copy the kept tail into the child; it
    now moves those rows, so no session holds a copy.)"""
    store = open_store(store_path)
    try:
        lineage = store.lineage(result["session_id"])
        assert lineage == result["lineage"]
        published = {store.get_session(sid).created_at for sid in lineage[1:]}
        rows = [r for sid in lineage for r in store.all_messages(sid)
                if r.timestamp not in published]
        return [row.message for row in sorted(rows, key=lambda r: r.id)]
    finally:
        store.close()


@needs_transcripts
@pytest.mark.parametrize("transcript", transcript_files(), ids=lambda p: p.stem)
def test_replay_every_transcript_R_14_6(tmp_path: Path, transcript: Path) -> None:
    store = tmp_path / "state.db"
    context_length = _context_length(transcript)
    result = CliRunner().invoke(
        cli,
        [
            "replay", str(transcript), "--json", "--store", str(store),
            "--context-length", str(context_length), "--config", str(_config(tmp_path)),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in (
        "session_id", "turns", "compressions", "invariant_violations", "final_window_tokens",
        "store", "final_request", "normalised", "select_decisions",
    ):
        assert key in data
    assert data["invariant_violations"] == 0, data["invariant_details"]
    assert check_invariants(data["final_request"]) == []
    assert not any(k.startswith("_") for m in data["final_request"] for k in m)
    system, messages = _input_messages(transcript)
    # every stored message is recoverable, verbatim
    recovered = _recovered(data["store"], data)
    first_diff = next(
        (i for i, (a, b) in enumerate(zip(recovered, messages, strict=False)) if a != b), None
    )
    assert (len(recovered), first_diff) == (len(messages), None), (
        f"store holds {len(recovered)} of {len(messages)} messages; first difference at "
        f"{first_diff}; compressions: {data['compressions']}"
    )
    # the window never exceeds the context length after a committed compression
    committed = [c for c in data["compressions"] if c["status"] == "committed"]
    for compression in data["compressions"]:
        assert set(compression) >= {"turn", "tokens_before", "tokens_after", "outcome", "llm_calls"}
    for compression in committed:
        assert compression["tokens_after"] <= context_length
        assert compression["tokens_after"] < compression["tokens_before"]
    if count_messages(messages) > context_length:
        assert committed, "a transcript larger than the window must have been compressed"
        assert data["final_window_tokens"] <= context_length
        first = next(i for i, c in enumerate(data["compressions"]) if c["status"] == "committed")
        step = data["compressions"][first]["step"]
        assert max(data["window_series"][step - 1 :]) <= context_length
    if system is not None:
        assert data["final_request"][0] == {"role": "system", "content": system}
    users = sum(1 for m in messages if m["role"] == "user")
    assert data["turns"] == users + (0 if messages[0]["role"] == "user" else 1)


@needs_transcripts
def test_replay_subprocess_prints_one_json_object(tmp_path: Path) -> None:
    files = transcript_files()
    transcript = next((p for p in files if p.name.startswith("taubench")), files[0])
    store = tmp_path / "state.db"
    env = {**os.environ, "HERMES_HOST_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "hermes-host"), "replay", str(transcript), "--json",
            "--store", str(store), "--context-length", "8000", "--config", str(_config(tmp_path)),
        ],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # exactly one JSON document on stdout
    assert data["store"] == str(store)
    assert [c for c in data["compressions"] if c["status"] == "committed"]
    assert data["session_id"] != data["first_session_id"]
    assert data["invariant_violations"] == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"role": "user", "content": "hi"}\n{not json\n', ":2: not a JSON object"),
        (
            '{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n',
            ":2: unknown role",
        ),
        (
            '{"role": "user", "content": "hi"}\n'
            '{"role": "tool", "tool_call_id": "c9", "content": "out"}\n',
            ":2: tool result 'c9' answers a call that never appears",
        ),
        ("", "empty transcript"),
        ("\n\n", "empty transcript"),
        ('["a list"]\n', ":1: expected a JSON object"),
    ],
    ids=["not-json", "unknown-role", "orphan-result", "empty", "blank", "not-object"],
)
def test_replay_malformed_input_exits_2_naming_the_line(
    tmp_path: Path, content: str, expected: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["replay", str(bad), "--json", "--store", str(tmp_path / "s.db")]
    )
    assert result.exit_code == 2
    assert str(bad) in result.output and expected in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "s.db").exists()  # nothing was written for a rejected file


def test_replay_missing_file_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2 and "file not found" in result.output


def test_replay_defaults_to_the_configured_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    rows = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "one file"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.yaml").write_text(
        "summarizer:\n  provider: offline\nmemory:\n  providers: []\n", encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["replay", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["store"] == str(tmp_path / "home" / "state.db")
    assert data["turns"] == 1 and data["steps"] == 3  # user; call + result; answer
    assert data["final_request"] == rows[:4]  # what the last model call was sent
