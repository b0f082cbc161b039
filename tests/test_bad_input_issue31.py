"""Issue 31, deliverable 2 ("Bad input: 283 tracebacks in 13,935 fuzzed inputs"): each class
the review found, through the user's own path — the real CLI (click's ``CliRunner``, files in
``tmp_path``) exits 2 with a message naming the file, the line and what is wrong, and the API
(``ContextHost`` / ``Session``, ``load_transcript``, ``import_file``, ``load_config``) raises
its typed error.  Never a traceback.

Lone surrogates (``"\\ud83d"``, half of a UTF-16 pair): refused with a :class:`MessageError`
(``replay`` and ``sessions import``: exit 2 naming the line and position), because such text
has no UTF-8 form — no store column, export or provider request can carry it, so a session
holding one fails later.  The importers, which convert foreign logs (where a logger cutting
an emoji in two is the usual cause), replace each with U+FFFD and count it in the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hermes_host.cli import cli
from hermes_host.config import ConfigError, HermesConfig, load_config
from hermes_host.host import ContextHost
from hermes_host.importers import FORMATS, TranscriptImportError, import_file
from hermes_host.messages import MessageError, check_invariants, validate_messages
from hermes_host.transcripts import TranscriptError, load_json, load_transcript

BIG = "7" * 5000
"""A JSON integer Python refuses to convert (more than 4,300 digits)."""
ANSWER = '{"role": "assistant", "content": "ok"}\n'


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                    encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _replay(tmp_path: Path, path: Path, *extra: str) -> Result:
    return _run(tmp_path, "replay", str(path), "--json", "--config", str(_config(tmp_path)),
                "--store", str(tmp_path / "state.db"), *extra)


def _sessions_import(tmp_path: Path, path: Path, *extra: str) -> Result:
    return _run(tmp_path, "sessions", "import", str(path), "--config",
                str(_config(tmp_path)), "--store", str(tmp_path / "state.db"), *extra)


def _refused(result: Result, *words: str) -> None:
    """Exit 2, a message holding each of ``words``, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, (word, result.output)


def _host(tmp_path: Path) -> ContextHost:
    config = HermesConfig.model_validate({
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "model": {"context_length": 2000, "max_output_tokens": 100},
    })
    return ContextHost.from_config(config, store=tmp_path / "api.db")


# -- a JSON integer of more than 4,300 digits ----------------------------------------------


def test_huge_integer_is_a_json_input_error_not_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"more than 4,300 digits") as caught:
        load_json(f'{{"n": {BIG}}}')
    assert type(caught.value).__name__ == "JSONInputError"
    assert load_json(f'{{"n": {"7" * 4300}}}')["n"] > 0  # at the limit: accepted


