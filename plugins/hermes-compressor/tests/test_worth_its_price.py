"""Issue 28: compressions worth their price — the tail and summary sized against the same
(output-reserved) threshold the trigger uses, down to ``compression.target_percent`` of it;
no summariser call for a proposal that frees too little (also when forced: it says why
instead); a summary never larger than what it replaces; the summary requests an LLM
summariser makes (or would make) reported with their tokens; R-6.2's first message kept on
a short chat; a futility guard when the system prompt alone meets the trigger."""

from __future__ import annotations

import pytest
from compressor_helpers import (
    RecordingSummarizer,
    compress_request,
    conversation,
    should_request,
)
from hermes_host.messages import text_of
from hermes_host.models import CompressionSettings, Message

from hermes_compressor import Compressor
from hermes_compressor.boundaries import own_role_cut as _own_role_cut
from hermes_compressor.summary import choose_role
from hermes_compressor.trigger import threshold_tokens

CONTEXT, RESERVED = 16_000, 8_192


def _engine() -> tuple[Compressor, RecordingSummarizer]:
    llm = RecordingSummarizer()
    return Compressor(summarizer=llm, fallback=RecordingSummarizer(calls_llm=False)), llm


@pytest.mark.parametrize("target", [0.5, 0.8])
def test_a_compression_leaves_the_window_near_its_target_share_of_the_trigger(
    target: float,
) -> None:
    """The tail and the summary budget come from the trigger after the output
    reservation (6,800 at 16K), not the unreserved one (12,000): the proposal leaves the
    window at about ``target_percent`` of it — the summary written at its budget."""
    engine, llm = _engine()
    window = conversation(40, output_chars=1500)
    settings = CompressionSettings(target_percent=target)
    request = compress_request(window, engine=engine, context_length=CONTEXT,
                               max_output_tokens=RESERVED, compression=settings)
    result = engine.compress(request=request)
    assert result is not None and result.outcome == "summarised", result.notes
    trigger = threshold_tokens(settings, CONTEXT, "", RESERVED)
    assert trigger == 6_800
    after = sum(engine.count(m) for m in result.messages)
    budget = llm.jobs[0].budget_tokens
    # the summary is the one part the engine does not write itself: allow its target
    assert after <= trigger * target + 300, (after, budget)
    assert result.summary_requests == 1 and result.summary_input_tokens > 0
    assert 0 < result.summary_output_tokens


def test_a_proposal_that_frees_too_little_spends_no_call_and_says_why() -> None:
    """Most of the window in the protected tail: the estimate (head + summary target +
    tail) frees under ``min_saving_percent`` — a no-op before any summariser call."""
    engine, llm = _engine()
    window = conversation(6, output_chars=60)
    window.append({"role": "user", "content": "Please review this log:\n" + "ERR x\n" * 8000})
    request = compress_request(window, engine=engine, context_length=64_000)
    result = engine.compress(request=request)
    assert result is not None and result.outcome == "noop"
    assert llm.jobs == [] and result.llm_calls == 0 and result.summary_requests == 0
    note = result.notes[-1]
    assert note.startswith("not worth a summariser call: the proposal would free")
    assert "compression.min_saving_percent is 10%" in note


def test_a_forced_compress_on_a_short_session_says_why_without_a_call() -> None:
    """Issue 28 (from Hermes Agent's tests): a forced ``/compress`` on a short session
    spent an LLM call and then refused the result.  Now it either commits or says why
    before calling."""
    engine, llm = _engine()
    window: list[Message] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "what is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "thanks"},
    ]
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None and result.outcome == "noop"
    assert llm.jobs == []
    assert result.notes and result.notes[-1]


def test_r_6_2_a_short_chat_keeps_its_protected_first_message() -> None:
    """Issue 28: the first compression of a short chat moved its protected first message
    into the summary.  The head shrinks only for a protected message too large to keep."""
    engine, llm = _engine()
    window: list[Message] = [{"role": "system", "content": "You are terse."}]
    for i in range(3):
        window += [{"role": "user", "content": f"question {i}: " + "why " * 300},
                   {"role": "assistant", "content": f"answer {i}: " + "because " * 300}]
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None
    # head (system + 3) and tail (3) leave no middle: a no-op that says so, no call — the
    # head used to shrink to the system prompt, summarising the first question
    assert result.outcome == "noop" and llm.jobs == []
    assert result.notes[-1].startswith("too few messages to compress")
    assert result.messages[1] == window[1]


