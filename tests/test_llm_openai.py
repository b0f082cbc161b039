"""The OpenAI-compatible summariser on the REAL ``openai`` SDK against a REAL loopback server
(:class:`FakeOpenAI`): every failure class of R-10.3, its configuration (R-14.7: base_url,
api_key_env, headers, timeout, max_tokens, temperature), and that no key, header or prompt
ever reaches an error message (R-7.1)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import openai
import pytest

from hermes_host.llm import (
    FallbackSummarizer,
    MissingAPIKeyError,
    OfflineSummarizer,
    OpenAISummarizer,
    PermanentSummaryError,
    SummaryError,
    SummaryJob,
    TransientSummaryError,
    summarizer_from_settings,
)
from hermes_host.llm.openai_summarizer import NO_KEY, is_reasoning_model
from hermes_host.models import SummarizerSettings
from hermes_host.testing.fake_openai import FakeOpenAI
from hermes_host.testing.secrets_corpus import secret_corpus

KEY = "sk-proj-PLANTEDopenai0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
PROMPT_MARKER = "PROMPT-MARKER-91c2 prompt text that must never appear in an error"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _summarizer(fake: FakeOpenAI, **overrides: object) -> OpenAISummarizer:
    fields: dict[str, object] = {"provider": "openai", "model": "gpt-4o-mini",
                                 "base_url": fake.base_url}
    fields.update(overrides)
    return OpenAISummarizer(SummarizerSettings(**fields), api_key=KEY)  # type: ignore[arg-type]


def _job(**overrides: object) -> SummaryJob:
    fields: dict[str, object] = {"prompt": PROMPT_MARKER, "messages": []}
    fields.update(overrides)
    return SummaryJob(**fields)  # type: ignore[arg-type]


def test_normal_reply_and_a_well_formed_request_r14_7(fake: FakeOpenAI) -> None:
    fake.script([{"kind": "normal", "text": "## Goal\nShip it."}])
    s = _summarizer(fake, max_tokens=900, temperature=0.7,
                    headers={"HTTP-Referer": "https://example.org", "X-Title": "hermes-host"})
    assert s.summarize(_job(system="SYSTEM-RULES", max_tokens=4096)) == "## Goal\nShip it."
    assert s.name == "openai" and s.calls_llm is True
    (req,) = fake.requests
    assert req.path == "/v1/chat/completions"
    assert req.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "SYSTEM-RULES"},
                     {"role": "user", "content": PROMPT_MARKER}],
        "max_tokens": 900,  # min(job.max_tokens, settings.max_tokens)
        "temperature": 0.7,
    }
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["http-referer"] == "https://example.org"
    assert req.headers["x-title"] == "hermes-host"


def test_job_cap_below_the_settings_wins_and_micro_temperature_is_sent(fake: FakeOpenAI) -> None:
    _summarizer(fake, temperature=0.0).summarize(_job(max_tokens=321))
    body = fake.requests[0].body
    assert body["max_tokens"] == 321 and body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["user"]


@pytest.mark.parametrize("model", ["o3-mini", "o1", "gpt-5", "openai/gpt-5-mini", "o4-mini"])
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(
    fake: FakeOpenAI, model: str
) -> None:
    assert is_reasoning_model(model)
    _summarizer(fake, model=model).summarize(_job(max_tokens=500))
    body = fake.requests[0].body
    assert body["max_completion_tokens"] == 500
    assert "max_tokens" not in body and "temperature" not in body


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "llama3.1:8b", "qwen/qwen3-32b",
                                   "Qwen/Qwen2.5-7B-Instruct"])
def test_other_models_are_not_reasoning(model: str) -> None:
    assert not is_reasoning_model(model)


@pytest.mark.parametrize(
    ("kind", "cls", "status"),
    [
        ("429", TransientSummaryError, 429),
        ("500", TransientSummaryError, 500),
        ({"kind": "error", "status": 503}, TransientSummaryError, 503),
        ("401", PermanentSummaryError, 401),
        ("403", PermanentSummaryError, 403),
        ("404", PermanentSummaryError, 404),
        ("400", PermanentSummaryError, 400),
        ("quota", PermanentSummaryError, 429),  # insufficient_quota: retrying cannot help
    ],
)
def test_status_errors_are_classified_r10_3(
    fake: FakeOpenAI, kind: str, cls: type[SummaryError], status: int
) -> None:
    fake.script([kind])
    with pytest.raises(cls) as info:
        _summarizer(fake).summarize(_job())
    err = info.value
    assert err.status_code == status
    assert str(err).startswith(f"openai: HTTP {status}")
    assert KEY not in str(err) and PROMPT_MARKER not in str(err)
    assert "Incorrect API key" not in str(err)  # the server's free text is not quoted
    if kind == "quota":
        assert "quota" in str(err)


def test_timeout_is_transient_and_bounded_r10_3(fake: FakeOpenAI) -> None:
    fake.script([{"kind": "slow", "seconds": 5}])
    started = time.monotonic()
    with pytest.raises(TransientSummaryError, match=r"timed out after 0\.5s"):
        _summarizer(fake, timeout_seconds=0.5).summarize(_job())
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("malformed", "malformed response"),
        ("length", r"cut off at max_tokens=4096 \(finish_reason=length\)"),
        ("empty", "empty summary text"),
        ("disconnect", "connection failed"),
    ],
)
def test_a_reply_that_is_no_summary_is_a_transient_failure_r10_3(
    fake: FakeOpenAI, kind: str, message: str
) -> None:
    fake.script([kind])
    with pytest.raises(TransientSummaryError, match=message):
        _summarizer(fake).summarize(_job())


def test_nothing_listening_is_transient_r10_3() -> None:
    with FakeOpenAI() as server:
        url = server.base_url
    s = OpenAISummarizer(SummarizerSettings(provider="openai", base_url=url, timeout_seconds=2),
                         api_key=KEY)
    with pytest.raises(TransientSummaryError, match="connection failed"):
        s.summarize(_job())


def test_failure_then_recovery_on_the_same_instance(fake: FakeOpenAI) -> None:
    fake.script(["429", "500", "malformed"])
    s = _summarizer(fake)
    for _ in range(3):
        with pytest.raises(TransientSummaryError):
            s.summarize(_job())
    assert "## Goal" in s.summarize(_job())
    s.close()


def test_prompt_is_redacted_before_sending_and_reply_after_r7_1(fake: FakeOpenAI) -> None:
    corpus = secret_corpus()
    text, secret = corpus[3]
    fake.script([{"kind": "normal", "text": f"## Critical Context\n{text}"}])
    prompt = "\n\n".join(t for t, _ in corpus[:120])
    out = _summarizer(fake).summarize(_job(prompt=prompt))
    raw = fake.requests[0].raw_body
    assert [s for _, s in corpus[:120] if s in raw or s.replace("/", "\\/") in raw] == []
    assert secret not in out and "[REDACTED]" in out


def test_no_key_reaches_a_log_line_even_at_debug_r7_1(
    fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script(["normal", "401", "malformed", "429"])
    s = _summarizer(fake)
    with caplog.at_level(logging.DEBUG):
        s.summarize(_job())
        for _ in range(3):
            with pytest.raises(SummaryError):
                s.summarize(_job())
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Sending HTTP Request" in logged  # the SDK did log at DEBUG
    assert KEY not in logged


def test_repr_never_shows_the_key(fake: FakeOpenAI) -> None:
    s = _summarizer(fake)
    assert KEY not in repr(s) and "gpt-4o-mini" in repr(s)


def test_provider_openai_reads_the_named_key_variable_r14_7(fake: FakeOpenAI) -> None:
    settings = SummarizerSettings(provider="openai", base_url=fake.base_url,
                                  api_key_env="MY_GATEWAY_KEY", model="m")
    s = summarizer_from_settings(settings, environ={"MY_GATEWAY_KEY": KEY,
                                                    "OPENAI_API_KEY": "sk-wrong"})
    assert isinstance(s, OpenAISummarizer)
    s.summarize(_job())
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_openai_base_url_and_key_from_the_environment(fake: FakeOpenAI) -> None:
    s = summarizer_from_settings(SummarizerSettings(provider="openai", model="m"),
                                 environ=fake.env(KEY))
    s.summarize(_job())
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_missing_key_names_the_variable_or_is_not_needed_locally(fake: FakeOpenAI) -> None:
    with pytest.raises(MissingAPIKeyError, match="set MY_GATEWAY_KEY") as info:
        summarizer_from_settings(
            SummarizerSettings(provider="openai", api_key_env="MY_GATEWAY_KEY"), environ={})
    assert "OpenAI" in str(info.value)
    # a local server (Ollama, vLLM) needs no key: with a base_url a placeholder is sent
    local = summarizer_from_settings(
        SummarizerSettings(provider="openai", base_url=fake.base_url, model="llama3"),
        environ={})
    local.summarize(_job())
    assert fake.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_fallback_summarizer_reports_the_primary_failure_r5_2(fake: FakeOpenAI) -> None:
    fake.script(["401"])
    fb = FallbackSummarizer(_summarizer(fake), OfflineSummarizer())
    out = fb.summarize(_job(messages=[{"role": "user", "content": "fix the parser"}]))
    assert out.strip() and fb.used_fallback
    assert isinstance(fb.last_error, PermanentSummaryError)
    assert fb.last_error.status_code == 401


def test_the_sdk_itself_talks_to_the_fake() -> None:
    with FakeOpenAI(expected_api_key=KEY) as server:
        client = openai.OpenAI(api_key=KEY, base_url=server.base_url, max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].finish_reason == "stop"
        assert reply.usage is not None and reply.usage.prompt_tokens > 0
        server.script(["429"])
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="gpt-x", messages=[])
        assert info.value.response.headers["retry-after"] == "1"
        wrong = openai.OpenAI(api_key="sk-other", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="gpt-x", messages=[])
        assert [m.id for m in client.models.list()] == ["gpt-fake-1"]
        client.close()
        wrong.close()


def test_fake_rejects_unknown_behaviours_with_the_choices() -> None:
    with pytest.raises(ValueError, match="choose one of: 400, 401"):
        FakeOpenAI().script(["teapot"])


def test_continuation_job_sends_the_window_plus_one_instruction(fake: FakeOpenAI) -> None:
    """summarizer.continuation (issue 28): the summary request is the chat request as it was
    sent — the window, system prompt included, in order, without the host's private ``_``
    keys (R-7.5) — followed by exactly one user message, the instruction; the prompt is not
    sent, and no separate system prompt is added."""
    window: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent. Work in /repo."},
        {"role": "user", "content": "fix the failing test in tests/test_a.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "pytest tests/test_a.py"}'}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "E   AssertionError: 3 != 4",
         "_compressed_summary": False},
    ]
    instruction = "CONTEXT CHECKPOINT REQUEST — summarise every message above."
    _summarizer(fake, max_tokens=900).summarize(
        _job(prefix=window, instruction=instruction, system="UNUSED-SYSTEM"))
    (req,) = fake.requests
    on_wire = [{k: v for k, v in m.items() if not k.startswith("_")} for m in window]
    assert req.body["messages"] == [*on_wire, {"role": "user", "content": instruction}]
    assert PROMPT_MARKER not in req.raw_body and "UNUSED-SYSTEM" not in req.raw_body
    assert req.body["max_tokens"] == 900
