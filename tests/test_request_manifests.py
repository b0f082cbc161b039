"""Issue 29: the store records what the model received (a manifest per request) and what each
compaction did (a receipt, handed to ``on_post_compress``) — on the path an agent runs
(``ContextHost`` / ``Session`` over a real SQLite file)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from host_helpers import TailEngine, chat_turn, make_host, transcript_files
from hypothesis import given
from hypothesis import strategies as st

from hermes_host import hookimpl
from hermes_host.host import ContextHost
from hermes_host.models import CompactionReceipt
from hermes_host.store import StoreError
from hermes_host.store.manifests import (
    decode_entries,
    encode_entries,
    extend_encoded,
    rebuild_request,
    shared_prefix,
)


def _requests(host: ContextHost, session: Any) -> list[Any]:
    return host.store.list_requests(host.store.lineage(session.id))


def test_entries_encode_runs_and_parts_and_decode_back() -> None:
    entries: list[int | str] = ["ab", 3, 4, 5, 9, "cd", 10, 11, 7]
    text = encode_entries(entries)
    assert text == "#ab,3-5,9,#cd,10-11,7"
    assert decode_entries(text) == entries
    assert decode_entries("") == [] and decode_entries(None) == []
    assert shared_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert shared_prefix([1, 2, 3], [1, 9, 3, 4]) == 1


_entry = st.one_of(st.integers(min_value=1, max_value=40), st.sampled_from(["ab", "cd"]))


@given(st.lists(_entry, max_size=12), st.lists(_entry, max_size=12))
def test_extending_an_encoding_equals_encoding_the_whole(
    previous: list[int | str], added: list[int | str]
) -> None:
    whole = encode_entries(previous + added)
    last = previous[-1] if previous else None
    assert extend_encoded(encode_entries(previous), last, added) == whole
    assert decode_entries(whole) == previous + added


def test_every_request_is_recorded_and_rebuilds_exactly_what_was_sent(tmp_path: Path) -> None:
    host = make_host(tmp_path, TailEngine(threshold=10**6))
    session = host.open_session(system_prompt="You are a careful agent.")
    sent: list[list[dict[str, Any]]] = []
    for n in range(3):
        session.add_user(f"question {n}")
        sent.append(session.build_request())
        session.add_assistant(f"answer {n}")
        session.end_turn({"prompt_tokens": 50 + n, "completion_tokens": 7,
                          "cache_read_input_tokens": 20})
    records = _requests(host, session)
    assert len(records) == 3
    for record, request in zip(records, sent, strict=True):
        assert rebuild_request(host.store, record) == request
        assert record.details["source"] == "build_request"
    # ids, not copies: the system prompt is one part, the window one run of row ids
    first, last = records[0], records[-1]
    assert last.entries.startswith("#") and last.entries.count(",") == 1
    assert decode_entries(first.entries)[0] == decode_entries(last.entries)[0]
    # each request only grew: the whole previous request is its cacheable prefix
    assert first.prefix_tokens == 0
    assert [r.prefix_tokens for r in records[1:]] == [r.tokens for r in records[:-1]]
    # the provider's usage is attached to the call it reports
    assert [r.input_tokens for r in records] == [50, 51, 52]
    assert {r.output_tokens for r in records} == {7}
    assert {r.cache_read_tokens for r in records} == {20}
    assert records[-1].tokens == session.last_request_tokens


def test_injections_and_condensed_messages_are_parts_stored_once(tmp_path: Path) -> None:
    host = make_host(tmp_path, TailEngine(threshold=10**6),
                     model={"context_length": 4000, "max_output_tokens": 200})
    session = host.open_session(system_prompt="sys")
    session.add_user("what is in the file?")
    first = session.build_request(injections=["Reminder: the build is red (turn-scoped)."])
    second = session.build_request(injections=["Reminder: the build is red (turn-scoped)."])
    session.add_assistant("x" * 40_000)  # over the request budget: the bound condenses it
    third = session.build_request()
    records = _requests(host, session)
    assert [rebuild_request(host.store, r) for r in records] == [first, second, third]
    assert records[1].entries == records[0].entries  # the same injection: the same part
    assert "condensed" in records[2].details
    assert records[2].tokens < 4000 and records[2].tokens == session.last_request_tokens
    with sqlite3.connect(tmp_path / "state.db") as conn:
        parts = conn.execute("SELECT count(*) FROM request_parts").fetchone()[0]
    assert parts == 3  # system prompt, the injection, the condensed answer


def test_receipt_counts_what_a_compaction_did_and_on_post_compress_sees_it(
    tmp_path: Path,
) -> None:
    seen: list[CompactionReceipt] = []

    class Watcher:
        @hookimpl
        def on_post_compress(self, request: CompactionReceipt) -> None:
            seen.append(request)

    engine = TailEngine(keep=1, threshold=600)
    config_plugins = {"tail": engine, "watcher": Watcher()}
    from host_helpers import make_config

    host = ContextHost.from_config(
        make_config("tail", memory={"providers": ["watcher"]}),
        store=tmp_path / "state.db", extra_plugins=config_plugins,
    )
    session = host.open_session(system_prompt="sys")
    outcomes = []
    for n in range(5):
        chat_turn(session, n)
        outcomes.append(session.end_turn({"prompt_tokens": 100, "completion_tokens": 5}))
    committed = [o.compression for o in outcomes if o.compression and o.status == "committed"]
    assert committed
    receipts = host.store.list_receipts(host.store.lineage(session.id))
    assert [r.status for r in receipts].count("committed") == len(committed)
    assert [r.id for r in seen] == [r.id for r in receipts if r.status == "committed"]
    for receipt, report in zip((r for r in receipts if r.status == "committed"), committed,
                               strict=True):
        assert receipt.trigger == "auto" and receipt.decided_by == "engine:tail"
        assert (receipt.tokens_before, receipt.tokens_after) == (
            report.tokens_before, report.tokens_after)
        parts = (receipt.kept, receipt.pruned, receipt.summarised, receipt.dropped)
        assert sum(p.messages for p in parts) == receipt.messages_before
        assert receipt.summarised.messages + receipt.dropped.messages > 0
        before, after = decode_entries(receipt.before_ids), decode_entries(receipt.after_ids)
        assert len(before) == receipt.messages_before and len(after) == receipt.messages_after
        assert set(before) - set(after)  # the rows that left the window
        rows = host.store.messages_by_id(before)
        assert sum(p.tokens for p in parts) == sum(
            host.tokens.count(rows[i].message) for i in before)
    first = next(r for r in receipts if r.status == "committed")
    # the first summary is a new row; what it replaced counts as summarised
    assert first.summary.messages == 1 and first.summarised.messages > 0
    assert set(decode_entries(first.after_ids)) - set(decode_entries(first.before_ids))
    # a forced compression that changes nothing is recorded, not handed to the hook
    report = session.compress(force=True)
    last = host.store.list_receipts(host.store.lineage(session.id))[-1]
    assert last.trigger == "forced" and last.status == report.status
    if report.status != "committed":
        assert seen[-1].id != last.id


def test_a_store_that_refuses_a_manifest_is_said_once_and_the_turn_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host(tmp_path, TailEngine(threshold=10**6))
    session = host.open_session(system_prompt="sys")

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise StoreError("disk full (test)")

    monkeypatch.setattr(host.store, "record_request", refuse)
    session.add_user("hi")
    request = session.build_request()
    session.build_request()
    assert request[-1]["content"] == "hi"
    warnings = [e for e in session.events if "request not recorded" in e]
    assert len(warnings) == 1 and "disk full" in warnings[0]


def test_recording_can_be_switched_off(tmp_path: Path) -> None:
    host = make_host(tmp_path, TailEngine(threshold=10**6), store={"record_requests": False})
    session = host.open_session(system_prompt="sys")
    session.add_user("hi")
    session.build_request()
    assert _requests(host, session) == []


def test_an_old_store_gains_the_tables_and_keeps_its_sessions(tmp_path: Path) -> None:
    from hermes_host.store.sqlite.schema import MIGRATIONS, migrate

    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path, MIGRATIONS[:4])
    conn.execute("INSERT INTO sessions (id, created_at, last_activity_at, conversation_id) "
                 "VALUES ('old', 1, 1, 'old')")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp, seq) "
                 "VALUES ('old', 'user', 'from before', 1, 1)")
    conn.close()
    host = make_host(tmp_path, TailEngine(threshold=10**6))
    session = host.resume("old")
    assert session.raw_window[0]["content"] == "from before"
    session.build_request()
    (record,) = _requests(host, session)
    assert rebuild_request(host.store, record)[-1]["content"] == "from before"


@pytest.mark.skipif(not transcript_files(), reason="transcripts not present")
def test_a_replayed_real_transcript_rebuilds_every_request(tmp_path: Path) -> None:
    from hermes_host.replay import replay_transcript
    from hermes_host.transcripts import load_transcript

    path = transcript_files()[0]
    host = make_host(tmp_path, TailEngine(keep=2, threshold=3000),
                     model={"context_length": 8000, "max_output_tokens": 500})
    sent: list[list[dict[str, Any]]] = []
    result = replay_transcript(host, load_transcript(path),
                               on_request=lambda i, request, _: sent.append(request))
    records = host.store.list_requests(host.store.lineage(result.session_id))
    assert len(records) == len(sent) > 0
    assert [rebuild_request(host.store, r) for r in records] == sent
    assert result.compressions
    final = rebuild_request(host.store, records[-1])
    assert json.dumps(final, sort_keys=True) == json.dumps(result.final_request, sort_keys=True)


def test_store_migrate_copies_manifests_parts_and_receipts(tmp_path: Path) -> None:
    from hermes_host.store.sqlite import SQLiteStore
    from hermes_host.store.transfer import migrate_history

    host = make_host(tmp_path, TailEngine(keep=1, threshold=600))
    session = host.open_session(system_prompt="sys")
    sent = []
    for n in range(8):
        session.add_user(f"question {n} " + "words " * 60)
        sent.append(session.build_request(injections=[f"note {n}"]))
        session.add_assistant(f"answer {n} " + "more " * 60)
        session.end_turn({"prompt_tokens": 10})
    lineage = host.store.lineage(session.id)
    receipts = host.store.list_receipts(lineage)
    assert receipts
    target = SQLiteStore.from_url(str(tmp_path / "copy.db"))
    report = migrate_history(host.store, target)
    assert report.ok and report.copied["requests"] == len(sent)
    copied = target.list_requests(lineage)
    assert [rebuild_request(target, r) for r in copied] == sent
    assert [r.model_dump() for r in target.list_receipts(lineage)] == [
        r.model_dump() for r in receipts]


def test_status_counts_the_whole_conversation_after_a_rotation(tmp_path: Path) -> None:
    """Issue 29: chat's /status showed 0 tokens right after a rotation (a new session row)."""
    from hermes_host.chat.status import status_lines

    host = make_host(tmp_path, TailEngine(keep=1, threshold=600))
    session = host.open_session(system_prompt="sys")
    for n in range(6):
        chat_turn(session, n)
        session.end_turn({"prompt_tokens": 1000, "completion_tokens": 10})
    assert len(session.lineage) > 1
    row = host.store.get_session(session.id)
    lines = status_lines(session, row, provider="openai", last_outcome=None)
    reported = next(line for line in lines if line.startswith("tokens this conversation"))
    assert f"{len(host.store.lineage(session.id))} sessions" in reported
    assert "in 6,000 · out 60" in reported


