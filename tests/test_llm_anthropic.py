"""The Anthropic summariser on the REAL ``anthropic`` SDK against a REAL loopback server
(:class:`FakeAnthropic`): every failure class of R-10.3, configuration of R-14.7, and that
no key, header or prompt ever reaches an error message (R-7.1)."""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Iterator

import anthropic
import pytest
from llm_helpers import PLANTED_KEY

from hermes_host.llm import (
    AnthropicSummarizer,
    FallbackSummarizer,
    MissingAPIKeyError,
    OfflineSummarizer,
    PermanentSummaryError,
    SummaryError,
    SummaryJob,
    TransientSummaryError,
    summarizer_from_settings,
)
from hermes_host.models import SummarizerSettings
from hermes_host.testing.fake_anthropic import SECTION_HEADINGS, FakeAnthropic
from hermes_host.testing.secrets_corpus import secret_corpus

PROMPT_MARKER = "PROMPT-MARKER-7f3a prompt text that must never appear in an error"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _summarizer(fake: FakeAnthropic, **overrides: object) -> AnthropicSummarizer:
    settings = SummarizerSettings(
        provider="anthropic", base_url=fake.base_url, **overrides  # type: ignore[arg-type]
    )
    return AnthropicSummarizer(settings, api_key=PLANTED_KEY)


def _job(**overrides: object) -> SummaryJob:
    fields: dict[str, object] = {"prompt": PROMPT_MARKER, "messages": []}
    fields.update(overrides)
    return SummaryJob(**fields)  # type: ignore[arg-type]


def test_normal_reply_is_returned_and_request_is_well_formed_r14_7(fake: FakeAnthropic) -> None:
    fake.script([{"kind": "normal", "text": "## Goal\nShip it."}])
    s = _summarizer(fake, model="claude-test-model", max_tokens=900)
    out = s.summarize(_job(system="SYSTEM-RULES", max_tokens=4096))
    assert out == "## Goal\nShip it."
    assert s.name == "anthropic" and s.calls_llm is True
    (req,) = fake.requests
    assert req.path == "/v1/messages"
    body = req.body
    assert body["model"] == "claude-test-model"
    assert body["max_tokens"] == 900  # min(job.max_tokens, settings.max_tokens)
    assert body["messages"] == [{"role": "user", "content": PROMPT_MARKER}]
    assert body["system"] == "SYSTEM-RULES"
    assert "temperature" not in body  # the 2.x SDK and API 2026-10-21 reject sampling params
    assert PLANTED_KEY in (req.headers.get("authorization", "") + req.headers.get("x-api-key", ""))


def test_job_max_tokens_lower_than_settings_wins(fake: FakeAnthropic) -> None:
    _summarizer(fake, max_tokens=4096).summarize(_job(max_tokens=321))
    assert fake.requests[0].body["max_tokens"] == 321
    assert "system" not in fake.requests[0].body


def test_default_fake_reply_has_the_eleven_sections(fake: FakeAnthropic) -> None:
    out = _summarizer(fake).summarize(_job())
    positions = [out.index(h) for h in SECTION_HEADINGS]
    assert positions == sorted(positions)


ERROR_CASES = [
    ("429", TransientSummaryError, 429, "rate_limit_error"),
    ("500", TransientSummaryError, 500, "api_error"),
    ("529", TransientSummaryError, 529, "overloaded_error"),
    ("401", PermanentSummaryError, 401, "authentication_error"),
    ("402", PermanentSummaryError, 402, "billing_error"),
    ("403", PermanentSummaryError, 403, "permission_error"),
    ("credit", PermanentSummaryError, 400, "invalid_request_error"),
]


@pytest.mark.parametrize(("behaviour", "cls", "status", "etype"), ERROR_CASES,
                         ids=[c[0] for c in ERROR_CASES])
def test_status_errors_are_classified_r10_3(
    fake: FakeAnthropic, behaviour: str, cls: type[SummaryError], status: int, etype: str
) -> None:
    fake.script([behaviour])
    with pytest.raises(cls) as info:
        _summarizer(fake).summarize(_job())
    err = info.value
    assert err.transient is (cls is TransientSummaryError)
    assert err.status_code == status
    assert err.error_type == etype
    assert str(err).startswith(f"anthropic: HTTP {status} {etype}")
    _assert_safe(err)
    assert len(fake.requests) == 1  # max_retries=0: the host, not the SDK, decides to retry


