"""Hypothesis fuzzing of the inputs issue 31 found tracebacks in: transcript lines, the three
importers' records, and message dicts through the API — each with the hostile values of that
review mixed in (integers of 5,000 digits, lone surrogate escapes, nesting 150 and 1,500
deep, lists and objects where a string is expected, ``NaN``).

Only typed errors or success may come out:

* ``transcripts``: ``load_transcript`` returns or raises :class:`TranscriptError`;
  ``sessions import`` (every example) and ``replay --json`` (one in four) exit 0 or 2, with a
  message and no traceback;
* ``importers``: ``import_file`` for each format returns or raises
  :class:`TranscriptImportError`, and what it returns writes as JSONL that
  ``load_transcript`` accepts (an importer's output always replays); ``hermes-host import``
  exits 0 or 2 the same way;
* ``messages``: ``Session.add_message`` stores or raises :class:`MessageError` (or the
  mid-session system ``ValueError``), and afterwards ``build_request`` and
  ``compress(force=True)`` never fail: nothing accepted poisons the session.

Budgets: ``scaled(60, 2_000)`` examples each (``HERMES_HOST_RELIABILITY_EXAMPLES`` as in
``test_rel_fuzz``), derandomised, deadline off.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from message_strategies import message_lists, surrogates, words
from test_rel_fuzz import SYSTEM_MID_SESSION, Tally, _cli_checker, fuzz_settings

from hermes_host.cli import cli
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.importers import FORMATS, TranscriptImportError, import_file
from hermes_host.messages import MessageError
from hermes_host.transcripts import TranscriptError, load_transcript

pytestmark = pytest.mark.slow

# Placeholders a value may hold; _line() swaps them for raw JSON text json.dumps cannot write.
BIG_INT, DEEP_150, DEEP_1500, NAN = "\x00BIG\x00", "\x00D150\x00", "\x00D1500\x00", "\x00NAN\x00"
_RAW = {BIG_INT: "9" * 5000, DEEP_150: "[" * 150 + "]" * 150,
        DEEP_1500: "[" * 1500 + "]" * 1500, NAN: "NaN"}

hostile_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), words, words, surrogates,
    st.sampled_from([BIG_INT, DEEP_150, DEEP_1500, NAN]),
)
hostile = st.recursive(hostile_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(words, inner, max_size=3)), max_leaves=5)


def _line(value: Any) -> str:
    """One JSONL line; surrogates as ``\\udXXX`` escapes (as a JavaScript logger writes
    them), placeholders as raw JSON text."""
    text = json.dumps(value, ensure_ascii=True)
    for key, raw in _RAW.items():
        text = text.replace(json.dumps(key), raw)
    return text


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``strategy``, sometimes a hostile value of any type."""
    return st.one_of(strategy, strategy, strategy, hostile)


def _record(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={k: _maybe(v) for k, v in fields.items()})


text = st.one_of(words, words, surrogates)
call_id = st.sampled_from(["c1", "c2", "toolu_1", ""])
part = _record({"type": st.sampled_from(["text", "input_text", "output_text", "image",
                                        "input_image", "tool_use", "tool_result", "thinking"]),
                "text": text, "id": call_id, "tool_use_id": call_id, "name": words,
                "input": hostile, "content": st.one_of(text, st.lists(hostile, max_size=2)),
                "is_error": st.booleans()})
content = st.one_of(text, st.lists(part, max_size=3))

