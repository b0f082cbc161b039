"""The redaction memo and the read-only variant (issue 15): the same results as plain
redaction, each text redacted once per block, nothing kept after it."""

from __future__ import annotations

import json

import hermes_host.redact as redact_module
from hermes_host.redact import (
    REDACTED,
    redact,
    redact_messages,
    redacted_for_reading,
    redaction_memo,
)

SECRET = 'export DB_PASSWORD="hunter2-correct-horse-battery"'


def _messages() -> list[dict[str, object]]:
    return [
        {"role": "user", "content": "fix module_3.py please"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": SECRET})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": SECRET},
    ]


def test_memo_gives_the_plain_results_and_redacts_each_text_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """R-7.1 unchanged by the memo; issue 15: a second pass over the same texts is free."""
    plain = redact_messages(_messages())
    assert REDACTED in str(plain[2]["content"]) and REDACTED in str(plain[1]["tool_calls"])
    calls: list[str] = []
    real = redact_module.redact_counted
    monkeypatch.setattr(redact_module, "redact_counted",
                        lambda text: calls.append(text) or real(text))
    with redaction_memo():
        first = redact_messages(_messages())
        after_first = len(calls)
        second = redact_messages(_messages())
        assert len(calls) == after_first  # every text came from the memo
        assert redact(SECRET) == plain[2]["content"]
    assert first == plain and second == plain
    assert redact_module._memo.get() is None  # freed with the block
    redact(SECRET)
    assert len(calls) == after_first + 1  # outside a block nothing is remembered


def test_read_only_variant_copies_only_what_it_changes() -> None:
    """A clean message comes back as the same object; one with a secret as a redacted copy,
    equal to what redact_messages gives; the input is never changed."""
    messages = _messages()
    out = redacted_for_reading(messages)
    assert out[0] is messages[0]
    assert out[1] is not messages[1] and out[2] is not messages[2]
    assert out == redact_messages(messages)
    assert messages[2]["content"] == SECRET


def test_reading_again_within_a_block_looks_each_message_up_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 15: the compressor reads its middle, then the offline summariser reads that
    result; within one block the second read redacts nothing and returns the same objects."""
    calls: list[str] = []
    real = redact_module.redact_counted
    monkeypatch.setattr(redact_module, "redact_counted",
                        lambda text: calls.append(text) or real(text))
    messages = _messages()
    with redaction_memo():
        first = redacted_for_reading(messages)
        after_first = len(calls)
        again = redacted_for_reading(messages)
        of_result = redacted_for_reading(first)
    assert len(calls) == after_first
    assert all(a is b for a, b in zip(again, first, strict=True))
    assert all(a is b for a, b in zip(of_result, first, strict=True))
    assert first == redact_messages(messages)
    assert messages[2]["content"] == SECRET
    # outside a block every read redacts again
    redacted_for_reading(messages)
    assert len(calls) > after_first