def test_openai_cached_prompt_tokens_are_read_as_cache_reads(tmp_path: Path) -> None:
    host = make_host(tmp_path, TailEngine(threshold=10**6))
    session = host.open_session(system_prompt="sys")
    session.add_user("hi")
    session.build_request()
    session.record_usage({"prompt_tokens": 900, "completion_tokens": 3,
                          "prompt_tokens_details": {"cached_tokens": 640}})
    session.build_request()
    session.record_usage({"input_tokens": 950, "output_tokens": 4,
                          "input_tokens_details": {"cached_tokens": 700}})
    first, second = _requests(host, session)
    assert (first.input_tokens, first.cache_read_tokens) == (900, 640)
    assert (second.input_tokens, second.cache_read_tokens) == (950, 700)
    assert host.store.get_session(session.id).cache_read_tokens == 1340


def test_a_fitted_list_with_metadata_is_recorded_as_ids_not_copies(tmp_path: Path) -> None:
    """An integration fits the raw window, ``_`` metadata and all (the OpenAI Agents SDK
    keeps its items there): the manifest still names the stored rows, no part copies them."""
    host = make_host(tmp_path, TailEngine(threshold=10**6))
    session = host.open_session(system_prompt="sys")
    for n in range(3):
        session.add_message({"role": "user", "content": f"q{n}", "_framework_items": [n]})
        session.add_message({"role": "assistant", "content": f"a{n}", "_framework_items": [n]})
    session.fit_request([{"role": "system", "content": "sys"}, *session.raw_window])
    (record,) = _requests(host, session)
    entries = decode_entries(record.entries)
    assert len(entries) == 7 and all(isinstance(e, int) for e in entries[1:])
    rebuilt = rebuild_request(host.store, record)
    assert all(not any(k.startswith("_") for k in m) for m in rebuilt)


