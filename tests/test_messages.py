"""Message lists: structure, window invariants, wire sanitiser, repairs (R-1.4, R-6.6, R-6.9,
R-7.4, R-7.5)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hermes_host.messages import (
    DANGLING_RESULT,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_METADATA_KEY,
    SUMMARY_PREFIX,
    MessageError,
    check_invariants,
    is_summary,
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
    segments_of,
    text_of,
    validate_messages,
)

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "transcripts"
)


def call(call_id: str, name: str = "terminal", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*ids: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [call(i) for i in ids]}


def result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str = "hello") -> dict[str, Any]:
    return {"role": "assistant", "content": text}


SYSTEM = {"role": "system", "content": "sys"}


def load(name: str) -> list[dict[str, Any]]:
    path = TRANSCRIPTS / name
    if not path.is_file():
        pytest.skip(
            f"transcript {name} not found under {TRANSCRIPTS} (set HERMES_HOST_TRANSCRIPTS)"
        )
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# --- validate_messages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "index", "reason"),
    [
        ([user(), "not a dict"], 1, "expected an object, got str"),
        ([user(), {"role": "robot"}], 1, "unknown role 'robot'"),
        ([{"role": ["user"]}], 0, "unknown role ['user']"),  # unhashable: no TypeError
        ([{"role": "user", "content": 3}], 0, "content must be a string, a list of parts"),
        ([{"role": "user", "content": ["x"]}], 0, "content part 0 must be an object"),
        ([{"role": "user", "content": [{"text": "x"}]}], 0, "content part 0 must be an object"),
        ([user(), {"role": "user", "tool_calls": []}], 1, "only assistant messages may carry"),
        ([{"role": "assistant", "tool_calls": {}}], 0, "tool_calls must be a list"),
        ([{"role": "assistant", "tool_calls": [{"id": ""}]}], 0, "tool_calls[0] needs a non-empty"),
        (
            [{"role": "assistant", "tool_calls": [call("a"), {"id": "b", "function": {}}]}],
            0,
            "tool_calls[1].function needs a string 'name'",
        ),
        (
            [{"role": "assistant", "tool_calls": [call("a", arguments={"x": 1})]}],  # type: ignore[arg-type]
            0,
            "tool_calls[0].function.arguments must be a string",
        ),
        (
            [user(), assistant(), {"role": "tool", "content": "x"}],
            2,
            "needs a string 'tool_call_id'",
        ),
    ],
)
def test_validate_messages_names_the_index_and_the_reason(
    messages: list[Any], index: int, reason: str
) -> None:
    with pytest.raises(MessageError) as caught:
        validate_messages(messages)
    assert caught.value.index == index
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"message {index}: ")


def test_validate_messages_rejects_a_non_list_without_an_index() -> None:
    with pytest.raises(MessageError, match="expected a list of messages, got dict") as caught:
        validate_messages({"role": "user"})
    assert caught.value.index is None


def test_validate_messages_accepts_a_full_valid_window() -> None:
    validate_messages(
        [
            SYSTEM,
            {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image_url", "image_url": {"url": "x.png"}}]},
            asks("c1"),
            result("c1"),
            assistant(),
        ]
    )


# --- check_invariants -----------------------------------------------------------------------


def rules(messages: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(v.rule, v.index) for v in check_invariants(messages)]


def test_r1_4_valid_window_has_no_violations() -> None:
    assert (
        check_invariants(
            [SYSTEM, user(), asks("a", "b"), result("a"), result("b"), assistant(), user()]
        )
        == []
    )


def test_r1_4_two_consecutive_users_or_assistants_break_alternation() -> None:
    assert rules([SYSTEM, user(), user()]) == [("alternation", 2)]
    assert rules([user(), assistant(), assistant()]) == [("alternation", 2)]


def test_r1_4_tool_results_may_repeat_and_system_only_opens_the_list() -> None:
    assert rules([user(), asks("a", "b"), result("a"), result("b")]) == []
    assert rules([user(), SYSTEM, assistant()]) == [("alternation", 1)]


def test_r6_9_orphan_call_and_orphan_result() -> None:
    assert rules([user(), asks("a"), user("next")]) == [("orphan_call", 1)]
    assert rules([user(), asks("a")]) == [("orphan_call", 1)]  # at the very end too
    assert rules([user(), result("ghost")]) == [("orphan_result", 1)]
    # a result after an intervening message answers nothing: the call is closed by then
    assert rules([user(), asks("a"), assistant(), result("a")]) == [
        ("orphan_call", 1),
        ("alternation", 2),
        ("orphan_result", 3),
    ]


def test_r6_9_duplicate_result_for_one_call_is_an_orphan() -> None:
    assert rules([user(), asks("a"), result("a"), result("a")]) == [("orphan_result", 3)]


def test_r6_6_at_most_one_summary_block_in_every_recognised_form() -> None:
    current = {"role": "user", "content": f"{SUMMARY_PREFIX}\n\nbody"}
    legacy = {"role": "user", "content": f"  {LEGACY_SUMMARY_PREFIX} older body"}
    tagged = {"role": "user", "content": "anything", SUMMARY_METADATA_KEY: True}
    for block in (current, legacy, tagged):
        assert is_summary(block)
        assert check_invariants([SYSTEM, block, assistant()]) == []
    violations = check_invariants([SYSTEM, current, assistant(), legacy, assistant()])
    assert [(v.rule, v.index) for v in violations] == [("summary_count", None)]
    assert "2 summary blocks (at most 1)" in str(violations[0])
    assert check_invariants([current, assistant(), tagged], max_summaries=2) == []
    assert not is_summary(user("a normal message mentioning [CONTEXT SUMMARY]: inline"))


def test_structure_errors_become_one_structure_violation() -> None:
    violations = check_invariants([user(), {"role": "nobody"}])
    assert [(v.rule, v.index) for v in violations] == [("structure", 1)]
    assert str(violations[0]).startswith("structure at 1: unknown role")


# --- sanitize_for_wire ----------------------------------------------------------------------


def test_r7_5_sanitiser_strips_underscore_keys_at_top_level_only() -> None:
    messages = [
        {
            "role": "user",
            "content": "x",
            SUMMARY_METADATA_KEY: True,
            "_source": "store",
            "name": "aider_console",
            "meta": {"_nested": 1},
        },
        asks("a"),
    ]
    messages[1]["tool_calls"][0]["_keep_me"] = "nested"
    wire = sanitize_for_wire(messages)
    assert wire[0] == {
        "role": "user",
        "content": "x",
        "name": "aider_console",
        "meta": {"_nested": 1},
    }
    assert wire[1]["tool_calls"][0]["_keep_me"] == "nested"
    # a copy: the input keeps its metadata and later edits do not leak across
    assert messages[0][SUMMARY_METADATA_KEY] is True
    wire[0]["meta"]["_nested"] = 2
    assert messages[0]["meta"]["_nested"] == 1


# --- repair_tool_pairs ----------------------------------------------------------------------


def test_r6_9_repair_closes_dangling_calls_right_after_their_group() -> None:
    messages = [user(), asks("a", "b"), result("a"), user("next")]
    repaired, fixes = repair_tool_pairs(messages)
    assert fixes == 1
    assert repaired[3] == {"role": "tool", "tool_call_id": "b", "content": DANGLING_RESULT}
    assert repaired[4] == user("next")
    assert check_invariants(repaired) == []
    assert len(messages) == 4  # the input is not modified


def test_r6_9_repair_drops_orphan_results_and_closes_a_trailing_call() -> None:
    repaired, fixes = repair_tool_pairs([user(), result("ghost"), assistant(), user(), asks("z")])
    assert fixes == 2
    assert [m["role"] for m in repaired] == ["user", "assistant", "user", "assistant", "tool"]
    assert repaired[-1]["tool_call_id"] == "z"
    assert check_invariants(repaired) == []


def test_r6_9_repair_of_a_valid_list_is_an_equal_copy() -> None:
    messages = [SYSTEM, user(), asks("a"), result("a"), assistant()]
    repaired, fixes = repair_tool_pairs(messages)
    assert fixes == 0 and repaired == messages and repaired[2] is not messages[2]


# --- normalize_alternation ------------------------------------------------------------------


def test_r1_4_normalize_merges_adjacent_same_role_text() -> None:
    merged, merges = normalize_alternation(
        [SYSTEM, user("a"), user("b"), assistant("c"), assistant("d")]
    )
    assert merges == 2
    # what the wire sees; the private segment record lets readers split the merge again
    assert sanitize_for_wire(merged) == [SYSTEM, user("a\n\nb"), assistant("c\n\nd")]
    assert [segments_of(m) for m in merged[1:]] == [["a", "b"], ["c", "d"]]
    assert check_invariants(merged) == []


def test_r1_4_normalize_merges_list_content_as_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    first = {"role": "user", "content": [{"type": "text", "text": "see"}, image]}
    merged, merges = normalize_alternation([first, user("and this")])
    assert merges == 1
    assert merged[0]["content"] == [
        {"type": "text", "text": "see"},
        image,
        {"type": "text", "text": "and this"},
    ]
    merged[0]["content"][1]["image_url"]["url"] = "changed"
    assert image["image_url"]["url"] == "data:image/png;base64,AAAA"  # parts were copied


def test_r1_4_normalize_keeps_calls_last_and_never_merges_after_a_call() -> None:
    merged, merges = normalize_alternation([user(), assistant("thinking"), asks("a"), result("a")])
    assert merges == 1
    assert merged[1]["content"] == "thinking" and merged[1]["tool_calls"][0]["id"] == "a"
    assert check_invariants(merged) == []
    unmerged, none = normalize_alternation([user(), asks("a"), assistant("after")])
    assert none == 0 and len(unmerged) == 3


def test_r1_4_normalize_keeps_null_content_null() -> None:
    """Bug fix: two null contents used to merge into "" (an empty text block some gateways
    reject next to tool_calls)."""
    merged, _ = normalize_alternation([user(), {"role": "assistant", "content": None}, asks("a")])
    assert merged[1]["content"] is None
    merged, _ = normalize_alternation([user(), assistant(""), asks("a")])
    assert merged[1]["content"] == ""


def test_r7_4_normalize_keeps_summary_metadata_of_either_message() -> None:
    block = {"role": "user", "content": f"{SUMMARY_PREFIX}\n\nbody", SUMMARY_METADATA_KEY: True}
    merged, _ = normalize_alternation([block, user("next")])
    assert merged[0][SUMMARY_METADATA_KEY] is True and is_summary(merged[0])
    merged, _ = normalize_alternation([user("before"), block])
    assert merged[0][SUMMARY_METADATA_KEY] is True


def test_text_of_joins_text_parts_and_ignores_media() -> None:
    msg = {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]}
    assert text_of(msg) == "a\nb"
    assert text_of({"role": "assistant", "content": None}) == ""


# --- real transcripts -----------------------------------------------------------------------


def test_r1_4_aider_transcript_needs_and_gets_normalisation() -> None:
    """Aider console lines are consecutive user messages (SOURCES.md); normalising fixes it."""
    messages = load("aider-2024-08-13-1342.jsonl")
    validate_messages(messages)
    assert any(v.rule == "alternation" for v in check_invariants(messages))
    normalised, merges = normalize_alternation(messages)
    assert merges > 0
    assert check_invariants(normalised) == []
    assert sum(len(text_of(m)) for m in normalised) >= sum(len(text_of(m)) for m in messages)


def test_r6_9_openhands_unanswered_finish_call_is_repaired() -> None:
    messages = load("openhands-llama4-ponyc-4595.jsonl")
    assert any(v.rule == "orphan_call" for v in check_invariants(messages))
    repaired, fixes = repair_tool_pairs(messages)
    assert fixes >= 1
    normalised, _ = normalize_alternation(repaired)
    assert not [v for v in check_invariants(normalised) if v.rule.startswith("orphan")]
