"""No secret reaches the summariser, a summary, a note or a log line (R-7.1, R-6.11).

The host's secrets corpus (≥ 200 distinct credentials in every form real transcripts leak
them) is planted into real transcripts — in user turns, tool outputs and JSON-escaped
tool-call arguments — which are then replayed to several compressions with:

* the Anthropic summariser against the loopback fake server, whose responder *echoes the
  prompt it received* back as the summary (so anything that reached it would reach the
  summary too), with one 429 to exercise the failure and logging path;
* the offline summariser.

Every request body the fake server recorded, every summary block, every note and every log
record is searched for every planted secret value.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from compressor_helpers import load_normalised, transcripts_dir
from hermes_host.messages import is_summary, text_of
from hermes_host.models import Message, SummarizerSettings
from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.testing.secrets_corpus import SecretCase, secret_cases
from replay_driver import replay, small_window

from hermes_compressor import Compressor

CASES = secret_cases()
TRANSCRIPTS = ("miniswe-deepseek-sqlfluff-1517", "taubench-airline-gpt4o-task2-trial1")


def _echo(body: Any) -> str:
    """The fake summariser's answer: the prompt it was sent, verbatim."""
    return str(body["messages"][0]["content"])


@pytest.fixture
def echo_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(responder=_echo) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-secrets-" + "s" * 40)
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield server


def plant(messages: list[Message], cases: list[SecretCase]) -> list[Message]:
    """Spread every case over the user turns, tool outputs and tool-call arguments."""
    out = [dict(m) for m in messages]
    slots = [
        i
        for i, m in enumerate(out)
        if m["role"] in ("user", "tool") or (m["role"] == "assistant" and m.get("tool_calls"))
    ]
    for n, case in enumerate(cases):
        i = slots[(n * 7) % len(slots)]
        message = out[i]
        if message["role"] == "assistant":
            calls = [dict(c) for c in message["tool_calls"]]
            fn = dict(calls[0]["function"])
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            if not isinstance(args, dict):
                args = {"value": args}
            args[f"note_{n}"] = case.text
            fn["arguments"] = json.dumps(args)
            calls[0]["function"] = fn
            message["tool_calls"] = calls
        else:
            message["content"] = f"{text_of(message)}\n{case.text}\n"
    return out


def _leaks(texts: list[str]) -> list[str]:
    joined = "\n".join(texts)
    return [f"{c.family}/{c.context}" for c in CASES if c.secret in joined]


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 200


@pytest.mark.parametrize("name", TRANSCRIPTS)
@pytest.mark.parametrize("provider", ["anthropic", "offline"])
def test_r7_1_planted_secrets_never_leave_through_the_compressor(
    name: str, provider: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    path = transcripts_dir() / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"transcript {path} not available (set HERMES_HOST_TRANSCRIPTS)")
    messages = plant(load_normalised(path), CASES)
    assert _leaks([json.dumps(messages)]) != []  # the secrets really are in the input
    if provider == "anthropic":
        fake: FakeAnthropic = request.getfixturevalue("echo_server")
        fake.script(["429"])
        summarizer = SummarizerSettings(
            provider="anthropic", base_url=fake.base_url, max_retries=0, timeout_seconds=10
        )
    else:
        summarizer = SummarizerSettings(provider="offline")
    engine = Compressor()
    caplog.set_level(logging.DEBUG)
    try:
        report = replay(
            engine,
            messages,
            context_length=small_window(engine, messages, 0.7),
            summarizer=summarizer,
        )
    finally:
        engine.close()
    assert report.problems == []
    assert len(report.compressions) >= 3
    outcomes = [r.outcome for r in report.compressions]
    summaries = [text_of(m) for r in report.compressions for m in r.messages if is_summary(m)]
    notes = [n for r in report.compressions for n in r.notes]
    logs = [record.getMessage() for record in caplog.records]
    assert _leaks(summaries) == []
    assert _leaks(notes) == []
    assert _leaks(logs) == []
    if provider == "anthropic":
        assert outcomes[0] == "fallback" and "summarised" in outcomes
        bodies = [r.raw_body for r in fake.requests]
        assert len(bodies) >= 3
        assert _leaks(bodies) == []
        assert any("[REDACTED]" in s for s in summaries)
