"""Importers: Claude Code, Codex CLI and OpenHands logs → replayable OpenAI-format JSONL.

Each test writes a small log in the tool's own shape, converts it (through the real
``hermes-host import`` command where the CLI is the point), checks the messages, and replays
the result with ``hermes-host replay --json`` into a real store (R-14.5, R-14.6): the
converted transcript must replay with zero invariant violations (R-1.4, R-6.9).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.importers import FORMATS, TranscriptImportError, import_file
from hermes_host.messages import validate_messages
from hermes_host.store import open_store
from hermes_host.transcripts import load_transcript
from tests.importers_helpers import (
    claude_code_records,
    codex_legacy_records,
    codex_records,
    openhands_events,
    write_json_array,
    write_jsonl,
)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                    encoding="utf-8")
    return path


def _import(tmp_path: Path, fmt: str, source: Path) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / f"{source.stem}.openai.jsonl"
    result = CliRunner().invoke(cli, ["import", fmt, str(source), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.output)


def _replay(tmp_path: Path, transcript: Path, context_length: int = 600) -> dict[str, Any]:
    store = tmp_path / "state.db"
    result = CliRunner().invoke(cli, [
        "replay", str(transcript), "--json", "--store", str(store),
        "--config", str(_config(tmp_path)), "--context-length", str(context_length),
    ])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def test_claude_code_converts_and_replays_r_14_6(tmp_path: Path) -> None:
    """tool_result blocks become tool messages; split records of one response join; sidechain,
    meta, summary, system and thinking records are skipped and counted."""
    source = write_jsonl(tmp_path / "session.jsonl", claude_code_records())
    out, report = _import(tmp_path, "claude-code", source)
    messages = _lines(out)
    validate_messages(messages)
    assert _roles(messages) == [
        "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "user",
        "assistant",
    ]
    first_call = messages[1]
    assert first_call["content"] == "Let me read the cart code."  # text + tool_use records
    assert [c["id"] for c in first_call["tool_calls"]] == ["toolu_01"]
    assert json.loads(first_call["tool_calls"][0]["function"]["arguments"]) == {
        "file_path": "/home/dev/shop/cart.py"}
    assert [c["function"]["name"] for c in messages[3]["tool_calls"]] == ["Bash", "Grep"]
    assert messages[4] == {"role": "tool", "tool_call_id": "toolu_02", "name": "Bash",
                           "content": "[error] 1 failed: test_discount"}
    assert messages[7]["content"] == "Thanks! Commit it."
    assert not any("sub-agent chatter" in json.dumps(m) for m in messages)
    assert report["skipped"] == {
        "assistant block thinking": 1, "meta": 1, "orphan tool result": 1, "sidechain": 1,
        "summary": 1, "system": 1,
    }
    assert report["records"] == len(claude_code_records())

    replayed = _replay(tmp_path, out)
    assert replayed["invariant_violations"] == 0
    assert replayed["messages"] == len(messages)


def test_codex_rollout_converts_and_replays_r_14_6(tmp_path: Path) -> None:
    """response_item payloads: messages, function calls and their outputs (JSON output
    unwrapped, non-zero exit noted), custom tool calls; instructions → system prompt;
    reasoning, event_msg, turn_context, web_search_call skipped and counted."""
    source = write_jsonl(tmp_path / "rollout-2025-09-20.jsonl", codex_records())
    out, report = _import(tmp_path, "codex", source)
    messages = _lines(out)
    validate_messages(messages)
    assert messages[0] == {"role": "system", "content": "You are Codex, a coding agent."}
    tools = [m for m in messages if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["call_A1", "call_A2", "call_B1"]
    assert tools[0]["content"] == "app/routes.py:12: def health(): return db.ping()\n"
    assert tools[1]["content"].startswith("[exit code 1]\nE   ConnectionError")
    patch_call = next(m for m in messages if m.get("tool_calls")
                      and m["tool_calls"][0]["id"] == "call_B1")
    assert patch_call["tool_calls"][0]["function"]["arguments"].startswith("*** Begin Patch")
    assert "Why does /health return 500?" in [m["content"] for m in messages]
    assert report["skipped"] == {"event_msg": 2, "reasoning": 1, "turn_context": 1,
                                 "web_search_call": 1}

    replayed = _replay(tmp_path, out)
    assert replayed["invariant_violations"] == 0
    assert replayed["messages"] == len(messages)


def test_codex_legacy_rollout_items_at_top_level(tmp_path: Path) -> None:
    """Older rollouts: metadata line with instructions, bare items, ``record_type: state``."""
    source = write_jsonl(tmp_path / "rollout-old.jsonl", codex_legacy_records())
    result = import_file("codex", source)
    assert _roles(result.messages) == ["system", "user", "assistant", "tool", "assistant"]
    assert result.messages[0]["content"] == "Be terse."
    call = result.messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "local_shell"
    assert json.loads(call["function"]["arguments"])["command"] == ["ls"]
    assert result.messages[3]["content"] == "README.md\nsrc\n"
    assert dict(result.skipped) == {"state": 2}


@pytest.mark.parametrize("layout", ["array", "jsonl"])
def test_openhands_events_convert_and_replay_r_14_6(tmp_path: Path, layout: str) -> None:
    """Actions with tool_call_metadata become calls (parallel calls of one response share a
    message), observations become results by ``cause``; environment events and an
    observation of an unknown action are skipped and counted."""
    events = openhands_events()
    source = (write_json_array(tmp_path / "trajectory.json", events) if layout == "array"
              else write_jsonl(tmp_path / "events.jsonl", events))
    out, report = _import(tmp_path, "openhands", source)
    messages = _lines(out)
    validate_messages(messages)
    assert _roles(messages) == [
        "system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant",
        "tool", "assistant",
    ]
    first = messages[2]
    assert first["content"] == "Let me look around."
    call = first["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("toolu_A", "execute_bash")
    assert json.loads(call["function"]["arguments"]) == {"command": "ls", "is_input": False}
    assert [c["id"] for c in messages[4]["tool_calls"]] == ["toolu_B", "toolu_C"]
    assert messages[6]["content"] == "[exit code 1]\n2 failed"
    assert messages[-1] == {"role": "assistant", "content": "Added --verbose; tests pass."}
    assert report["skipped"] == {
        "action recall": 1, "observation agent_state_changed": 2, "observation recall": 1,
        "observation run without its action": 1,
    }

    replayed = _replay(tmp_path, out)
    assert replayed["invariant_violations"] == 0
    assert replayed["messages"] == len(messages)


def test_imported_transcript_replays_through_compressions(tmp_path: Path) -> None:
    """R-6.9, R-1.4: a longer imported log (the Claude Code session repeated) compresses
    several times in a small window and still has no invariant violation; the store keeps
    every imported message."""
    records: list[dict[str, Any]] = []
    for round_ in range(6):
        for record in claude_code_records():
            copy = json.loads(json.dumps(record))
            message = copy.get("message")
            if isinstance(message, dict):
                text = json.dumps(message).replace("toolu_", f"toolu_r{round_}_")
                text = text.replace("msg_01", f"msg_r{round_}_")
                copy["message"] = json.loads(text)
            records.append(copy)
    source = write_jsonl(tmp_path / "long.jsonl", records)
    out, _ = _import(tmp_path, "claude-code", source)
    messages = _lines(out)
    replayed = _replay(tmp_path, out, context_length=700)
    assert replayed["invariant_violations"] == 0
    assert replayed["committed_compressions"] >= 1
    store = open_store(replayed["store"])
    try:
        stored = [row.message for sid in replayed["lineage"] for row in store.all_messages(sid)]
    finally:
        store.close()
    for message in messages:
        assert message in stored


def test_broken_line_is_named_and_nothing_written(tmp_path: Path) -> None:
    """Bad input → a clear error naming the file and the line, exit 2, no output file."""
    source = tmp_path / "broken.jsonl"
    good = json.dumps(claude_code_records()[2])
    source.write_text(f"{good}\n{good}\n{{\"type\": \"user\", \"message\": \n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["import", "claude-code", str(source), "-o", str(out)])
    assert result.exit_code == 2
    assert f"{source}:3: not a JSON object" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_wrong_or_empty_input_is_a_clear_error(tmp_path: Path, fmt: str) -> None:
    """A file with no conversation in the chosen format says so (and suggests --format)."""
    source = write_jsonl(tmp_path / "noise.jsonl", [{"type": "event_msg", "payload": {}},
                                                    {"observation": "null"}])
    with pytest.raises(TranscriptImportError, match="no conversation found"):
        import_file(fmt, source)
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(TranscriptImportError, match=f"{missing}: file not found"):
        import_file(fmt, missing)


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(json.dumps(codex_records()[0]).encode() + b"\n\xff\xfe\n")
    with pytest.raises(TranscriptImportError, match=r":2: not valid UTF-8"):
        import_file("codex", source)


def test_a_record_without_message_names_its_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "s.jsonl", [claude_code_records()[2],
                                                {"type": "assistant", "uuid": "x"}])
    with pytest.raises(TranscriptImportError, match=r"s\.jsonl:2: .*'message' object"):
        import_file("claude-code", source)


def test_output_is_accepted_by_the_replay_loader(tmp_path: Path) -> None:
    """Every converted file loads with the replay loader (system first, results after their
    calls); the human report names what was skipped and the next command."""
    for fmt, source in [
        ("claude-code", write_jsonl(tmp_path / "cc.jsonl", claude_code_records())),
        ("codex", write_jsonl(tmp_path / "cx.jsonl", codex_records())),
        ("openhands", write_json_array(tmp_path / "oh.json", openhands_events())),
    ]:
        out = tmp_path / f"{fmt}.out.jsonl"
        result = CliRunner().invoke(cli, ["import", fmt, str(source), "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert f"to {out}" in result.output and "Skipped:" in result.output
        assert f"hermes-host replay {out}" in result.output
        transcript = load_transcript(out)
        assert transcript.message_count == len(_lines(out))


def test_openhands_evaluation_output_uses_the_first_instance_history(tmp_path: Path) -> None:
    """An evaluation output.jsonl line carries the events under ``history``."""
    events = openhands_events()
    source = write_jsonl(tmp_path / "output.jsonl", [
        {"instance_id": "ponyc-4595", "instruction": "Add a --verbose flag", "history": events},
        {"instance_id": "ponyc-4588", "history": events},
    ])
    result = import_file("openhands", source)
    direct = import_file("openhands", write_json_array(tmp_path / "t.json", events))
    assert result.messages == direct.messages
    assert result.skipped["further instance (only the first is converted)"] == 1


def test_openhands_v1_stream_is_refused_with_a_reason(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "v1.jsonl", [
        {"kind": "SystemPromptEvent", "source": "agent", "id": "e1"},
        {"kind": "MessageEvent", "source": "user", "id": "e2"},
    ])
    with pytest.raises(TranscriptImportError, match=r"Agent-SDK \(V1\) event stream"):
        import_file("openhands", source)
