"""Hypothesis fuzzing of message lists and configs through every entry point (issue 13;
R-0.3, R-1.4, R-6.9, R-14.5).

Targets, each with ``scaled(ci, 10_000)`` derandomised examples:

* ``validate_messages`` (and ``check_invariants`` on what it accepts);
* the host path: ``Session.add_message`` for every message, ``build_request`` through both
  select engines (``topic_router`` then ``retrieval``, the real store's history handle) and
  ``compress(force=True)`` through the real compressor with the offline summariser;
* the CLI, in process through click's ``CliRunner``: ``replay`` and ``sessions import`` on
  the list written as JSONL (non-UTF-8 bytes included), ``config validate`` on generated
  ``config.yaml`` files.

A crash is an exception of an unexpected type reaching the caller, an engine that raised
inside the fence (provenance ``error``), or an exit status other than 0/2.  A rejection must
come as :class:`~hermes_host.messages.MessageError` with a message, or exit status 2 with a
message (and no traceback).  Crashes are collected (not shrunk) and reported together.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from message_strategies import conversations, message_lists, words
from reliability_figures import record, scaled

from hermes_host.cli import cli
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.messages import MessageError, check_invariants, validate_messages

pytestmark = pytest.mark.slow

EXAMPLES = {"validation": scaled(200, 10_000), "host": scaled(30, 10_000),
            "cli": scaled(20, 10_000), "config": scaled(60, 10_000),
            # issue 31's input classes (test_rel_fuzz_inputs.py); "importers" is per format
            "transcripts": scaled(60, 2_000), "importers": scaled(60, 2_000),
            "messages": scaled(60, 2_000)}
EXAMPLES_ENV = "HERMES_HOST_RELIABILITY_EXAMPLES"
"""``target=N,…`` (targets: the keys of ``EXAMPLES``) to run fewer examples than the
size says, e.g. when a loaded machine cannot finish 10,000 CLI runs; the figures show the
count actually run."""
for _item in filter(None, os.environ.get(EXAMPLES_ENV, "").split(",")):
    _target, _, _count = _item.partition("=")
    if _target.strip() not in EXAMPLES or not _count.strip().isdigit():
        raise ValueError(f"{EXAMPLES_ENV}: {_item!r} is not target=N with a target among "
                         f"{', '.join(EXAMPLES)}")
    EXAMPLES[_target.strip()] = int(_count)
CRASHES_ENV = "HERMES_HOST_RELIABILITY_CRASHES"
"""A folder: each fuzz crash is written there as JSON (input, example number, traceback)."""
SYSTEM_MID_SESSION = "a system message cannot be added mid-session"


def fuzz_settings(target: str) -> Any:
    return settings(max_examples=EXAMPLES[target], derandomize=True, deadline=None,
                    database=None, suppress_health_check=list(HealthCheck))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 400 else text[:400] + "…"


class Tally:
    """Examples, outcomes and crashes of one target."""

    def __init__(self, key: str, target: str) -> None:
        self.key = key
        self.target = target
        self.counts: Counter[str] = Counter()
        self.crashes: list[str] = []

    def crash(self, what: str, value: Any) -> None:
        """Count a crash and report it in full at once, on stderr (pytest shows it with the
        failure, ``-s`` as it happens) and, when ``HERMES_HOST_RELIABILITY_CRASHES`` names a
        folder, as a JSON file holding the exact input: the example number (the runs are
        derandomised, so the same number is the same input), the traceback of the exception
        being handled, if any, and the input itself (issue 13: 21 crashes of a full run were
        counted but never shown)."""
        self.counts["crash"] += 1
        number = self.counts["crash"]
        trace = traceback.format_exc() if sys.exc_info()[0] is not None else ""
        if len(self.crashes) < 5:
            self.crashes.append(f"{what} on {_short(value)}")
        print(f"\nFUZZ CRASH {number} in {self.key}, example {self.counts['examples']}: "
              f"{what}\ninput: {_short(value)}\n{trace}", file=sys.stderr, flush=True)
        folder = os.environ.get(CRASHES_ENV)
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            detail = {"target": self.key, "example": self.counts["examples"], "what": what,
                      "traceback": trace, "input_repr": repr(value)}
            try:
                detail["input"] = json.loads(json.dumps(value, default=repr))
            except (TypeError, ValueError, RecursionError):
                pass  # repr above keeps it
            out = Path(folder) / f"{self.key}-{number:04d}.json"
            out.write_bytes(json.dumps(detail, ensure_ascii=True).encode())

    def finish(self) -> None:
        examples = self.counts["examples"]
        record("fuzz", target=self.target, examples=examples, crashes=self.counts["crash"],
               outcomes={k: v for k, v in self.counts.items() if k != "examples"})
        assert not self.crashes, (f"{self.counts['crash']} crashes (each printed on stderr "
                                  f"with its traceback), first: {self.crashes}")
        assert examples >= EXAMPLES[self.key], self.counts


def test_fuzz_validation() -> None:
    tally = Tally("validation", "validate_messages")

    @fuzz_settings("validation")
    @given(message_lists)
    def run(messages: list[Any]) -> None:
        tally.counts["examples"] += 1
        try:
            validate_messages(messages)
        except MessageError as exc:
            tally.counts["rejected"] += 1
            if not str(exc).strip():
                tally.crash("a rejection without a message", messages)
            return
        except Exception as exc:
            tally.crash(f"{type(exc).__name__}: {exc}", messages)
            return
        tally.counts["accepted"] += 1
        try:
            check_invariants(messages)
        except Exception as exc:
            tally.crash(f"check_invariants: {type(exc).__name__}: {exc}", messages)

    run()
    tally.finish()


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextHost]:
    pytest.importorskip("hermes_compressor")
    pytest.importorskip("hermes_retrieval")
    pytest.importorskip("hermes_topic_router")
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor",
                    "hooks": {"select_context": ["topic_router", "retrieval"]}},
        "summarizer": {"provider": "offline"},
        "memory": {"providers": []},
        "model": {"context_length": 4000, "max_output_tokens": 200},
        "hooks": {"timeouts": {"select_context": 60, "compress": 60, "should_compress": 60},
                  "breaker": {"failures": 10**6}},
        "compression": {"context_timeout_seconds": 120},
    })
    path = tmp_path_factory.mktemp("fuzz-host") / "state.db"
    with ContextHost.from_config(config, store=path) as opened:
        yield opened


def test_fuzz_host_path_with_both_select_engines_and_the_compressor(host: ContextHost) -> None:
    tally = Tally("host", "host: add_message, build_request (topic_router, retrieval), compress")

    @fuzz_settings("host")
    @given(st.one_of(conversations(), message_lists))
    def run(messages: list[Any]) -> None:
        tally.counts["examples"] += 1
        system = ""
        if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system" \
                and isinstance(messages[0].get("content"), str):
            system, messages = messages[0]["content"], messages[1:]
        try:
            session = host.open_session(None, system)
        except MessageError as exc:  # e.g. a system prompt that has no UTF-8 form
            tally.counts["rejected: open_session"] += 1
            if not str(exc).strip():
                tally.crash("a rejection without a message", system)
            return
        except Exception as exc:
            tally.crash(f"open_session: {type(exc).__name__}: {exc}", system)
            return
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
            for entry in session.last_select:
                tally.counts[f"select {entry['engine']}: {entry['provenance']}"] += 1
                if entry["provenance"] == "error":
                    tally.crash(f"{entry['engine']} raised: {entry.get('error')}", messages)
            report = session.compress(force=True)
            tally.counts[f"compress: {report.status}/{report.outcome}"] += 1
            if report.outcome == "error":
                tally.crash(f"compressor raised: {report.message}", messages)
        except Exception as exc:
            tally.crash(f"{type(exc).__name__}: {exc}", messages)

    run()
    tally.finish()


def _jsonl(messages: list[Any], garbage: bool) -> bytes:
    lines = [json.dumps(m, ensure_ascii=False).encode("utf-8", "surrogatepass")
             for m in messages]
    if garbage:
        lines.insert(len(lines) // 2, b"\xff\xfe{\"role\": \"user\"")
    return b"\n".join(lines) + b"\n"


def _cli_checker(tally: Tally) -> Callable[[str, Any, Any], None]:
    def check(what: str, result: Any, value: Any) -> None:
        code = result.exit_code
        tally.counts[f"{what}: exit {code}"] += 1
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            tally.crash(f"{what}: {type(result.exception).__name__}: {result.exception}", value)
        elif code not in (0, 2):
            tally.crash(f"{what}: exit status {code}: {result.output[-300:]}", value)
        elif code == 2 and (not result.output.strip() or "Traceback" in result.output):
            tally.crash(f"{what}: a rejection without a clear error: {result.output!r}", value)

    return check


def test_fuzz_cli_replay_and_sessions_import(tmp_path: Path) -> None:
    pytest.importorskip("hermes_compressor")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "context": {"engine": "compressor",
                    "hooks": {"select_context": ["topic_router", "retrieval"]}},
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
    }), encoding="utf-8")
    store = tmp_path / "state.db"
    transcript = tmp_path / "t.jsonl"
    runner = CliRunner()
    tally = Tally("cli", "cli: replay and sessions import")
    check = _cli_checker(tally)

    @fuzz_settings("cli")
    @given(message_lists, st.integers(0, 9))
    def run(messages: list[Any], dice: int) -> None:
        tally.counts["examples"] += 1
        transcript.write_bytes(_jsonl(messages, garbage=dice == 0))
        common = ["--config", str(config), "--store", str(store)]
        check("replay", runner.invoke(cli, ["replay", str(transcript), "--json",
                                            "--context-length", "2000", *common]), messages)
        check("sessions import", runner.invoke(cli, ["sessions", "import", str(transcript),
                                                     *common]), messages)

    run()
    tally.finish()


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
                    words, st.lists(words, max_size=2))
SECTIONS = {
    "model": ["name", "context_length", "max_output_tokens", "provider", "base_url",
              "api_key_env", "timeout_seconds", "headers", "bogus"],
    "context": ["engine", "hooks", "bogus"],
    "compression": ["mode", "threshold", "cooldown_seconds", "protect_first_n",
                    "protect_last_n", "context_timeout_seconds", "bogus"],
    "summarizer": ["provider", "model", "base_url", "api_key_env", "max_retries", "bogus"],
    "hooks": ["timeouts", "breaker", "max_leaked_workers"],
    "memory": ["providers", "directory"],
    "store": ["url", "lease_ttl_seconds"],
    "engines": ["compressor", "retrieval", "topic_router", "nope"],
    "session_reset": ["mode", "idle_minutes", "daily_hour"],
}
config_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(words, inner, max_size=3)), max_leaves=6)
configs = st.one_of(
    st.fixed_dictionaries({}, optional={
        section: st.one_of(scalars, st.fixed_dictionaries({}, optional={
            key: st.one_of(config_values, st.sampled_from(
                ["compressor", "retrieval", "topic_router", "rotate", "in_place", "offline",
                 "sqlite:///x.db", "postgresql://h/db"]))
            for key in keys}))
        for section, keys in SECTIONS.items()}),
    config_values,
)


def test_fuzz_config_validate(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    runner = CliRunner()
    tally = Tally("config", "cli: config validate")
    check = _cli_checker(tally)

    @fuzz_settings("config")
    @given(configs, st.integers(0, 19))
    def run(data: Any, dice: int) -> None:
        tally.counts["examples"] += 1
        text = yaml.safe_dump(data, allow_unicode=True).encode("utf-8", "surrogatepass")
        if dice == 0:
            text = b"model: {name: \xff\xfe}\n" + text
        elif dice == 1:
            text = text + b"\n  : [unclosed\n"
        path.write_bytes(text)
        check("config validate", runner.invoke(cli, ["config", "validate", "--config",
                                                     str(path)]), data)

    run()
    tally.finish()
