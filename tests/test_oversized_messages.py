"""Issue 31: oversized messages are bounded in time and memory, and one huge message never
makes a session uncompressible.

Before: one 20 MB user message made every compression result larger than the fence's 16 MiB
cap (``rejected``/``invalid``, forever), and counting 10 MB of one repeated character took
seconds.  Now the window holds a head-and-tail excerpt of a text longer than any request can
hold (:mod:`hermes_host.session.intake`) while the store keeps the original, and a text
longer than ``tokens.EXACT_COUNT_CHARS`` is counted from samples.  Real SQLite files, the
real compressor with the offline summariser.  Time and memory figures are in
``benchmarks/bench_oversized.py``, not asserted here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from host_helpers import TailEngine, make_config, make_host

from hermes_host import hookimpl, tokens
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.messages import check_invariants, text_of, validate_messages
from hermes_host.models import Message
from hermes_host.session import intake
from hermes_host.session.bound import request_budget
from hermes_host.session.excerpts import clip_arguments
from hermes_host.session.intake import CLIPPED_KEY
from hermes_host.store.manifests import rebuild_request
from hermes_host.tokens import _SAMPLE_CHARS, _SAMPLES, EXACT_COUNT_CHARS, count_text

INTAKE_NOTE = "left out of this session's window"


def _prose(size: int, tag: str = "HUGE") -> str:
    """``size`` characters of varied text, starting ``BEGIN-<tag>`` and ending ``END-<tag>``."""
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]
    block = " ".join(f"{words[i % 8]}{i % 997}" for i in range(12_000)) + "\n"
    head, tail = f"BEGIN-{tag} ", f" END-{tag}"
    body = size - len(head) - len(tail)
    return head + (block * (body // len(block) + 1))[:body] + tail


def _turns(session: Any, n: int, tag: str) -> None:
    for i in range(n):
        session.add_user(f"{tag} question {i}: " + "what about this? " * 10)
        session.add_assistant(f"{tag} answer {i}: " + "it is so. " * 10)


def _rows(host: ContextHost, session_id: str) -> list[Message]:
    return [r.message for sid in host.store.lineage(session_id)
            for r in host.store.all_messages(sid)]


# -- the user's path: one 20 MB message ------------------------------------------------------


def test_one_huge_message_still_compresses_and_the_store_keeps_it_whole(tmp_path: Path) -> None:
    """20 MB in one user message, through ``ContextHost``/``Session`` with the default model
    window: the window and every request hold a bounded excerpt of it, each compression
    commits (the old code: ``rejected``/``invalid``, "result too large: 20972... bytes > cap of
    16777216 bytes", on every attempt), and the original is stored once, intact, never
    overwritten by the excerpt — also after the compression that kept it in its tail."""
    text = _prose(20 * 1024 * 1024)
    config = HermesConfig.model_validate(
        {"memory": {"providers": []}, "summarizer": {"provider": "offline"}}
    )
    model = config.model
    limit = intake.text_limit(model.context_length, model.max_output_tokens,
                              config.fence.max_result_bytes)
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("huge", "You are a helper.")
        _turns(session, 6, "before")
        session.add_user(text)
        session.add_assistant("I read the whole log.")
        _turns(session, 25, "after")

        held = [m for m in session.window() if CLIPPED_KEY in m]
        assert len(held) == 1 and held[0][CLIPPED_KEY] == len(text)
        excerpt = held[0]["content"]
        assert len(excerpt) < limit + 300
        assert excerpt.startswith("BEGIN-HUGE") and excerpt.endswith("END-HUGE")
        assert INTAKE_NOTE in excerpt and f"{len(text):,} characters" in excerpt
        assert session.raw_window[12]["content"] is text  # the session's own copy is whole

        request = session.build_request()
        assert not any(CLIPPED_KEY in m for m in request)  # metadata never reaches the wire
        assert sum(len(text_of(m)) for m in request) < limit + 50_000

        for round_ in range(3):
            report = session.compress(force=True)
            assert report.status == "committed", report
            assert check_invariants(session.window()) == []
            if not any(CLIPPED_KEY in m for m in session.window()):
                break
            _turns(session, 2, f"round {round_}")
        assert not any(CLIPPED_KEY in m for m in session.window()), "never summarised"
        assert session.window_tokens < 50_000

        rows = _rows(host, session.id)
        assert [m.get("content") for m in rows].count(text) == 1
        assert not any(INTAKE_NOTE in str(m.get("content")) for m in rows)


# -- the window's excerpt, the store's original ----------------------------------------------


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_kept_clipped_message_is_published_as_its_stored_row(
    tmp_path: Path, isolation: str
) -> None:
    """A message over the limit (256 KiB characters for this small test window) is clipped
    in the window; a compression that keeps it publishes the *original* row (the same row
    id, not a rewritten excerpt) — also when the engine's answer comes back from a worker
    process as a copy; a resumed session and memory providers see it clipped."""
    text = _prose(300_000, "BIG")
    seen: list[int] = []

    class Provider:
        @hookimpl
        def on_turn_complete(self, request: Any) -> None:
            seen.extend(len(text_of(m)) for m in request.messages)

    config = make_config("tail", memory={"providers": ["watch"]},
                         engines={"tail": {"fence": {"isolation": isolation}}})
    host = ContextHost.from_config(config, store=tmp_path / "state.db",
                                   extra_plugins={"tail": TailEngine(keep=2, threshold=10**9),
                                                  "watch": Provider()})
    with host:
        session = host.open_session("big", "sys")
        _turns(session, 3, "early")
        session.add_user(text)
        session.add_assistant("noted")
        before = {r.id: r.message for r in host.store.all_messages(session.id)}
        (row_id,) = [i for i, m in before.items() if m.get("content") == text]

        window = session.window()
        assert [m.get(CLIPPED_KEY) for m in window].count(len(text)) == 1
        assert max(len(text_of(m)) for m in window) < intake.MIN_WINDOW_TEXT_CHARS + 300
        assert session.raw_window[-2]["content"] == text

        session.end_turn()
        assert seen and max(seen) < intake.MIN_WINDOW_TEXT_CHARS + 300

        report = session.compress(force=True)  # keeps the last two user turns: the big one
        assert report.status == "committed", report
        rows = {r.id: r for r in host.store.all_messages(session.id)}
        assert rows[row_id].message["content"] == text and rows[row_id].active
        assert sum(1 for r in rows.values() if r.message.get("content") == text) == 1
        assert not any(INTAKE_NOTE in str(r.message.get("content")) for r in rows.values())
        assert session.raw_window[-2]["content"] == text

        resumed = host.resume(session.id)
        assert [m.get(CLIPPED_KEY) for m in resumed.window()].count(len(text)) == 1


def test_the_request_manifest_records_the_excerpt_not_the_row(tmp_path: Path) -> None:
    """What was sent is what the manifest names: the clipped message was not sent as stored,
    so it is recorded as a part (the request bound's excerpt of the window's), not as the
    row's id; rebuilding the request gives what was sent."""
    text = _prose(300_000, "SENT")
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session("m", "sys")
        session.add_user(text)
        sent = session.build_request()
        store: Any = host.store
        (record,) = store.list_requests([session.id])
        (row_id,) = [r.id for r in store.all_messages(session.id)]
        assert row_id not in record.decoded()
        assert rebuild_request(store, record) == sent


# -- clip() ----------------------------------------------------------------------------------


def test_clip_leaves_short_messages_alone_and_never_changes_its_input() -> None:
    short = {"role": "user", "content": "x" * 1000}
    assert intake.clip(short, 1000) is None
    assert intake.clip({"role": "assistant", "content": None}, 10) is None
    long = {"role": "tool", "tool_call_id": "c9", "content": "a" * 5000 + "TAIL"}
    frozen = dict(long)
    out = intake.clip(long, 2000)
    assert long == frozen
    assert out is not None and out[CLIPPED_KEY] == 5004 and out["tool_call_id"] == "c9"
    assert len(out["content"]) < 2000 + 300 and out["content"].endswith("TAIL")
    assert "tool call c9" in out["content"]


def test_clip_shares_the_limit_between_text_parts_and_keeps_images() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    message = {"role": "user", "content": [
        {"type": "text", "text": "p" * 3000}, image, {"type": "text", "text": "q" * 300},
    ]}
    out = intake.clip(message, 2000)
    assert out is not None and out[CLIPPED_KEY] == 3300
    parts = out["content"]
    assert parts[1] == image and parts[2]["text"] == "q" * 300  # under its share: whole
    assert len(parts[0]["text"]) < 1000 + 300


def test_clip_bounds_a_message_of_many_short_text_parts() -> None:
    """10,000 parts of 100 characters: none is over its share, together they are; the first
    and last parts stay, one note replaces those in between, images keep their place."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    parts = [{"type": "text", "text": f"{i:05d}" + "x" * 95} for i in range(10_000)]
    parts.insert(5_000, image)
    out = intake.clip({"role": "user", "content": parts}, 20_000)
    assert out is not None and out[CLIPPED_KEY] == 1_000_000
    kept = out["content"]
    assert sum(len(p.get("text", "")) for p in kept) < 20_000 + 300
    assert kept[0] == parts[0] and kept[-1] == parts[-1] and image in kept
    assert any("text parts" in p.get("text", "") and INTAKE_NOTE in p["text"] for p in kept)


def test_text_limit_follows_the_request_budget_within_its_bounds() -> None:
    cap = 16 * 1024 * 1024
    assert intake.text_limit(4_000, 200, cap) == intake.MIN_WINDOW_TEXT_CHARS
    assert intake.text_limit(200_000, 8_192, cap) == 4 * 191_808
    assert intake.text_limit(2_000_000, 8_192, cap) == intake.MAX_WINDOW_TEXT_CHARS
    assert intake.text_limit(200_000, 8_192, 64 * 1024) == 16 * 1024  # a small result cap


# -- counting huge text in bounded time ------------------------------------------------------


class _Counting:
    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.chars = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.chars += len(text)
        return list(self.encoder.encode_ordinary(text))


def test_counting_10_mb_of_one_character_encodes_a_bounded_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The old code BPE-encoded all 10 MB (7.7 s in the finding); now a fixed sample is
    encoded whatever the size, and for uniform text the estimate is exact."""
    encoder = tokens._encoder()
    if encoder is None:
        pytest.skip("tiktoken's offline encoding is not installed")
    counting = _Counting(encoder)
    monkeypatch.setattr(tokens, "_encoder", lambda: counting)
    text = "a" * 10_000_000
    assert count_text(text) == math.ceil(len(encoder.encode_ordinary("a" * 80_000)) * 125 * 1.1)
    assert counting.chars <= _SAMPLES * _SAMPLE_CHARS


def test_the_estimate_of_a_long_text_errs_high_and_stays_close() -> None:
    """A count decides whether a request fits (issue 28): an estimate never under-counts a
    mixed text (prose, then denser code), and over-counts it by a bounded margin; a uniform
    text is counted with the margin exactly."""
    encoder = tokens._encoder()
    if encoder is None:
        pytest.skip("tiktoken's offline encoding is not installed")
    text = _prose(1_000_000, "EST") + "\n".join(f"def f{i}(x): return x * {i}" for i in range(9000))
    exact = len(encoder.encode_ordinary(text))
    assert len(text) > EXACT_COUNT_CHARS
    estimate = count_text(text)
    assert exact <= estimate < exact * 1.2, (estimate, exact)
    assert count_text(text[:EXACT_COUNT_CHARS]) == len(
        encoder.encode_ordinary(text[:EXACT_COUNT_CHARS])
    )


# -- tool-call arguments ---------------------------------------------------------------------


def _write_call(call_id: str, content: str, path: str = "big.txt") -> dict[str, Any]:
    arguments = json.dumps({"path": path, "mode": 420, "content": content})
    return {"id": call_id, "type": "function",
            "function": {"name": "write_file", "arguments": arguments}}


def test_a_huge_tool_call_is_held_clipped_and_the_session_still_compresses(
    tmp_path: Path,
) -> None:
    """20 MB of ``write_file`` arguments through ``ContextHost``/``Session`` with the default
    model window and the offline summariser.  The old code kept the arguments whole in the
    window: every forced compression was ``rejected``/``invalid`` ("result too large:
    20985528 bytes > cap of 16777216 bytes"), forever.  Now the window holds the call with
    its arguments still JSON — path and mode whole, the content a head-and-tail excerpt —
    under the same id, paired with its result; the store and ``raw_window`` keep the original."""
    content = _prose(20 * 1024 * 1024, "ARGS")
    call = _write_call("call_big", content)
    arguments = call["function"]["arguments"]
    config = HermesConfig.model_validate(
        {"memory": {"providers": []}, "summarizer": {"provider": "offline"}}
    )
    model = config.model
    limit = intake.text_limit(model.context_length, model.max_output_tokens,
                              config.fence.max_result_bytes)
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("huge-call", "You are a helper.")
        _turns(session, 6, "before")
        session.add_user("write the log to big.txt")
        session.add_assistant(None, [call])
        session.add_tool_result("call_big", "wrote 20 MB to big.txt")
        session.add_assistant("Written.")
        _turns(session, 25, "after")

        window = session.window()
        validate_messages(window)
        assert check_invariants(window) == []
        (held,) = [m for m in window if CLIPPED_KEY in m]
        assert held[CLIPPED_KEY] == len(arguments)
        (clipped_call,) = held["tool_calls"]
        assert clipped_call["id"] == "call_big"
        assert clipped_call["function"]["name"] == "write_file"
        kept = clipped_call["function"]["arguments"]
        assert len(kept) < limit + 300
        decoded = json.loads(kept)  # still JSON: a reader sees what was called, with what
        assert decoded["path"] == "big.txt" and decoded["mode"] == 420
        assert decoded["content"].startswith("BEGIN-ARGS")
        assert decoded["content"].endswith("END-ARGS")
        assert INTAKE_NOTE in decoded["content"] and "tool call call_big" in decoded["content"]
        at = window.index(held)
        assert window[at + 1]["role"] == "tool" and window[at + 1]["tool_call_id"] == "call_big"
        (raw,) = [m for m in session.raw_window if m.get("tool_calls")]
        assert raw["tool_calls"][0]["function"]["arguments"] is arguments

        request = session.build_request()
        assert not any(CLIPPED_KEY in m for m in request)
        assert len(json.dumps(request)) < limit + 50_000

        for round_ in range(3):  # the old code: rejected/invalid on every attempt
            report = session.compress(force=True)
            assert report.status == "committed", report
            assert check_invariants(session.window()) == []
            if not any(CLIPPED_KEY in m for m in session.window()):
                break
            _turns(session, 2, f"round {round_}")
        assert not any(CLIPPED_KEY in m for m in session.window()), "never summarised"
        assert session.window_tokens < 50_000

        rows = _rows(host, session.id)
        stored = [c["function"]["arguments"] for m in rows for c in m.get("tool_calls") or []
                  if c["id"] == "call_big"]
        assert stored == [arguments]  # once, whole, never the excerpt
        results = [m for m in rows if m.get("tool_call_id") == "call_big"]
        assert len(results) == 1


def test_a_kept_clipped_tool_call_is_published_as_its_stored_row(tmp_path: Path) -> None:
    """A compression that keeps the clipped call (the tail engine keeps the last turns)
    publishes its stored row — same row id, the original arguments — and its result stays
    paired with it; a resumed session holds it clipped again."""
    call = _write_call("c_keep", _prose(300_000, "KEEP"))
    arguments = call["function"]["arguments"]
    with make_host(tmp_path, TailEngine(keep=2, threshold=10**9)) as host:
        session = host.open_session("keep-call", "sys")
        _turns(session, 3, "early")
        session.add_user("write it")
        session.add_assistant(None, [call])
        session.add_tool_result("c_keep", "ok")
        session.add_assistant("done")
        before = {r.id: r.message for r in host.store.all_messages(session.id)}
        (row_id,) = [i for i, m in before.items() if m.get("tool_calls")]
        held = [m for m in session.window() if CLIPPED_KEY in m]
        assert len(held) == 1 and held[0]["tool_calls"][0]["id"] == "c_keep"
        assert len(held[0]["tool_calls"][0]["function"]["arguments"]) < len(arguments)

        report = session.compress(force=True)
        assert report.status == "committed", report
        rows = {r.id: r for r in host.store.all_messages(session.id)}
        assert rows[row_id].active
        assert rows[row_id].message["tool_calls"][0]["function"]["arguments"] == arguments
        assert not any(INTAKE_NOTE in json.dumps(r.message) for r in rows.values())
        window = session.window()
        assert check_invariants(window) == []
        assert any(m.get("tool_call_id") == "c_keep" for m in window)

        resumed = host.resume(session.id)
        assert [CLIPPED_KEY in m for m in resumed.window()].count(True) == 1


def test_clip_arguments_keeps_json_and_falls_back_to_a_raw_excerpt() -> None:
    where = "the arguments of tool call c1"
    small = json.dumps({"path": "a.txt", "content": "short"})
    assert clip_arguments(small, 10_000, where, intake.WINDOW_SCOPE) is small
    # the bulk in strings: JSON kept, only the long string cut, keys and numbers whole
    parts = json.dumps({"files": [{"p": f"f{i}", "c": "y" * (i * 1000)} for i in range(20)],
                        "n": [1, 2, 3]})
    out = clip_arguments(parts, 50_000, where, intake.WINDOW_SCOPE)
    assert len(out) <= 50_000 + 300
    decoded = json.loads(out)
    assert [f["p"] for f in decoded["files"]] == [f"f{i}" for i in range(20)]
    assert decoded["n"] == [1, 2, 3] and decoded["files"][1]["c"] == "y" * 1000
    # escapes count: a newline takes two characters of JSON
    escaped = json.dumps({"c": "ab\n" * 100 + "x" * 1_000_000 + "\n" * 100_000})
    out = clip_arguments(escaped, 20_000, where, intake.WINDOW_SCOPE)
    assert len(out) <= 20_000 + 300 and json.loads(out)["c"].startswith("ab\nab\n")
    # not JSON, or the bulk not in strings: a raw head-and-tail excerpt
    for raw in ("{" + "x" * 1_000_000 + "TAIL", json.dumps(list(range(300_000))),
                "[" * 100_000 + "]" * 100_000):
        out = clip_arguments(raw, 20_000, where, intake.WINDOW_SCOPE)
        assert len(out) <= 20_000 + 300 and INTAKE_NOTE in out and where in out
        assert out[:100] == raw[:100] and out[-100:] == raw[-100:]


def test_the_calls_of_one_message_share_the_limit_and_keep_their_ids() -> None:
    calls = [_write_call(f"c{i}", "z" * size) for i, size in enumerate((3000, 300, 30_000))]
    message = {"role": "assistant", "content": "writing", "tool_calls": calls}
    frozen = json.loads(json.dumps(message))
    out = intake.clip(message, 10_000)
    assert message == frozen  # never changed in place
    assert out is not None and out["content"] == "writing"
    total = len(calls[2]["function"]["arguments"])  # the marker counts what it clipped
    assert out[CLIPPED_KEY] == total
    assert [c["id"] for c in out["tool_calls"]] == ["c0", "c1", "c2"]
    kept = [c["function"]["arguments"] for c in out["tool_calls"]]
    assert kept[0] == calls[0]["function"]["arguments"]  # under its share: whole
    assert kept[1] == calls[1]["function"]["arguments"]
    assert len(kept[2]) < 10_000 // 3 + 300 and json.loads(kept[2])["path"] == "big.txt"
    validate_messages([out])
    # text and arguments both over: both clipped, the marker counts both
    both = {**message, "content": "t" * 20_000}
    out = intake.clip(both, 10_000)
    assert out is not None and out[CLIPPED_KEY] == 20_000 + total
    assert len(out["content"]) < 10_000 + 300


# -- tool-call arguments in the request bound -----------------------------------------------

REQUEST_NOTE = "left out of this request to fit the model's window"


def _code(size: int, tag: str) -> str:
    """``size`` characters of source-like lines (numbers and hex ids: about 3 characters a
    token, denser than prose), starting ``BEGIN-<tag>`` and ending ``END-<tag>``."""
    lines = "".join(f"    value_{i} = table[{i}].lookup('{i * 2654435761 % 2**32:08x}', {i % 97})\n"
                    for i in range(4000))
    head, tail = f"# BEGIN-{tag}\n", f"# END-{tag}"
    body = size - len(head) - len(tail)
    return head + (lines * (body // len(lines) + 1))[:body] + tail


def _check_bounded_call(request: list[Message], call_id: str, budget: int, host: ContextHost,
                        tag: str) -> None:
    """``request`` within ``budget`` by the host's own counter, valid, the call under its id
    and name, its arguments still JSON with the path whole and a head-and-tail excerpt of the
    content naming the call, paired with its result right after it."""
    assert host.tokens.count_all(request) <= budget
    validate_messages(request)
    assert check_invariants(request) == []
    (at,) = [i for i, m in enumerate(request)
             if any(c["id"] == call_id for c in m.get("tool_calls") or [])]
    (call,) = request[at]["tool_calls"]
    assert call["function"]["name"] == "write_file" and call["type"] == "function"
    decoded = json.loads(call["function"]["arguments"])
    assert decoded["path"] == "big.txt" and decoded["mode"] == 420
    content = decoded["content"]
    assert content.startswith(f"# BEGIN-{tag}") and content.endswith(f"# END-{tag}")
    assert REQUEST_NOTE in content and f"tool call {call_id}" in content
    assert request[at + 1]["role"] == "tool" and request[at + 1]["tool_call_id"] == call_id


def test_a_huge_call_in_the_newest_turn_is_cut_to_fit_the_request_budget(tmp_path: Path) -> None:
    """A 700,000-character ``write_file`` call in the newest turn, the default 200K window:
    intake holds it whole (under its 767,232-character limit), and the old request bound
    never shortened arguments — ``build_request`` sent 335,198 tokens against the
    191,808-token budget and said "it still does not fit".  Now its content is cut to a
    head-and-tail excerpt in the request alone, the arguments still JSON, the call's id,
    name and result unchanged; the session says what it condensed; the store, the window
    and ``raw_window`` keep the original.  ``fit_request`` (the integrations' path) does
    the same to a list the caller assembled."""
    call = _write_call("call_big", _code(700_000, "CODE"))
    arguments = call["function"]["arguments"]
    config = HermesConfig.model_validate(
        {"memory": {"providers": []}, "summarizer": {"provider": "offline"}}
    )
    budget = _budget(config)
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("huge-newest-call", "You are a helper.")
        _turns(session, 3, "before")
        session.add_user("write the generated module to big.txt")
        session.add_assistant(None, [call])
        session.add_tool_result("call_big", "wrote 700,000 characters to big.txt")
        assert host.tokens.count_all(session.window()) > budget  # no compression can help:
        assert not any(CLIPPED_KEY in m for m in session.window())  # the newest turn, whole

        request = session.build_request()
        _check_bounded_call(request, "call_big", budget, host, "CODE")
        status = session.status()
        assert status["last_request_tokens"] <= budget
        bound = status["request_bound"]
        assert bound["fits"] is True and bound["arguments"] == 1 and bound["dropped"] == 0
        warning = status["window_warning"]
        assert "1 tool call(s)' arguments to a head-and-tail excerpt" in warning
        assert "still does not fit" not in warning
        assert any("tool call(s)' arguments" in e for e in session.events
                   if e.startswith("⚠ request condensed"))
        # the user's messages before the call are not touched: the call carries the bulk
        assert [m for m in request if m.get("role") == "user"] == [
            m for m in session.window() if m.get("role") == "user"]

        # the integrations' path: the caller's own list, the original arguments in it
        raw = list(session.raw_window)
        fitted = session.fit_request(raw)
        _check_bounded_call(fitted, "call_big", budget, host, "CODE")
        assert session.status()["request_bound"]["arguments"] == 1
        assert raw == list(session.raw_window)  # never changed in place
        (held,) = [m for m in session.raw_window if m.get("tool_calls")]
        assert held["tool_calls"][0]["function"]["arguments"] is arguments

        rows = _rows(host, session.id)
        stored = [c["function"]["arguments"] for m in rows for c in m.get("tool_calls") or []
                  if c["id"] == "call_big"]
        assert stored == [arguments]  # once, whole, never the excerpt
        assert not any(REQUEST_NOTE in json.dumps(m) for m in rows)


def test_an_assistant_text_and_its_calls_the_larger_cut_first_the_small_call_whole(
    tmp_path: Path,
) -> None:
    """On a small window (16K, budget 8,000): an assistant message with a short text and
    two calls — a small one and one of 200,000 characters (under intake's limit, so the
    window holds it whole).  The request bound cuts only the large call's arguments; the
    small call, the text and both results stay as they are, and the request fits."""
    big = _write_call("c_big", _code(200_000, "TWO"))
    small = {"id": "c_small", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": "a.txt"})}}
    config = make_config("compressor", model={"context_length": 16_000,
                                              "max_output_tokens": 8_192},
                         summarizer={"provider": "offline"})
    budget = _budget(config)
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("two-calls", "sys")
        session.add_user("read a.txt, then write big.txt")
        session.add_assistant("Reading a.txt and writing big.txt.", [small, big])
        session.add_tool_result("c_small", "contents of a")
        session.add_tool_result("c_big", "ok")
        assert host.tokens.count_all(session.window()) > budget
        assert not any(CLIPPED_KEY in m for m in session.window())
        request = session.build_request()
        _check_bounded_call_pair(request, budget, host)
        assert session.status()["request_bound"]["arguments"] == 1
        assert session.status()["request_bound"]["clipped"] == 0


def _check_bounded_call_pair(request: list[Message], budget: int, host: ContextHost) -> None:
    assert host.tokens.count_all(request) <= budget
    validate_messages(request)
    assert check_invariants(request) == []
    (at,) = [i for i, m in enumerate(request) if m.get("tool_calls")]
    message = request[at]
    assert message["content"] == "Reading a.txt and writing big.txt."
    small, big = message["tool_calls"]
    assert small["id"] == "c_small"
    assert small["function"]["arguments"] == json.dumps({"path": "a.txt"})
    assert big["id"] == "c_big" and big["function"]["name"] == "write_file"
    content = json.loads(big["function"]["arguments"])["content"]
    assert content.startswith("# BEGIN-TWO") and content.endswith("# END-TWO")
    assert REQUEST_NOTE in content
    assert [m.get("tool_call_id") for m in request[at + 1:at + 3]] == ["c_small", "c_big"]
    assert request[at + 1]["content"] == "contents of a"


def _budget(config: HermesConfig) -> int:
    return request_budget(config.model.context_length, config.model.max_output_tokens)