def _classify_reference(before: list[Any], after: list[Any], outcome: str) -> dict[str, Any]:
    """The receipt's parts as the rule says them, one message at a time (no shortcuts)."""
    from hermes_host.messages import SUMMARY_METADATA_KEY
    from hermes_host.session.receipts import _key
    from hermes_host.tokens import count_message

    after_keys = [_key(m) for m in after]
    before_keys = [_key(m) for m in before]
    results = {m.get("tool_call_id") for m in after if m.get("role") == "tool"}
    summaries = [m for m, k in zip(after, after_keys, strict=True) if k not in before_keys
                 and (m.get(SUMMARY_METADATA_KEY) or m.get("role") != "tool")]
    gone = "summarised" if outcome in ("summarised", "fallback") and summaries else "dropped"
    parts = {name: [0, 0] for name in ("kept", "pruned", "summarised", "dropped", "summary")}
    for m, k in zip(before, before_keys, strict=True):
        name = ("kept" if k in after_keys else
                "pruned" if m.get("role") == "tool" and m.get("tool_call_id") in results
                else gone)
        parts[name][0] += 1
        parts[name][1] += count_message(m)
    for m in summaries:
        parts["summary"][0] += 1
        parts["summary"][1] += count_message(m)
    return {name: (n, t) for name, (n, t) in parts.items()}


