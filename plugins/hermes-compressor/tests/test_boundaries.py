"""Steps 2 and 3 — head protection and the token-budget tail (R-6.2, R-6.3, R-6.7)."""

from __future__ import annotations

from compressor_helpers import compress_request, conversation, tool_turn
from hermes_host.messages import check_invariants, is_summary
from hermes_host.models import CompressionSettings, Message

from hermes_compressor import Compressor
from hermes_compressor.boundaries import MIN_TAIL_MESSAGES, find_cut, head_size


def _unit(_: Message) -> int:
    return 100


def _chat(pairs: int) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": "s"}]
    for i in range(pairs):
        msgs += [{"role": "user", "content": f"u{i}"}, {"role": "assistant", "content": f"a{i}"}]
    return msgs


def test_r6_2_head_is_system_plus_n_on_first_round_only() -> None:
    """R-6.2: system + protect_first_n on the first compression; system alone afterwards."""
    msgs = _chat(10)
    assert head_size(msgs, first_round=True, protect_first_n=3) == 4
    assert head_size(msgs, first_round=False, protect_first_n=3) == 1
    assert head_size(msgs[1:], first_round=False, protect_first_n=3) == 0


def test_r6_2_head_never_ends_inside_a_tool_group() -> None:
    msgs = [{"role": "system", "content": "s"}, *tool_turn(0, "out")]
    # system + user + assistant(call) would split the call from its result
    assert head_size(msgs, first_round=True, protect_first_n=2) == 4


def test_r6_2_head_decays_after_first_compression(engine: Compressor) -> None:
    """R-6.2 / R-6.10: the first round keeps the first 3 messages verbatim; the second round
    (compression_count=1, summary present) summarises them too."""
    msgs = conversation(20, output_chars=600)
    first = engine.compress(request=compress_request(msgs, engine=engine))
    assert first.outcome == "summarised"
    assert first.messages[:4] == msgs[:4]
    grown = first.messages + conversation(20, output_chars=600)[1:]
    second = engine.compress(request=compress_request(grown, engine=engine, compression_count=1))
    assert second.outcome == "summarised"
    assert second.messages[0] == msgs[0]
    assert is_summary(second.messages[1])
    assert msgs[1] not in second.messages[1:]
    assert sum(1 for m in second.messages if is_summary(m)) == 1


def test_r6_3_tail_walks_back_by_token_budget() -> None:
    """R-6.3: the tail holds the newest messages that fit the budget (count floor 3)."""
    msgs = _chat(20)
    cut = find_cut(msgs, _unit, head_end=1, budget=1000, floor_count=3, min_tail_user_messages=0)
    assert len(msgs) - cut == 10


def test_r6_3_minimum_tail_is_three_messages() -> None:
    """R-6.7 / R-6.3: even when one message exceeds the whole budget, 3 messages stay."""
    msgs = _chat(10)
    cut = find_cut(msgs, _unit, head_end=1, budget=10, floor_count=3, min_tail_user_messages=0)
    assert len(msgs) - cut == MIN_TAIL_MESSAGES


def test_r6_3_count_floor_may_exceed_budget_up_to_1_5x() -> None:
    """protect_last_n is a floor honoured up to the 1.5× soft ceiling, never beyond."""
    msgs = _chat(30)
    # budget 1000 = 10 messages; floor 20 wants more, ceiling 1500 allows 15
    cut = find_cut(msgs, _unit, head_end=1, budget=1000, floor_count=20, min_tail_user_messages=0)
    assert len(msgs) - cut == 15
    # floor 12 is reachable within the ceiling
    cut = find_cut(msgs, _unit, head_end=1, budget=1000, floor_count=12, min_tail_user_messages=0)
    assert len(msgs) - cut == 12


