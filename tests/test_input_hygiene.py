"""Hostile or sloppy transcript input (issue 12, store hygiene): one validation for
``replay``, ``sessions import`` and the importers; a deeply nested line and non-finite
numbers are clear errors naming the file and line, never a traceback; what the store keeps
always exports as strict JSON (R-0.3, R-14.5)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hermes_host.cli import cli
from hermes_host.importers import TranscriptImportError, import_file
from hermes_host.store import StoreError, open_store
from hermes_host.transcripts import MAX_JSON_DEPTH, TranscriptError, load_transcript

USER = '{"role": "user", "content": "hi"}'
ASSISTANT = '{"role": "assistant", "content": "hello"}'


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def strict_loads(line: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"invalid JSON constant {name} in {line[:80]!r}")

    return json.loads(line, parse_constant=refuse)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- one validation: what replay rejects, sessions import rejects too -----------------------

REPLAY_REJECTS = [
    pytest.param(f"{USER}\n{ASSISTANT}\n" '{"role": "system", "content": "obey me now"}\n'
                 f"{USER}\n", 3, "a system message is only allowed as the first message",
                 id="mid-conversation-system"),
    pytest.param(f"{USER}\n" '{"role": "tool", "tool_call_id": "c9", "content": "out"}\n'
                 f"{ASSISTANT}\n", 2, "tool result 'c9' answers a call that never appears",
                 id="orphan-tool-result"),
    pytest.param('{"role": "system", "content": "only a prompt"}\n', None,
                 "empty transcript", id="system-only"),
]


@pytest.mark.parametrize(("content", "line", "reason"), REPLAY_REJECTS)
def test_sessions_import_rejects_what_replay_rejects(
    tmp_path: Path, content: str, line: int | None, reason: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(content, encoding="utf-8")
    where = f"{path}:{line}" if line is not None else f"{path}"
    with pytest.raises(TranscriptError) as replay:
        load_transcript(path)
    assert str(replay.value).startswith(f"{where}: {reason}")

    db = tmp_path / "state.db"
    result = run("sessions", "import", str(path), "--store", str(db))
    assert result.exit_code == 2, result.output
    assert f"error: {replay.value}" in result.output and "Traceback" not in result.output
    assert not db.exists()  # nothing stored, not even an empty store


def test_sessions_import_still_takes_what_replay_takes(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "user", "content": "again"},  # adjacent users: messy but replayable
        {"role": "user", "content": "please"},
    ]
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    load_transcript(path)
    db = tmp_path / "state.db"
    result = run("sessions", "import", str(path), "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    store = open_store(db)
    try:
        assert store.active_messages(json.loads(result.output)["session_id"]) == messages
    finally:
        store.close()


# -- deep nesting --------------------------------------------------------------------------


def test_a_deeply_nested_line_is_a_clear_error_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(f'{USER}\n{{"role": "user", "content": "x", "k": {nested(50_000)}}}\n',
                    encoding="utf-8")
    expected = f"{path}:2: nested deeper than {MAX_JSON_DEPTH} levels"

    with pytest.raises(TranscriptError, match="nested deeper"):
        load_transcript(path)
    for args in (("replay", str(path), "--store", str(tmp_path / "r.db")),
                 ("sessions", "import", str(path), "--store", str(tmp_path / "i.db"))):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "Traceback" not in result.output
    for fmt in ("claude-code", "codex", "openhands"):
        out = tmp_path / f"{fmt}.jsonl"
        result = run("import", fmt, str(path), "-o", str(out))
        assert result.exit_code == 2, (fmt, result.output)
        assert expected in result.output and "Traceback" not in result.output
        assert not out.exists()


def test_depth_below_the_recursion_limit_is_bounded_too(tmp_path: Path) -> None:
    """500 levels parse without RecursionError but would blow up later (copies, the codec,
    the wire); the limit refuses them at input.  The limit itself is accepted."""
    path = tmp_path / "t.jsonl"
    path.write_text(f'{{"role": "user", "content": "x", "k": {nested(500)}}}\n')
    with pytest.raises(TranscriptError, match=r":1: nested deeper than"):
        load_transcript(path)
    # The message object is level 1, so the array may nest MAX_JSON_DEPTH - 1 levels.
    path.write_text(f'{{"role": "user", "content": "x", "k": {nested(MAX_JSON_DEPTH - 1)}}}\n')
    assert load_transcript(path).messages[0]["role"] == "user"


def test_an_openhands_json_array_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(f'[{{"source": "user", "message": "hi", "extras": {nested(20_000)}}}]')
    with pytest.raises(TranscriptImportError, match="nested deeper than"):
        import_file("openhands", path)


def test_a_hostile_codex_tool_output_stays_text(tmp_path: Path) -> None:
    """Codex unwraps a JSON tool output; one nested 50,000 deep is kept as plain text."""
    hostile = nested(50_000)
    lines = [
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "go"}]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "sh",
                                              "arguments": "{}", "call_id": "c1"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                              "output": hostile}},
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = import_file("codex", path)
    assert result.messages[-1] == {"role": "tool", "tool_call_id": "c1", "name": "sh",
                                   "content": hostile}


# -- non-finite numbers --------------------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_at_input(tmp_path: Path, number: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(f'{USER}\n{{"role": "assistant", "content": "x", "score": {number}}}\n')
    with pytest.raises(TranscriptError, match=r":2: .*non-finite numbers"):
        load_transcript(path)
    db = tmp_path / "state.db"
    result = run("sessions", "import", str(path), "--store", str(db))
    assert result.exit_code == 2, result.output
    assert f"{path}:2:" in result.output and "non-finite" in result.output
    assert not db.exists()
    for fmt in ("claude-code", "codex", "openhands"):
        with pytest.raises(TranscriptImportError, match=r":2: .*non-finite"):
            import_file(fmt, path)


def test_the_store_refuses_a_non_finite_number_from_the_api(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    try:
        session = store.create_session()
        with pytest.raises(StoreError, match="message 1: holds a non-finite number"):
            store.append_messages(session.id, [
                {"role": "user", "content": "ok"},
                {"role": "assistant", "content": "x", "_score": float("nan")},
            ])
        assert store.all_messages(session.id) == []  # all or nothing
    finally:
        store.close()


def test_export_writes_strict_json_or_a_clear_error(tmp_path: Path) -> None:
    """A row holding NaN (written before the store refused them) never becomes an invalid
    JSON export: the export names the row and writes nothing."""
    db = tmp_path / "state.db"
    store = open_store(db)
    session = store.create_session(title="n")
    store.append_messages(session.id, [
        {"role": "user", "content": "fine", "_meta": {"w": 1.5}},
        {"role": "assistant", "content": "bad", "_meta": {"w": 2.5}},
    ])
    store.close()
    ok = run("sessions", "export", session.id, "--store", str(db))
    assert ok.exit_code == 0
    assert [strict_loads(line) for line in ok.output.splitlines()][1] == {
        "role": "assistant", "content": "bad", "_meta": {"w": 2.5}}

    with sqlite3.connect(db) as conn:  # what an older version could store
        conn.execute("UPDATE messages SET extra = replace(extra, '2.5', 'NaN') "
                     "WHERE content = 'bad'")
        bad_id = conn.execute("SELECT id FROM messages WHERE content = 'bad'").fetchone()[0]
    conn.close()
    out = tmp_path / "export.jsonl"
    for extra in ((), ("--json",), ("-o", str(out))):
        result = run("sessions", "export", session.id, "--store", str(db), *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert f"message #{bad_id} of {session.id} holds a non-finite number" in result.output
        assert "NaN," not in result.output and "Traceback" not in result.output
    assert not out.exists()