@pytest.mark.parametrize(("status", "etype", "message", "cls"), [
    (429, "rate_limit_error", "You exceeded your current quota", PermanentSummaryError),
    (400, "invalid_request_error", "prompt is too long: 250000 tokens", PermanentSummaryError),
    (404, "not_found_error", "model: claude-nope", PermanentSummaryError),
    (503, "api_error", "upstream unavailable", TransientSummaryError),
    (408, "timeout_error", "request timeout", TransientSummaryError),
], ids=["429-quota", "400-too-long", "404-model", "503", "408"])
def test_other_statuses_and_quota_bodies_r10_3(
    fake: FakeAnthropic, status: int, etype: str, message: str, cls: type[SummaryError]
) -> None:
    """A body that says quota/credit/billing is exhausted is permanent whatever the status."""
    fake.script([{"kind": "error", "status": status, "type": etype, "message": message}])
    with pytest.raises(SummaryError) as info:
        _summarizer(fake).summarize(_job())
    assert type(info.value) is cls
    assert message not in str(info.value)
    _assert_safe(info.value)


def test_credit_exhaustion_says_so_without_quoting_the_server(fake: FakeAnthropic) -> None:
    fake.script(["credit"])
    with pytest.raises(PermanentSummaryError, match="credit, billing or quota exhausted"):
        _summarizer(fake).summarize(_job())


def test_timeout_is_transient_and_bounded_r10_3(fake: FakeAnthropic) -> None:
    fake.script([{"kind": "slow", "seconds": 5}])
    started = time.monotonic()
    with pytest.raises(TransientSummaryError, match="timed out") as info:
        _summarizer(fake, timeout_seconds=0.5).summarize(_job())
    assert time.monotonic() - started < 3
    _assert_safe(info.value)


def test_slow_but_within_timeout_succeeds(fake: FakeAnthropic) -> None:
    fake.script([{"kind": "slow", "seconds": 0.3, "text": "late but fine"}])
    assert _summarizer(fake, timeout_seconds=5).summarize(_job()) == "late but fine"


def test_connection_drop_is_transient_r10_3(fake: FakeAnthropic) -> None:
    fake.script(["disconnect"])
    with pytest.raises(TransientSummaryError, match="connection") as info:
        _summarizer(fake).summarize(_job())
    _assert_safe(info.value)


def test_nothing_listening_is_transient_r10_3() -> None:
    server = FakeAnthropic().start()
    url = server.base_url
    server.stop()
    s = AnthropicSummarizer(SummarizerSettings(base_url=url, timeout_seconds=2),
                            api_key=PLANTED_KEY)
    with pytest.raises(TransientSummaryError) as info:
        s.summarize(_job())
    _assert_safe(info.value)


def test_malformed_json_is_transient_r10_3(fake: FakeAnthropic) -> None:
    fake.script(["malformed"])
    with pytest.raises(TransientSummaryError, match="malformed response") as info:
        _summarizer(fake).summarize(_job())
    _assert_safe(info.value)


def test_empty_text_is_transient_r10_3(fake: FakeAnthropic) -> None:
    """A blank summary would replace the middle with nothing: transient, so the compressor
    keeps the original messages and a later attempt can succeed."""
    fake.script(["empty", {"kind": "normal", "text": "   \n "}])
    s = _summarizer(fake)
    for _ in range(2):
        with pytest.raises(TransientSummaryError, match="empty summary"):
            s.summarize(_job())


def test_failure_then_recovery_on_the_same_instance(fake: FakeAnthropic) -> None:
    fake.script(["529", {"kind": "normal", "text": "recovered"}])
    s = _summarizer(fake)
    with pytest.raises(TransientSummaryError):
        s.summarize(_job())
    assert s.summarize(_job()) == "recovered"


def test_prompt_is_redacted_before_sending_r7_1(fake: FakeAnthropic) -> None:
    corpus = secret_corpus()[:120]
    prompt = "\n\n".join(text for text, _ in corpus)
    system = "\n".join(text for text, _ in secret_corpus()[120:160])
    _summarizer(fake).summarize(_job(prompt=prompt, system=system))
    raw = fake.requests[0].raw_body
    leaked = [s for _, s in secret_corpus()[:160] if s in raw or s.replace("/", "\\/") in raw]
    assert leaked == []
    assert "[REDACTED]" in raw


