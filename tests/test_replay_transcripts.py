"""Transcript loading: verbatim messages, turns, normalisation counts, and errors by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_host.transcripts import TranscriptError, load_transcript
from tests.host_helpers import transcript_files


def _write(tmp_path: Path, lines: list[str] | bytes) -> Path:
    path = tmp_path / "t.jsonl"
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_turns_system_prompt_and_dangling_calls(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    rows = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a", "extra_key": 1},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "c"},
    ]
    t = load_transcript(_write(tmp_path, [json.dumps(r) for r in rows]))
    assert t.system_prompt == "be brief"
    assert t.messages == rows[1:]  # verbatim, unknown keys kept
    assert [len(turn.messages) for turn in t.turns] == [1, 2, 1]
    assert t.turns[1].lines == [3, 4]
    assert t.normalisation_counts() == {"merged_adjacent": 1, "tool_pairs_repaired": 1}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"role": "user", "content": "ok"}\n\xff\xfe\n', ":2: not valid UTF-8"),
        (
            b'{"role": "user", "content": "x", "tool_calls": []}\n',
            ":1: only assistant messages may carry tool_calls",
        ),
        (
            b'{"role": "user", "content": "x"}\n{"role": "system", "content": "late"}\n',
            ":2: a system message is only allowed as the first message",
        ),
        (b'{"role": "tool", "content": "x"}\n', ":1: a tool message needs a string 'tool_call_id'"),
    ],
)
def test_errors_name_the_line(tmp_path: Path, content: bytes, expected: str) -> None:
    with pytest.raises(TranscriptError) as info:
        load_transcript(_write(tmp_path, content))
    assert expected in str(info.value) and str(tmp_path) in str(info.value)


@pytest.mark.skipif(not transcript_files(), reason="no transcripts (HERMES_HOST_TRANSCRIPTS)")
def test_every_real_transcript_loads() -> None:
    for path in transcript_files():
        t = load_transcript(path)
        assert t.message_count == sum(1 for line in path.read_text().splitlines() if line.strip())
