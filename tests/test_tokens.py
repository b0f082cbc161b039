"""Token counting: exact tiktoken counts, the documented fallback, the cache and the running
total (R-4.1 needs a host-counted ``current_tokens`` every turn)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from hermes_host import tokens
from hermes_host.tokens import (
    ENCODING_NAME,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    RunningTotal,
    TokenCounter,
    count_message,
    count_messages,
    count_text,
    encoding_info,
)

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "transcripts"
)

ENC = tiktoken.get_encoding(ENCODING_NAME)
TEXTS = [
    "hello world",
    "def f(x):\n    return x ** 2  # squares\n",
    "Grüße aus Köln — 東京でラーメンを食べた 🍜",
    "<|endoftext|> is plain text here, not a special token",
    " " * 17 + "\t\n\n",
]


def exact(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def transcript(name: str = "claudecode-spotter-ae4a77f8.jsonl") -> list[dict[str, Any]]:
    path = TRANSCRIPTS / name
    if not path.is_file():
        pytest.skip(
            f"transcript {name} not found under {TRANSCRIPTS} (set HERMES_HOST_TRANSCRIPTS)"
        )
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture
def estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend tiktoken (or its offline encoding) is unavailable."""
    monkeypatch.setattr(tokens, "_encoder", lambda: None)


# --- exact counting -------------------------------------------------------------------------


@pytest.mark.parametrize("text", TEXTS)
def test_r4_1_count_text_is_exact_against_tiktoken(text: str) -> None:
    assert count_text(text) == exact(text)


def test_r4_1_long_texts_are_counted_once_and_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 15: a long text's count is kept by digest, so meeting it again costs no encode;
    the cached count is the exact one, a different text is not served another's count, and
    the estimator (no encoder) never reads the encoder's entries."""
    body = "output of Bash #3\n" * 40 + "Grüße 東京 🍜\n" * 10
    other = body.replace("#3", "#4")
    assert count_text(body) == exact(body)
    encoder = tokens._encoder()
    assert encoder is not None
    calls: list[str] = []

    class Counting:
        def encode_ordinary(self, text: str) -> list[int]:
            calls.append(text)
            return encoder.encode_ordinary(text)

    counting = Counting()
    monkeypatch.setattr(tokens, "_encoder", lambda: counting)
    assert count_text(body) == exact(body) and count_text(body) == exact(body)
    assert count_text(other) == exact(other) and count_text(other) == exact(other)
    assert calls == [body, other]  # a fresh encoder id: each text encoded once, then cached
    monkeypatch.setattr(tokens, "_encoder", lambda: None)
    assert count_text(body) == math.ceil(len(body.encode("utf-8")) / 4)


def test_r4_1_empty_text_is_zero() -> None:
    assert count_text("") == 0


def test_r4_1_count_message_adds_overhead_content_and_tool_calls() -> None:
    message = {
        "role": "assistant",
        "content": "running the tests",
        "tool_calls": [
            {"id": "c1", "function": {"name": "terminal", "arguments": '{"cmd": "pytest -q"}'}}
        ],
    }
    expected = MESSAGE_OVERHEAD + exact("running the tests") + exact("terminal")
    expected += exact('{"cmd": "pytest -q"}')
    assert count_message(message) == expected
    tool = {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "3 passed"}
    assert count_message(tool) == MESSAGE_OVERHEAD + exact("3 passed") + exact("terminal")


def test_r2_2_image_parts_cost_a_flat_price_whatever_their_bytes() -> None:
    small = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    large = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400_000}}
    for image in (small, large):
        msg = {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}
        assert count_message(msg) == MESSAGE_OVERHEAD + exact("what is this?") + IMAGE_TOKENS


def test_r7_5_metadata_keys_are_not_counted() -> None:
    plain = {"role": "user", "content": "summary body"}
    tagged = {**plain, "_compressed_summary": True, "_note": "x" * 5000}
    assert count_message(tagged) == count_message(plain)


def test_r4_1_real_transcript_counts_match_tiktoken_message_by_message() -> None:
    messages = transcript()
    for message in messages[:200]:
        content = message.get("content") or ""
        calls = message.get("tool_calls") or []
        expected = MESSAGE_OVERHEAD + exact(content)
        for c in calls:
            expected += exact(c["function"]["name"]) + exact(c["function"]["arguments"])
        if message.get("role") == "tool" and message.get("name"):
            expected += exact(message["name"])
        assert count_message(message) == expected
    assert count_messages(messages) == sum(count_message(m) for m in messages)


