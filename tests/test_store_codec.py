"""R-1.2 / R-9.2: a stored message comes back exactly as given — every key, its order,
``_`` metadata, odd types, and strings SQLite cannot hold as UTF-8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import conversation

from hermes_host.store import StoreError, open_store
from hermes_host.store.codec import decode_row, encode_message
from hermes_host.tokens import count_message

ODD_MESSAGES = [
    {"role": "user", "content": "plain"},
    {"content": "key order reversed", "role": "user"},
    {"role": "assistant"},  # no content key at all
    {"role": "assistant", "content": None, "tool_calls": None},
    {"role": "assistant", "content": "", "tool_calls": []},
    {
        "role": "user",
        "content": "[CONTEXT COMPACTION] summary",
        "_compressed_summary": True,
        "_previous_summary": {"nested": [1, 2.5, None, "x"]},
    },
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url",
                                                                    "image_url": {"url": "d"}}]},
    {"role": "user", "content": "lone surrogate \udc80 here", "name": "alice"},
    {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "x" * 10},
    {"role": "tool", "tool_call_id": "c2", "name": 42, "content": "non-string name"},
    {"role": "assistant", "content": "hi", "reasoning": "think", "reasoning_details": [{"a": 1}],
     "finish_reason": "stop", "platform_message_id": "p1", "observed": True, "api_content": "a"},
    {"role": "assistant", "content": "hi", "observed": 1},  # not a bool: kept verbatim in extra
    {"role": "user", "content": "ünïcödé 中文 🙂", "timestamp": "2025-01-01T00:00:00Z"},
]


@pytest.mark.parametrize("message", ODD_MESSAGES, ids=range(len(ODD_MESSAGES)))
def test_codec_round_trip_is_exact_R_9_2(message: dict) -> None:
    values = encode_message(message).values
    decoded = decode_row(values)
    assert decoded == message
    assert list(decoded) == list(message)


def test_plain_messages_need_no_extra_column_R_9_2() -> None:
    """The common shapes cost no JSON ``extra`` at all (cheap bulk appends)."""
    for message in conversation(2):
        assert encode_message(message).values[-1] is None, message


def test_list_content_is_searchable_text_not_json() -> None:
    values = encode_message(ODD_MESSAGES[6]).values
    assert values[1] == "look"


def test_store_round_trip_through_sqlite_R_1_2(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    session = store.create_session()
    ids = store.append_messages(session.id, ODD_MESSAGES)
    assert len(ids) == len(ODD_MESSAGES) and ids == sorted(ids)
    store.close()
    reopened = open_store(tmp_path / "state.db")
    back = reopened.active_messages(session.id)
    assert back == ODD_MESSAGES
    assert [list(m) for m in back] == [list(m) for m in ODD_MESSAGES]
    stored = reopened.all_messages(session.id)
    assert [s.token_count for s in stored[:2]] == [count_message(m) for m in ODD_MESSAGES[:2]]


def test_unstorable_message_is_a_clear_error_naming_the_index(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    session = store.create_session()
    with pytest.raises(StoreError, match="message 1"):
        store.append_messages(session.id, [{"role": "user", "content": "ok"}, {"content": "x"}])
    with pytest.raises(StoreError, match="message 0: not JSON-serialisable"):
        store.append_messages(session.id, [{"role": "user", "content": "x", "_obj": object()}])
    assert store.active_messages(session.id) == []  # nothing half-written


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(
    ["content", "tool_calls", "tool_call_id", "name", "finish_reason", "reasoning",
     "reasoning_details", "api_content", "platform_message_id", "observed", "_meta", "extra"]
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    role=st.sampled_from(["system", "user", "assistant", "tool", "weird"]),
    body=st.dictionaries(_keys, _json, max_size=6),
)
def test_codec_round_trip_property_R_9_2(role: str, body: dict) -> None:
    """Any JSON-representable message survives encode/decode exactly, key order included."""
    message = {"role": role, **body}
    decoded = decode_row(encode_message(message).values)
    assert json.dumps(decoded) == json.dumps(message)
