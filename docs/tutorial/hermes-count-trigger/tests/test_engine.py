"""What count_trigger decides, and why."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_host import GuardState, ShouldCompressRequest

from hermes_count_trigger import CountTrigger


def _request(messages: int, **guards: float) -> ShouldCompressRequest:
    window = [{"role": "system", "content": "You are helpful."}]
    for i in range(messages):
        window.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
    return ShouldCompressRequest(
        session_id="s",
        messages=window,
        current_tokens=10 * messages,
        context_length=200_000,
        guards=GuardState(now=1000.0, **guards),
    )


def test_below_the_limit_says_no_with_a_reason() -> None:
    decision = CountTrigger({"max_messages": 10}).should_compress(request=_request(10))
    assert (decision.compress, decision.reason) == (False, "below_message_limit")


def test_above_the_limit_says_yes() -> None:
    decision = CountTrigger({"max_messages": 10}).should_compress(request=_request(11))
    assert decision.compress and decision.reason == "11 messages > 10"


def test_the_system_prompt_is_not_counted() -> None:
    engine = CountTrigger({"max_messages": 4})
    assert not engine.should_compress(request=_request(4)).compress


def test_cooldown_blocks_and_names_the_wait() -> None:
    decision = CountTrigger({"max_messages": 4}).should_compress(
        request=_request(50, cooldown_until=1041.5)
    )
    assert (decision.compress, decision.reason) == (False, "cooldown:42")


def test_ineffective_compressions_stop_the_loop() -> None:
    decision = CountTrigger({"max_messages": 4}).should_compress(
        request=_request(50, ineffective_count=2)
    )
    assert (decision.compress, decision.reason) == (False, "ineffective")


def test_force_overrides_everything() -> None:
    request = _request(2, cooldown_until=5000.0).model_copy(update={"force": True})
    assert CountTrigger({"max_messages": 4}).should_compress(request=request).compress


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_messages": 2}, "engines.count_trigger.max_messages: Input should be greater"),
        ({"max_messages": "9"}, "engines.count_trigger.max_messages: Input should be a valid"),
        ({"maxx": 9}, "engines.count_trigger.maxx: unknown option; allowed: max_messages"),
        (["max_messages"], "engines.count_trigger must be a mapping"),
    ],
)
def test_bad_options_are_clear_errors(options: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CountTrigger(options)


def test_no_options_block_means_the_defaults() -> None:
    assert CountTrigger().max_messages == CountTrigger(None).max_messages == 120