def test_no_secret_reaches_a_log_line_even_at_debug_r7_1(
    fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK logs request options (the prompt) at DEBUG: they are already redacted, and
    neither the key nor a header value is logged, on success or on failure."""
    prompt = "\n".join(text for text, _ in secret_corpus()[:80])
    fake.script(["normal", "401", "malformed"])
    s = _summarizer(fake)
    with caplog.at_level(logging.DEBUG):
        s.summarize(_job(prompt=prompt))
        for _ in range(2):
            with pytest.raises(SummaryError):
                s.summarize(_job(prompt=prompt))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Request options" in logged  # the SDK did log the request at DEBUG
    assert PLANTED_KEY not in logged
    assert [sec for _, sec in secret_corpus()[:80] if sec in logged] == []


def test_reply_is_redacted_r7_1(fake: FakeAnthropic) -> None:
    text, secret = secret_corpus()[3]
    fake.script([{"kind": "normal", "text": f"## Critical Context\n{text}"}])
    out = _summarizer(fake).summarize(_job())
    assert secret not in out and "[REDACTED]" in out


def test_base_url_from_environment_r14_7(fake: FakeAnthropic,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)
    s = summarizer_from_settings(SummarizerSettings(provider="auto"))
    assert isinstance(s, AnthropicSummarizer)
    fake.script([{"kind": "normal", "text": "via env"}])
    assert s.summarize(_job()) == "via env"
    assert len(fake.requests) == 1


def test_config_base_url_beats_environment_r14_7(fake: FakeAnthropic,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # discard port: would fail
    s = AnthropicSummarizer(SummarizerSettings(base_url=fake.base_url), api_key=PLANTED_KEY)
    assert s.summarize(_job())
    assert len(fake.requests) == 1


def test_provider_selection_r14_7(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(summarizer_from_settings(SummarizerSettings(provider="auto"), environ={}),
                      OfflineSummarizer)
    auto = summarizer_from_settings(SummarizerSettings(provider="auto"),
                                    environ={"ANTHROPIC_API_KEY": PLANTED_KEY})
    assert isinstance(auto, AnthropicSummarizer)
    offline = summarizer_from_settings(SummarizerSettings(provider="offline"),
                                       environ={"ANTHROPIC_API_KEY": PLANTED_KEY})
    assert isinstance(offline, OfflineSummarizer) and offline.calls_llm is False
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY") as info:
        summarizer_from_settings(SummarizerSettings(provider="anthropic"), environ={})
    assert isinstance(info.value, PermanentSummaryError)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError):
        AnthropicSummarizer(SummarizerSettings())


def test_repr_never_shows_the_key() -> None:
    s = AnthropicSummarizer(SummarizerSettings(base_url="http://127.0.0.1:1"),
                            api_key=PLANTED_KEY)
    assert PLANTED_KEY not in repr(s) and PLANTED_KEY not in str(vars(s).get("settings"))


def test_fallback_summarizer_reports_the_primary_failure_r5_2(fake: FakeAnthropic) -> None:
    fake.script(["429"])
    fb = FallbackSummarizer(_summarizer(fake))
    msgs = [{"role": "user", "content": "fix the parser"},
            {"role": "assistant", "content": "On it."}]
    out = fb.summarize(_job(messages=msgs))
    assert fb.used_fallback is True
    assert isinstance(fb.last_error, TransientSummaryError)
    assert out.startswith("## Historical Task Snapshot\nfix the parser")
    fake.script([{"kind": "normal", "text": "primary ok"}])
    assert fb.summarize(_job()) == "primary ok"
    assert fb.used_fallback is False and fb.last_error is None
    assert fb.name == "anthropic+offline" and fb.calls_llm is True


def test_fake_can_be_restarted_and_slow_still_sleeps() -> None:
    server = FakeAnthropic().start()
    server.stop()
    server.start()
    try:
        server.script([{"kind": "slow", "seconds": 0.4, "text": "slept"}])
        s = AnthropicSummarizer(SummarizerSettings(base_url=server.base_url),
                                api_key=PLANTED_KEY)
        started = time.monotonic()
        assert s.summarize(_job()) == "slept"
        assert time.monotonic() - started >= 0.35
    finally:
        server.stop()


def test_fake_rejects_unknown_behaviours_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"choose one of: .*529"):
        FakeAnthropic().script(["418"])


def test_fake_checks_the_expected_key() -> None:
    with FakeAnthropic(expected_api_key="right-key") as server:
        s = AnthropicSummarizer(SummarizerSettings(base_url=server.base_url), api_key="wrong")
        with pytest.raises(PermanentSummaryError, match="401"):
            s.summarize(_job())
        good = AnthropicSummarizer(SummarizerSettings(base_url=server.base_url),
                                   api_key="right-key")
        assert good.summarize(_job())


def test_sdk_itself_talks_to_the_fake() -> None:
    """The fake is good enough for the raw SDK (other engines reuse it for chat)."""
    with FakeAnthropic() as server:
        server.script([{"kind": "normal", "text": "hello"}, "529"])
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        msg = client.messages.create(model="m", max_tokens=10,
                                     messages=[{"role": "user", "content": "hi"}])
        assert msg.content[0].text == "hello"  # type: ignore[union-attr]
        assert msg.usage.output_tokens >= 1
        with pytest.raises(anthropic.OverloadedError):
            client.messages.create(model="m", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])


def _assert_safe(err: BaseException) -> None:
    """R-7.1: an error message carries status and type only."""
    text = f"{err!s} {err!r}"
    assert PLANTED_KEY not in text
    assert PROMPT_MARKER not in text
    assert "Bearer" not in text and "x-api-key" not in text.lower()
    assert "Your credit balance" not in text  # the server's free text is not echoed
    assert err.__cause__ is None and err.__suppress_context__ is True


@pytest.mark.parametrize("module", ["hermes_host.llm", "hermes_host.redact",
                                    "hermes_host.llm.offline",
                                    "hermes_host.llm.anthropic_summarizer",
                                    "hermes_host.testing.fake_anthropic",
                                    "hermes_host.testing.secrets_corpus"])
def test_public_names_are_unique_and_importable(module: str) -> None:
    """(Their order is checked by ruff's RUF022.)"""
    mod = importlib.import_module(module)
    assert len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


CHAT_WINDOW = [
    {"role": "system", "content": "You are a coding agent. Work in /repo."},
    {"role": "user", "content": "fix the failing test in tests/test_a.py"},
    {"role": "assistant", "content": "Running it.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "bash", "arguments": '{"command": "pytest tests/test_a.py"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "E   AssertionError: 3 != 4"},
]
INSTRUCTION = "CONTEXT CHECKPOINT REQUEST — summarise every message above except the last 1."


def test_continuation_job_sends_the_chat_request_plus_one_instruction(
    fake: FakeAnthropic
) -> None:
    """summarizer.continuation (issue 28): the summary request repeats the chat model's own
    request — the same system text and messages, converted as the chat converts them — and
    adds the instruction as the only new content, so a caching provider can read the prefix
    from its cache; the prompt is not sent."""
    from hermes_host.chat.anthropic_model import AnthropicChatModel

    chat = AnthropicChatModel("claude-test-model", PLANTED_KEY, base_url=fake.base_url,
                              max_retries=0)
    try:
        chat.respond(CHAT_WINDOW, max_tokens=500)
    finally:
        chat.close()
    window = [dict(m) for m in CHAT_WINDOW]
    window[1]["_private_note"] = "never on the wire"  # stripped, as the chat strips it
    _summarizer(fake, model="claude-test-model").summarize(
        _job(prefix=window, instruction=INSTRUCTION, system="UNUSED-SYSTEM"))
    sent_by_chat, sent_by_summariser = (r.body for r in fake.requests)
    assert sent_by_summariser["system"] == sent_by_chat["system"] == CHAT_WINDOW[0]["content"]
    chat_messages, messages = sent_by_chat["messages"], sent_by_summariser["messages"]
    # the window ends with a tool result (a user turn): the instruction is its one new block
    assert messages[:-1] == chat_messages[:-1]
    assert messages[-1] == {
        "role": "user",
        "content": [*chat_messages[-1]["content"], {"type": "text", "text": INSTRUCTION}],
    }
    assert PROMPT_MARKER not in fake.requests[-1].raw_body
    assert "never on the wire" not in fake.requests[-1].raw_body


def test_a_job_without_an_instruction_sends_the_prompt(fake: FakeAnthropic) -> None:
    """A prefix alone is not a continuation: the normal prompt goes out."""
    _summarizer(fake).summarize(_job(prefix=CHAT_WINDOW))
    assert fake.requests[0].body["messages"] == [{"role": "user", "content": PROMPT_MARKER}]