claude_code = _record({
    "type": st.sampled_from(["user", "assistant", "summary", "system"]),
    "message": _record({"role": st.sampled_from(["user", "assistant"]), "id": words,
                        "content": content}),
    "isSidechain": st.booleans(), "isMeta": st.booleans(),
})
codex_item = _record({
    "type": st.sampled_from(["message", "function_call", "custom_tool_call", "local_shell_call",
                             "function_call_output", "custom_tool_call_output", "reasoning"]),
    "role": st.sampled_from(["user", "assistant", "developer", "system", "tool"]),
    "content": content, "name": words, "arguments": st.one_of(text, hostile),
    "input": hostile, "call_id": call_id, "id": call_id, "action": hostile,
    "output": st.one_of(text, st.just('{"output": "x", "metadata": {"exit_code": 1}}'),
                        hostile),
})
codex = st.one_of(
    _record({"type": st.sampled_from(["response_item", "session_meta", "event_msg",
                                      "turn_context", "compacted"]),
             "payload": st.one_of(codex_item, _record({"instructions": text}))}),
    codex_item,
    _record({"record_type": st.just("state"), "id": words, "timestamp": words,
             "instructions": text}),
)
event_id = st.one_of(st.integers(0, 5), st.sampled_from(["1", "2"]))
openhands_event = _record({
    "id": event_id, "cause": event_id, "message": text, "content": text,
    "source": st.sampled_from(["user", "agent", "environment"]),
    "action": st.sampled_from(["message", "run", "read", "edit", "finish", "system", "recall",
                               "think"]),
    "observation": st.sampled_from(["run", "read", "null", "agent_state_changed", "error"]),
    "args": _record({"content": text, "command": text, "thought": text,
                     "final_thought": text}),
    "tool_call_metadata": _record({"tool_call_id": call_id, "function_name": words,
                                   "model_response": _record({"id": words})}),
    "extras": _record({"metadata": _record({"exit_code": st.integers(-2, 2)})}),
    "kind": words,
})
openhands = st.one_of(openhands_event, openhands_event,
                      _record({"history": st.lists(openhands_event, max_size=4)}))
RECORDS = {"claude-code": claude_code, "codex": codex, "openhands": openhands}
assert set(RECORDS) == set(FORMATS)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"summarizer": {"provider": "offline"},
                                    "memory": {"providers": []}}), encoding="utf-8")
    return path


transcript_line = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text},
                          optional={"n": hostile, "name": hostile}),
    hostile,
)


@st.composite
def transcript_lines(draw: st.DrawFn) -> list[str]:
    """A message list (``message_strategies``) as JSONL, with hostile lines spliced in."""
    lines = [_line(m) for m in draw(message_lists)]
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), _line(draw(transcript_line)))
    return lines


def test_fuzz_transcripts_load_sessions_import_and_replay(tmp_path: Path) -> None:
    config, store, path = _config(tmp_path), tmp_path / "state.db", tmp_path / "t.jsonl"
    runner = CliRunner()
    tally = Tally("transcripts", "transcripts: load_transcript, sessions import, replay")
    check = _cli_checker(tally)

    @fuzz_settings("transcripts")
    @given(transcript_lines(), st.integers(0, 3))
    def run(lines: list[str], dice: int) -> None:
        tally.counts["examples"] += 1
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            load_transcript(path)
            tally.counts["loaded"] += 1
        except TranscriptError as exc:
            tally.counts["refused"] += 1
            if not str(exc).startswith(str(path)):
                tally.crash(f"a TranscriptError not naming the file: {exc}", lines)
        except Exception as exc:
            tally.crash(f"load_transcript: {type(exc).__name__}: {exc}", lines)
        common = ["--config", str(config), "--store", str(store)]
        check("sessions import", runner.invoke(cli, ["sessions", "import", str(path),
                                                     *common]), lines)
        if dice == 0:
            check("replay", runner.invoke(cli, ["replay", str(path), "--json",
                                                "--context-length", "2000", *common]), lines)

    run()
    tally.finish()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fuzz_importers(tmp_path: Path, fmt: str) -> None:
    path, out = tmp_path / "log.jsonl", tmp_path / "out.jsonl"
    runner = CliRunner()
    tally = Tally("importers", f"importers: {fmt}")
    check = _cli_checker(tally)

    @fuzz_settings("importers")
    @given(st.lists(RECORDS[fmt], min_size=1, max_size=8), st.booleans())
    def run(records: list[Any], as_array: bool) -> None:
        tally.counts["examples"] += 1
        if as_array and fmt == "openhands":
            path.write_text("[" + ",".join(_line(r) for r in records) + "]", encoding="utf-8")
        else:
            path.write_text("".join(_line(r) + "\n" for r in records), encoding="utf-8")
        try:
            result = import_file(fmt, path)
        except TranscriptImportError as exc:
            tally.counts["refused"] += 1
            if not str(exc).startswith(str(path)):
                tally.crash(f"an error not naming the file: {exc}", records)
        except Exception as exc:
            tally.crash(f"import_file: {type(exc).__name__}: {exc}", records)
        else:
            tally.counts["converted"] += 1
            try:
                out.write_text(result.to_jsonl(), encoding="utf-8")
                load_transcript(out)
            except Exception as exc:
                tally.crash(f"the output does not replay: {type(exc).__name__}: {exc}",
                            records)
        check(f"import {fmt}", runner.invoke(cli, ["import", fmt, str(path), "-o", str(out)]),
              records)

    run()
    tally.finish()


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextHost]:
    pytest.importorskip("hermes_compressor")
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "model": {"context_length": 4000, "max_output_tokens": 200},
        "hooks": {"breaker": {"failures": 10**6}},
    })
    path = tmp_path_factory.mktemp("fuzz-inputs") / "state.db"
    with ContextHost.from_config(config, store=path) as opened:
        yield opened


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