def test_r6_3_cut_never_splits_a_tool_group() -> None:
    """R-6.3: a cut inside a run of tool results moves before the parent assistant."""
    msgs: list[Message] = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    msgs.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"t{i}", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
                for i in range(6)
            ],
        }
    )
    msgs += [{"role": "tool", "tool_call_id": f"t{i}", "content": "x"} for i in range(6)]
    msgs.append({"role": "assistant", "content": "done"})
    cut = find_cut(msgs, _unit, head_end=1, budget=300, floor_count=3, min_tail_user_messages=0)
    assert msgs[cut]["role"] == "assistant" and msgs[cut].get("tool_calls")


def test_r6_3_latest_user_message_pulled_into_tail_within_ceiling() -> None:
    """min_tail_user_messages: the newest user turn joins the tail when the tail then stays
    under the 1.5× ceiling; further back it is left to the summary."""
    steps = [m for i in range(3) for m in tool_turn(10 + i, "o")[1:3]]
    agentic = [*_chat(3)[:-1], *steps, {"role": "assistant", "content": "finished"}]
    assert check_invariants(agentic) == []
    cut = find_cut(agentic, _unit, head_end=1, budget=700, floor_count=3, min_tail_user_messages=1)
    users_in_tail = [m["content"] for m in agentic[cut:] if m["role"] == "user"]
    assert users_in_tail == ["u2"]
    assert agentic[cut]["role"] == "assistant"  # plus the bridge before it (role collision)
    far = find_cut(agentic, _unit, head_end=1, budget=400, floor_count=3, min_tail_user_messages=1)
    assert [m for m in agentic[far:] if m["role"] == "user"] == []


def test_r6_3_role_collision_rule_keeps_bridge_before_latest_user() -> None:
    """R-6.3: a cut exactly on the newest user message keeps the assistant bridge before it,
    so a summary pinned to ``user`` cannot collide with the first tail message."""
    msgs = _chat(10)
    # budget for exactly the last user + assistant; floor 2 → cut lands on u9
    cut = find_cut(msgs, _unit, head_end=1, budget=200, floor_count=2, min_tail_user_messages=1)
    assert msgs[cut]["role"] == "assistant" and msgs[cut]["content"] == "a8"


def test_r6_7_too_few_messages_is_a_noop_recording_ineffective(engine: Compressor) -> None:
    """R-6.7: head + ≥3 tail + ≥1 middle is needed; otherwise outcome ``noop`` (the host
    records an ineffective attempt, so anti-thrash stops the loop after two)."""
    msgs = [
        {"role": "system", "content": "x" * 40_000},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    result = engine.compress(request=compress_request(msgs, engine=engine))
    assert result.outcome == "noop"
    assert result.messages == msgs
    assert result.llm_calls == 0


def test_keep_last_turns_keeps_exactly_n_user_turns(engine: Compressor) -> None:
    """`/compress here N` (R-12.1): the last N user turns stay verbatim."""
    msgs = conversation(10, output_chars=200)
    result = engine.compress(
        request=compress_request(msgs, engine=engine, keep_last_turns=2, force=True)
    )
    assert result.outcome == "summarised"
    users = [m["content"] for m in result.messages if m["role"] == "user" and not is_summary(m)]
    assert users[-2:] == ["please do step 8", "please do step 9"]
    assert check_invariants(result.messages) == []


def test_tail_stays_within_soft_ceiling_after_compress(engine: Compressor) -> None:
    """After compress, the tail (after the summary) is within 1.5 × budget unless it is the
    minimum tail."""
    settings = CompressionSettings()
    msgs = conversation(40, output_chars=1500)
    result = engine.compress(request=compress_request(msgs, engine=engine, compression=settings))
    idx = next(i for i, m in enumerate(result.messages) if is_summary(m))
    tail = result.messages[idx + 1 :]
    from hermes_compressor.trigger import tail_budget, threshold_tokens

    budget = tail_budget(settings, threshold_tokens(settings, 16_000))
    assert sum(engine.count(m) for m in tail) <= budget * 1.5
    assert len(tail) >= MIN_TAIL_MESSAGES