_MESSAGE = st.one_of(
    st.builds(lambda r, t: {"role": r, "content": t}, st.sampled_from(["user", "assistant"]),
              st.sampled_from(["a", "b", "c", ""])),
    st.builds(lambda i, t: {"role": "tool", "tool_call_id": f"c{i}", "content": t},
              st.integers(0, 3), st.sampled_from(["out", "[pruned]"])),
    st.builds(lambda i, j: {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": str(j)}}]},
        st.integers(0, 3), st.integers(0, 2)),
    st.builds(lambda t: {"role": "user", "content": [{"type": "text", "text": t}]},
              st.sampled_from(["a", "z"])),
    st.just({"role": "user", "content": "[summary]", "_compressed_summary": True}),
)


@given(before=st.lists(_MESSAGE, max_size=12), extra=st.lists(_MESSAGE, max_size=4),
       keep=st.lists(st.booleans(), max_size=12),
       outcome=st.sampled_from(["summarised", "pruned", "fallback"]), known=st.booleans())
def test_issue32_receipt_classification_agrees_with_the_rule(
    before: list[Any], extra: list[Any], keep: list[bool], outcome: str, known: bool
) -> None:
    """classify's shortcuts (text and sketch filters, the gone part as one sum) give what
    the rule gives message by message, with and without the counts known."""
    import copy

    from hermes_host.session.receipts import classify
    from hermes_host.tokens import count_message

    after = [copy.deepcopy(m) for m, k in zip(before, keep, strict=False) if k] + extra
    counts = [count_message(m) for m in before] if known else None
    got = classify(before, after, outcome, count_message, counts)
    assert {name: (p.messages, p.tokens) for name, p in got.items()} == \
        _classify_reference(before, after, outcome)