poison = st.sampled_from([
    ("name", ["a"]), ("name", 5), ("name", {"x": 1}), ("meta", _deep(150)),
    ("meta", _deep(1500)), ("content", [{"type": "text", "text": 5}]),
    ("content", [{"type": "image_url", "image_url": "https://x/y.png"}]),
    ("content", [{"type": "text", "text": "x", "deep": _deep(1500)}]),
    ("content", "cut \ud83d emoji"), ("meta", {"\udc80": 1}), ("meta", 10**5000),
    ("meta", float("nan")), ("meta", {1: "x"}),
])


@st.composite
def poisoned_lists(draw: st.DrawFn) -> list[Any]:
    messages = draw(message_lists)
    for _ in range(draw(st.integers(0, 2))):
        if not messages:
            break
        i = draw(st.integers(0, len(messages) - 1))
        if isinstance(messages[i], dict):
            key, value = draw(poison)
            messages[i] = {**messages[i], key: value}
    return messages


def test_fuzz_messages_through_the_api(host: ContextHost) -> None:
    tally = Tally("messages", "api: add_message, then build_request and compress")

    @fuzz_settings("messages")
    @given(poisoned_lists())
    def run(messages: list[Any]) -> None:
        tally.counts["examples"] += 1
        session = host.open_session(None, "be terse")
        for message in messages:
            try:
                session.add_message(message)
                tally.counts["added"] += 1
            except MessageError as exc:
                tally.counts["rejected"] += 1
                if not str(exc).strip():
                    tally.crash("a rejection without a message", message)
            except ValueError as exc:
                if SYSTEM_MID_SESSION not in str(exc):
                    tally.crash(f"add_message ValueError: {exc}", message)
                tally.counts["rejected"] += 1
            except Exception as exc:
                tally.crash(f"add_message: {type(exc).__name__}: {exc}", message)
        try:
            session.build_request()
            report = session.compress(force=True)
            tally.counts[f"compress: {report.status}/{report.outcome}"] += 1
            if report.outcome in ("error", "invalid") or report.status == "rejected":
                tally.crash(f"an accepted message poisoned the session: {report.outcome}: "
                            f"{report.message}", messages)
            session.build_request()
        except Exception as exc:
            tally.crash(f"{type(exc).__name__}: {exc}", messages)

    run()
    tally.finish()