def test_encoding_info_reports_the_exact_encoder() -> None:
    assert encoding_info() == {"encoding": ENCODING_NAME, "exact": True, "method": "tiktoken"}


# --- fallback estimator ---------------------------------------------------------------------


@pytest.mark.usefixtures("estimator")
def test_fallback_estimator_is_ceil_utf8_bytes_over_four() -> None:
    for text in TEXTS:
        assert count_text(text) == math.ceil(len(text.encode("utf-8")) / 4)
    assert count_text("abcd" * 10) == 10
    assert count_text("é") == 1  # 2 bytes -> ceil(0.5)
    assert count_text("") == 0
    assert encoding_info()["exact"] is False and encoding_info()["encoding"] is None


@pytest.mark.usefixtures("estimator")
def test_fallback_estimator_survives_lone_surrogates() -> None:
    assert count_text("a\ud83db") == math.ceil(len("a\ud83db".encode("utf-8", "surrogatepass")) / 4)


@pytest.mark.usefixtures("estimator")
def test_fallback_estimator_counts_messages() -> None:
    msg = {"role": "user", "content": "x" * 40}
    assert count_message(msg) == MESSAGE_OVERHEAD + 10


def test_fallback_is_used_when_the_encoding_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real loader, with tiktoken pointed at an encoding that does not exist."""
    monkeypatch.setattr(tokens, "ENCODING_NAME", "no_such_encoding_offline")
    tokens._encoder.cache_clear()
    try:
        assert tokens._encoder() is None
        assert count_text("abcdefgh") == 2
    finally:
        monkeypatch.undo()
        tokens._encoder.cache_clear()
    assert count_text("hello world") == exact("hello world")


# --- cache ------------------------------------------------------------------------------------


def test_r4_1_counter_caches_by_wire_form() -> None:
    counter = TokenCounter()
    msg = {"role": "user", "content": "cache me please"}
    first = counter.count(msg)
    assert (counter.hits, counter.misses) == (0, 1)
    assert counter.count(dict(msg)) == first  # equal content, different object
    assert counter.count({**msg, "_meta": 1}) == first  # metadata is not part of the key
    assert (counter.hits, counter.misses) == (2, 1)
    counter.count({"role": "user", "content": "cache me please!"})
    assert counter.misses == 2


def test_counter_cache_is_bounded_lru() -> None:
    counter = TokenCounter(max_entries=2)
    a, b, c = ({"role": "user", "content": t} for t in ("a", "b", "c"))
    counter.count(a)
    counter.count(b)
    counter.count(a)  # a is now the most recent
    counter.count(c)  # evicts b
    counter.count(a)
    assert counter.hits == 2
    counter.count(b)
    assert counter.misses == 4


# --- running total ----------------------------------------------------------------------------


def test_r4_1_running_total_equals_a_full_recount() -> None:
    messages = transcript("taubench-airline-gpt4o-task2-trial1.jsonl")
    running = RunningTotal(counter=TokenCounter())
    for message in messages:
        running.append(message)
    assert running.total == count_messages(messages) and len(running) == len(messages)
    assert running.count_at(-1) == count_message(messages[-1])


def test_r4_1_running_total_append_touches_only_the_new_message() -> None:
    counter = TokenCounter()
    running = RunningTotal(
        [{"role": "user", "content": f"m{i}"} for i in range(500)], counter=counter
    )
    hits, misses = counter.hits, counter.misses
    added = running.append({"role": "assistant", "content": "a brand new reply"})
    assert (counter.hits - hits, counter.misses - misses) == (0, 1)
    assert added == MESSAGE_OVERHEAD + exact("a brand new reply")


def test_r4_1_running_total_truncate_and_reset() -> None:
    msgs = [{"role": "user", "content": "one two"}, {"role": "assistant", "content": "three"}]
    running = RunningTotal(msgs)
    running.extend([{"role": "user", "content": "four five six"}])
    running.truncate(2)
    assert running.total == count_messages(msgs) and len(running) == 2
    assert running.reset(msgs[:1]) == count_message(msgs[0]) == running.total
    with pytest.raises(ValueError, match="length must be >= 0"):
        running.truncate(-1)