def test_huge_integer_in_replay_and_sessions_import_exits_2_naming_the_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n'
                    f'{{"role": "assistant", "content": "ok", "n": {BIG}}}\n', encoding="utf-8")
    _refused(_replay(tmp_path, path), "t.jsonl:2:", "4,300 digits")
    _refused(_sessions_import(tmp_path, path), "t.jsonl:2:", "4,300 digits")
    with pytest.raises(TranscriptError, match=r"t\.jsonl:2: .*4,300 digits"):
        load_transcript(path)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_huge_integer_in_each_importer_exits_2_naming_the_line(
    tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(f'{{"type": "x"}}\n{{"type": "user", "n": {BIG}}}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    _refused(_run(tmp_path, "import", fmt, str(path), "-o", str(out)), "log.jsonl:2:",
             "4,300 digits")
    assert not out.exists()
    with pytest.raises(TranscriptImportError, match=r"log\.jsonl:2: .*4,300 digits"):
        import_file(fmt, path)


def test_huge_integer_in_an_openhands_json_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text(f'[{{"action": "message", "source": "user", "id": {BIG}}}]',
                    encoding="utf-8")
    _refused(_run(tmp_path, "import", "openhands", str(path), "-o", str(tmp_path / "o.jsonl")),
             "trajectory.json", "4,300 digits")


# -- lone surrogates --------------------------------------------------------------------


@pytest.mark.parametrize("first", [
    '{"role": "user", "content": "a cut emoji \\ud83d here"}',
    '{"role": "system", "content": "be terse \\ud83d"}\n{"role": "user", "content": "hi"}',
    '{"role": "user", "content": [{"type": "text", "text": "\\udc80"}]}',
    '{"role": "user", "content": "hi", "meta": {"\\ud800": 1}}',
])
def test_lone_surrogate_in_replay_and_sessions_import_exits_2_naming_the_line(
    tmp_path: Path, first: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(first + "\n" + ANSWER, encoding="utf-8")
    for result in (_replay(tmp_path, path), _sessions_import(tmp_path, path)):
        _refused(result, "t.jsonl:1:", "lone surrogate U+D", "no UTF-8 form")
    with pytest.raises(TranscriptError, match="lone surrogate"):
        load_transcript(path)
    assert not (tmp_path / "state.db").exists() or _run(
        tmp_path, "sessions", "list", "--store", str(tmp_path / "state.db"), "--json",
    ).output.count("session_id") == 0


def test_surrogate_in_a_command_line_option_exits_2(tmp_path: Path) -> None:
    """argv bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape):
    ``--title`` was a ``MessageError`` traceback in ``replay`` and a ``UnicodeEncodeError``
    in ``sessions import`` (``create_session``)."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n' + ANSWER, encoding="utf-8")
    _refused(_replay(tmp_path, path, "--title", "bad \udcff"), "title", "lone surrogate")
    _refused(_sessions_import(tmp_path, path, "--title", "bad \udcff"), "--title",
             "not valid UTF-8")


def test_replay_json_of_a_file_whose_name_is_not_utf8_is_valid_json(tmp_path: Path) -> None:
    """``replay --json`` printed the result with ``ensure_ascii=False``: a file name holding
    a lone surrogate (bytes that are not UTF-8) was a ``UnicodeEncodeError`` traceback."""
    path = tmp_path / "bad \udcff name.jsonl"
    try:
        path.write_text('{"role": "user", "content": "hi"}\n' + ANSWER, encoding="utf-8")
    except (UnicodeEncodeError, OSError):
        pytest.skip("this file system cannot name a file with a non-UTF-8 byte")
    result = _replay(tmp_path, path)
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    assert json.loads(line)["transcript"].endswith("bad \udcff name.jsonl")


CUT = "\ud83d"
RECORDS: dict[str, list[dict[str, Any]]] = {
    "claude-code": [
        {"type": "user", "message": {"role": "user", "content": f"hello {CUT}"}},
        {"type": "assistant", "message": {"role": "assistant", "id": "m1", "content": [
            {"type": "tool_use", "id": f"t{CUT}", "name": "Read", "input": {"p": CUT}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{CUT}", "content": f"x{CUT}"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": "done"}},
    ],
    "codex": [
        {"type": "session_meta", "payload": {"instructions": f"be terse {CUT}"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text",
                                                           "text": f"hi {CUT}"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": "ok"}},
    ],
    "openhands": [
        {"id": 1, "action": "message", "source": "user", "args": {"content": f"hi {CUT}"}},
        {"id": 2, "action": "run", "source": "agent", "args": {"command": f"ls {CUT}"}},
        {"id": 3, "observation": "run", "cause": 2, "content": f"a{CUT}"},
        {"id": 4, "action": "finish", "source": "agent", "args": {"final_thought": "ok"}},
    ],
}


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_importers_replace_lone_surrogates_and_count_them(tmp_path: Path, fmt: str) -> None:
    """Was ``UnicodeEncodeError`` writing the output.  An importer converts a foreign log, so
    it repairs: U+FFFD in place of each, counted in the report, and the output replays."""
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[fmt]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = _run(tmp_path, "import", fmt, str(path), "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["skipped"]["lone surrogate (replaced by U+FFFD)"] >= 1
    text = out.read_text(encoding="utf-8")
    assert "\ufffd" in text
    load_transcript(out)  # what the importer wrote, replay accepts
    assert _replay(tmp_path, out).exit_code == 0


def test_lone_surrogate_through_the_api_is_a_message_error_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    with _host(tmp_path) as host:
        session = host.open_session(None, "be terse")
        with pytest.raises(MessageError, match=r"content.*lone surrogate U\+D83D at position 6"):
            session.add_message({"role": "user", "content": f"a cut {CUT} emoji"})
        with pytest.raises(MessageError, match=r"tool_calls\[0\]\.function\.arguments"):
            session.add_message({"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "x", "arguments": f'{{"a": "{CUT}"}}'}}]})
        assert session.raw_window == []
        assert host.store.all_messages(session.id) == []


def test_a_window_stored_before_holding_a_surrogate_still_passes_the_invariants() -> None:
    """The decision is made at intake: ``check_invariants`` (what engine results are held
    to) checks structure only, so a session an older version stored stays compressible."""
    window = [{"role": "user", "content": f"old {CUT}"}, {"role": "assistant", "content": "ok"}]
    assert check_invariants(window) == []
    with pytest.raises(MessageError, match="lone surrogate"):
        validate_messages(window)


# -- importer type confusion ----------------------------------------------------------


@pytest.mark.parametrize(("fmt", "records"), [
    ("codex", [{"type": ["response_item"], "payload": {}},
               {"type": "response_item", "payload": {"type": {"x": 1}}},
               {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                     "content": "hi"}}]),
    ("openhands", [{"id": [1], "action": "run", "source": "agent", "args": {}},
                   {"id": 2, "observation": "run", "cause": [1], "content": "x"},
                   {"id": {"a": 1}, "action": "message", "source": "user",
                    "args": {"content": "hi"}}]),
    ("claude-code", [{"type": ["user"], "message": {"role": "user", "content": "x"}},
                     {"type": "user", "message": {"role": "user", "content": [
                         {"type": ["text"], "text": "x"}, {"type": "text", "text": "hi"}]}}]),
])
def test_unhashable_record_fields_are_skipped_not_a_type_error(
    tmp_path: Path, fmt: str, records: list[dict[str, Any]]
) -> None:
    """``{"type": ["response_item"], "payload": {}}`` was ``TypeError: unhashable type``
    (codex: the wrapper type in a set; openhands: a list ``id`` / ``cause`` as a dict key)."""
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = import_file(fmt, path)
    assert {"role": "user", "content": "hi"} in result.messages
    assert sum(result.skipped.values()) >= 1
    cli_result = _run(tmp_path, "import", fmt, str(path), "-o", str(tmp_path / "o.jsonl"))
    assert cli_result.exit_code == 0, cli_result.output


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_log_of_only_malformed_records_exits_2(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"type": ["response_item"], "payload": {}}\n'
                    '{"action": ["run"], "id": [1], "cause": {"a": 1}}\n', encoding="utf-8")
    _refused(_run(tmp_path, "import", fmt, str(path), "-o", str(tmp_path / "o.jsonl")),
             "log.jsonl", "no conversation found")


# -- config.yaml nested ~500 levels ----------------------------------------------------


@pytest.mark.parametrize("shape", ["flow", "block"])
def test_deeply_nested_config_exits_2_naming_the_line(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "config.yaml"
    if shape == "flow":
        path.write_text("engines:\n  compressor: " + "[" * 500 + "]" * 500 + "\n",
                        encoding="utf-8")
    else:
        path.write_text("".join("  " * i + f"k{i}:\n" for i in range(500)) + "  " * 500
                        + "v\n", encoding="utf-8")
    _refused(_run(tmp_path, "config", "validate", "--config", str(path)), "config.yaml",
             "line ", "nested deeper than 100 levels")
    with pytest.raises(ConfigError, match="nested deeper than 100"):
        load_config(path)
    with pytest.raises(ConfigError, match="nested deeper than 100"):
        ContextHost.from_config(path, store=tmp_path / "s.db")
    ok = tmp_path / "ok.yaml"
    ok.write_text("engines:\n  compressor: {a: " + "[" * 20 + "]" * 20 + "}\n", encoding="utf-8")
    assert "nested deeper" not in _run(tmp_path, "config", "validate", "--config",
                                       str(ok)).output


# -- a message nested 1,500 levels through the API -------------------------------------


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("where", "levels"), [("meta", 1500), ("meta", 150),
                                               ("content_part", 1500)])
def test_deeply_nested_message_is_a_message_error(
    tmp_path: Path, where: str, levels: int
) -> None:
    """Was ``RecursionError`` (the store's JSON encoder) at 1,500 levels; 101 to ~900 levels
    were stored, though no transcript line that deep loads.  Now the bound a transcript has
    (100 levels) holds for the API too."""
    message: dict[str, Any] = {"role": "user", "content": "hi"}
    if where == "meta":
        message["meta"] = _nested(levels)
    else:
        message["content"] = [{"type": "text", "text": "hi", "extra": _nested(levels)}]
    with _host(tmp_path) as host:
        session = host.open_session(None, "")
        with pytest.raises(MessageError, match=r"message 0: .*nested deeper than 100 levels"):
            session.add_message(message)
        assert host.store.all_messages(session.id) == []
        session.add_message({"role": "user", "content": "hi", "meta": _nested(90)})  # fine


# -- validation rejects what would poison a session later -------------------------------


@pytest.mark.parametrize(("message", "words"), [
    ({"role": "user", "content": "hi", "name": ["a"]}, "'name' must be a string, not list"),
    ({"role": "tool", "tool_call_id": "c", "content": "x", "name": 5}, "'name' must be a string"),
    ({"role": "user", "content": [{"type": "text", "text": 5}]},
     "content part 0 (text) needs a string 'text', not int"),
    ({"role": "user", "content": [{"type": "text"}]}, "needs a string 'text'"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]},
     "content part 0 (image_url) needs 'image_url': {\"url\""),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": 3}}]},
     "(image_url) needs"),
    ({"role": "user", "content": "hi", "meta": {1: "x"}}, "keys must be strings"),
])
def test_validate_messages_rejects_what_would_poison_a_session(
    message: dict[str, Any], words: str
) -> None:
    with pytest.raises(MessageError) as caught:
        validate_messages([message])
    assert words in str(caught.value)


def test_valid_shapes_still_pass() -> None:
    validate_messages([
        {"role": "system", "content": "be terse"},
        {"role": "user", "name": "alice", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]},
        {"role": "assistant", "content": None, "name": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "é ✓ 😀"},
    ])


def test_a_user_name_list_no_longer_poisons_the_session(tmp_path: Path) -> None:
    """``{"role": "user", "name": ["a"]}`` was stored, and every later compression of the
    session failed.  Refused at intake now: the session stays compressible."""
    with _host(tmp_path) as host:
        session = host.open_session(None, "be terse")
        with pytest.raises(MessageError, match="'name' must be a string"):
            session.add_message({"role": "user", "content": "hi", "name": ["a"]})
        for i in range(8):
            session.add_user(f"question {i} " + "words " * 60)
            session.add_assistant(f"answer {i} " + "words " * 60)
        report = session.compress(force=True)
        assert report.outcome != "error" and report.status == "committed", report
        session.build_request()


def test_a_transcript_with_a_bad_name_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hi", "name": ["a"]}\n' + ANSWER,
                    encoding="utf-8")
    _refused(_replay(tmp_path, path), "t.jsonl:1:", "'name' must be a string")
    _refused(_sessions_import(tmp_path, path), "t.jsonl:1:", "'name' must be a string")


# -- found by the fuzz suite (tests/reliability/test_rel_fuzz_inputs.py) ------------------


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_line_separator_inside_a_json_string_is_not_a_line_break(
    tmp_path: Path, separator: str
) -> None:
    """JSON writers leave U+2028, U+2029 and U+0085 unescaped in strings
    (``ensure_ascii=False``: the importers' own output, ``sessions export``), but
    ``str.splitlines()`` broke lines there: the importer's output did not replay."""
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"role": "user", "content": f"a{separator}b"},
                               ensure_ascii=False) + "\r\n" + ANSWER, encoding="utf-8")
    transcript = load_transcript(path)
    assert transcript.messages[0]["content"] == f"a{separator}b"
    assert transcript.lines == [1, 2]
    assert _sessions_import(tmp_path, path).exit_code == 0


def test_duplicate_tool_call_ids_in_one_message_are_refused(tmp_path: Path) -> None:
    """Two calls of one assistant message sharing an id: their results cannot be told apart,
    and every compression proposal broke the pairing invariant (the session never compressed
    again)."""
    call = {"id": "call_dup", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call, dict(call)]}
    with pytest.raises(MessageError, match=r"tool_calls\[1\] repeats the id 'call_dup'"):
        validate_messages([message])
    with _host(tmp_path) as host, pytest.raises(MessageError, match="repeats the id"):
        host.open_session(None, "").add_message(message)
    path = tmp_path / "log.jsonl"  # an importer keeps the first call and counts the other
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": "hi"}},
        {"type": "response_item", "payload": {"type": "function_call", "call_id": "c",
                                              "name": "f", "arguments": "{}"}},
        {"type": "response_item", "payload": {"type": "function_call", "call_id": "c",
                                              "name": "f", "arguments": "{}"}},
    ]), encoding="utf-8")
    result = import_file("codex", path)
    assert result.skipped["duplicate tool call id"] == 1
    assert len(result.messages[-1]["tool_calls"]) == 1