def test_a_summary_is_never_larger_than_what_it_replaces() -> None:
    """Even when the summariser writes more than asked, what lands in the window is no
    larger than the middle it replaces, and the LLM is not allowed to emit more."""
    verbose = RecordingSummarizer(text=lambda job: "## Goal\n" + "word " * 5000)
    engine = Compressor(summarizer=verbose, fallback=RecordingSummarizer(calls_llm=False))
    window = conversation(12, output_chars=300)
    result = engine.compress(request=compress_request(window, engine=engine, force=True))
    assert result is not None and result.outcome == "summarised", result.notes
    job = verbose.jobs[0]
    replaced = sum(engine.count(m) for m in job.messages)
    assert job.max_tokens <= max(job.budget_tokens, replaced)
    assert result.summary_output_tokens <= replaced
    assert any(n.startswith("summary clipped to the") for n in result.notes)


def test_the_futility_guard_says_no_when_the_system_prompt_alone_meets_the_trigger() -> None:
    """Issue 28: Hermes stops trying by the third attempt; the compressor does not start
    when the fixed part of the prompt alone is at or over the trigger."""
    engine = Compressor()
    huge_system: Message = {"role": "system", "content": "rule " * 9000}
    messages = [huge_system, {"role": "user", "content": "hi"}]
    tokens = sum(engine.count(m) for m in messages)
    request = should_request(tokens, context_length=CONTEXT, max_output_tokens=RESERVED)
    decision = engine.should_compress(request=request.model_copy(update={"messages": messages}))
    assert decision is not None and decision.compress is False
    assert decision.reason is not None and decision.reason.startswith("futile: the system prompt")
    forced = engine.should_compress(
        request=request.model_copy(update={"messages": messages, "force": True})
    )
    assert forced is not None and forced.compress is True


def test_the_latest_request_survives_a_compression_at_the_new_target() -> None:
    """Smaller windows after a compression must not cost the newest request (R-6.3)."""
    engine, _ = _engine()
    window = conversation(30, output_chars=1500)
    window.append({"role": "user", "content": "NEWEST: now refactor parser.py please"})
    result = engine.compress(request=compress_request(
        window, engine=engine, context_length=CONTEXT, max_output_tokens=RESERVED,
    ))
    assert result is not None and result.outcome == "summarised"
    assert any("NEWEST: now refactor parser.py" in text_of(m) for m in result.messages)


def test_the_summary_gets_a_role_of_its_own_instead_of_merging() -> None:
    """A cut whose first tail message would force the summary to merge into it (the head
    ends with a user message, the tail starts with an assistant one) moves back over one
    exchange — or forward, keeping three tail messages.  A merged summary came back out of
    the message on the next round as a copy of it, which the store then held twice (issue
    28, found on Hermes Agent and LangChain: their suites check every message is stored
    once)."""
    def m(role: str, i: int) -> Message:
        return {"role": role, "content": f"{role} {i}"}

    window = [{"role": "system", "content": "sys"}, m("user", 0), m("assistant", 0),
              m("user", 1), m("assistant", 1), m("user", 2), m("assistant", 2),
              m("user", 3), m("assistant", 3), m("user", 4)]
    assert choose_role("user", "assistant")[1] is True  # the collision this avoids
    assert _own_role_cut(window, 4, 6) == 5  # back: the tail starts with user 2
    assert _own_role_cut(window, 4, 5) == 5  # no collision: unchanged
    # nothing to step back over (the middle would be empty): forward, three stay
    assert _own_role_cut(window, 4, 4) == 5
    # forward would leave fewer than three: the cut stays (the summary merges)
    assert _own_role_cut(window[:8], 6, 6) == 6
