"""Defects the reliability suite found, each reproduced on its own (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_host.redact import redact_messages
from tests.host_helpers import make_config

DEEP_ARRAY = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a": ' * 3000 + "1" + "}" * 3000
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"


@pytest.mark.parametrize("arguments", [DEEP_ARRAY, DEEP_OBJECT, '[' * 900 + ']' * 900])
def test_deep_json_tool_arguments_do_not_crash_the_compressor(
    tmp_path: Path, arguments: str
) -> None:
    """Tool-call arguments nested deeper than Python's recursion limit made the compressor
    raise RecursionError (json.loads in describe/prune, redact_value in redaction): found by
    test_rel_fuzz's host path.  The compression must commit like any other."""
    pytest.importorskip("hermes_compressor")
    from hermes_host.host import ContextHost

    config = make_config("compressor", summarizer={"provider": "offline"})
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("deep", "You are terse.")
        for n in range(6):
            session.add_user(f"question {n}: " + "lorem ipsum " * 30)
            call = {"id": f"call_{n}", "type": "function",
                    "function": {"name": "terminal", "arguments": arguments}}
            session.add_assistant(None, [call])
            session.add_tool_result(f"call_{n}", "ok " * 200, name="terminal")
            session.add_assistant(f"answer {n}: " + "amet " * 30)
        report = session.compress(force=True)
        assert report.outcome != "error", report.message
        assert report.status == "committed", report


def test_deep_json_arguments_are_still_redacted_as_text() -> None:
    arguments = "[" * 3000 + json.dumps(f"key={SECRET}") + "]" * 3000
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "x", "arguments": arguments}}]}
    (cleaned,) = redact_messages([message])
    assert SECRET not in json.dumps(cleaned)


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_a_write_between_marker_and_window_reads_is_not_stored_twice(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_rel_concurrency at the full size: a session that takes the window from
    the store (another process wrote) read the window marker, then the window; a message
    appended in between was in the window the engine compressed but not in the snapshot the
    publish was given, so the publish carried it over *and* wrote the engine's copy: two rows
    of one message.  The interleaving is forced here: process B appends right before A reads
    the window."""
    from hermes_host.store import open_store
    from tests.host_helpers import TailEngine, chat_turn, make_host

    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9),
                   compression={"mode": mode}) as host_a, \
            make_host(tmp_path, TailEngine(keep=1, threshold=10**9),
                      compression={"mode": mode}) as host_b:
        a = host_a.open_session("race", "You are terse.")
        for n in range(3):
            chat_turn(a, n, size=5)
        b = host_b.resume("race")
        b.add_user("B-FIRST written by the other process")  # A must follow the store now
        real = host_a.store.active_messages
        reads: list[str] = []
        injected: list[bool] = []

        def active_messages(session_id: str) -> list[dict]:
            reads.append(session_id)
            if len(reads) == 2:  # the read under the compression lease
                b.add_assistant("B-RACE written between A's two reads")
                injected.append(True)
            return real(session_id)

        real_lease = host_a.store.acquire_lease

        def acquire_lease(session_id: str, ttl: float | None = None) -> object:
            b.add_user("B-SECOND")  # A takes the window from the store again under the lease
            return real_lease(session_id, ttl)

        monkeypatch.setattr(host_a.store, "active_messages", active_messages)
        monkeypatch.setattr(host_a.store, "acquire_lease", acquire_lease)
        report = a.compress(force=True)
        monkeypatch.undo()
        assert injected and report.status == "committed", report
    store = open_store(tmp_path / "state.db")
    try:
        tip = store.resume("race")
        rows = [r.message.get("content") for sid in store.lineage(tip.id)
                for r in store.all_messages(sid)]
        window = [m.get("content") for m in store.active_messages(tip.id)]
    finally:
        store.close()
    assert rows.count("B-RACE written between A's two reads") == 1, rows
    assert window.count("B-RACE written between A's two reads") == 1, window
