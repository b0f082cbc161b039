"""ContextHost / Session: turn loop, compression pass, fences, guards, leases, injections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hermes_host.host import COMPACTED_MARKER, COMPACTING_MARKER
from hermes_host.injections import Injection, InjectionError
from hermes_host.messages import SUMMARY_METADATA_KEY, check_invariants
from hermes_host.store import Guards
from tests.host_helpers import (
    HangingEngine,
    OutcomeEngine,
    PreservingMemory,
    RaisingEngine,
    TailEngine,
    chat_turn,
    make_host,
)


def test_compression_rotates_and_fires_markers_R_8_1_R_10_4(tmp_path: Path) -> None:
    engine = TailEngine(keep=2, threshold=600)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(title="proj", system_prompt="You are terse.")
        first = session.id
        outcomes = []
        for n in range(6):
            chat_turn(session, n)
            outcomes.append(session.end_turn())
        committed = [o for o in outcomes if o.status == "committed"]
        assert committed, [o.decision for o in outcomes]
        o = committed[0]
        assert o.events[0] == COMPACTING_MARKER and o.events[-1] == COMPACTED_MARKER
        assert session.id != first and session.lineage[0] == first
        assert host.store.lineage(session.id)[0] == first
        # the lineage keeps everything, each message once: compression is not a delete
        # the rotated parent holds what the compression replaced, archived
        stored = [r for sid in host.store.lineage(session.id) for r in host.store.all_messages(sid)]
        originals = [r for r in stored if not r.message.get(SUMMARY_METADATA_KEY)]
        assert len(originals) == 6 * 4
        assert len({json.dumps(r.message, sort_keys=True) for r in originals}) == 6 * 4
        assert not any(r.active for r in host.store.all_messages(first))
        report = o.compression
        assert report is not None and report.tokens_after < report.tokens_before
        assert check_invariants(session.window()) == []


def test_prompt_cache_invariant_200_turns_R_1_3(tmp_path: Path) -> None:
    engine = TailEngine(keep=3, threshold=1500)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="System prompt that must never change.")
        for n in range(200):
            chat_turn(session, n, size=5)
            session.end_turn()
        assert session.compression_count >= 5
        assert session.cache_checks >= 400 - 1 - session.compression_count
        assert session.cache_violations == 0
        # the check can fail: rewriting a past message without a compression is caught
        session._window[0] = {**session._window[0], "content": "rewritten history"}
        session._window_cache = None
        session.add_user("one more")
        session.build_request()
        assert session.cache_violations == 1


def test_turn_scoped_injections_never_persist_R_2_1_R_2_2(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    doc.write_text("FILE-BODY-7731", encoding="utf-8")
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 32)
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        session.add_user("look at this")
        request = session.build_request(
            [
                Injection.file(doc),
                Injection.attachment("report.pdf", "ATTACHED-TEXT-55"),
                Injection.todo([("write tests", True), "ship"]),
                "OUT-OF-BAND-NOTE",
                Injection.image(png),
                Injection.document(tmp_path / "big.pdf", "the Q3 report, 80 pages"),
                Injection.audio("memo.m4a", "AUDIO-TRANSCRIPT-31"),
            ]
        )
        wire = json.dumps(request)
        for marker in (
            "FILE-BODY-7731", "ATTACHED-TEXT-55", "OUT-OF-BAND-NOTE", "[x] write tests",
            "big.pdf: the Q3 report", "AUDIO-TRANSCRIPT-31",
        ):
            assert marker in wire
        assert "data:image/png;base64," in wire
        assert check_invariants(request) == []
        session.add_assistant("seen")
        session.end_turn()
        session.add_user("next")
        following = json.dumps(session.build_request())
        stored = json.dumps([m.message for m in host.store.all_messages(session.id)])
        for marker in (
            "FILE-BODY-7731", "ATTACHED-TEXT-55", "OUT-OF-BAND-NOTE", "base64", "big.pdf",
            "AUDIO-TRANSCRIPT-31",
        ):
            assert marker not in following
            assert marker not in stored
        with pytest.raises(InjectionError, match="no such file"):
            Injection.file(tmp_path / "missing.txt")


@pytest.mark.parametrize("engine_cls", [HangingEngine, RaisingEngine])
def test_hung_or_raising_engine_leaves_session_unchanged_R_0_4(
    tmp_path: Path, engine_cls: type
) -> None:
    engine = engine_cls()
    with make_host(
        tmp_path, engine, name="bad", hooks={"timeouts": {"compress": 0.5}}
    ) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        sid, window = session.id, session.window()
        stored = [m.message for m in host.store.all_messages(sid)]
        start = time.monotonic()
        outcome = session.end_turn()
        assert time.monotonic() - start < 5
        assert outcome.status == "rejected"
        assert outcome.compression is not None
        assert outcome.compression.outcome in ("timeout", "error")
        assert "session unchanged" in (outcome.compression.message or "")
        assert session.id == sid and session.window() == window
        assert [m.message for m in host.store.all_messages(sid)] == stored
        assert host.store.lineage(sid) == [sid]
        # the lease was released: a later pass can take it
        lease = host.store.acquire_lease(sid)
        assert type(lease).__name__ == "Lease"
        host.store.release_lease(lease)
    if isinstance(engine, HangingEngine):
        engine.release.set()


def test_should_compress_failure_falls_back_to_host_rule(tmp_path: Path) -> None:
    engine = RaisingEngine(decide_raises=True)
    with make_host(tmp_path, engine, name="bad") as host:
        session = host.open_session(system_prompt="sys")
        session.add_user("hi")
        outcome = session.end_turn()
        assert outcome.decided_by == "host"
        assert outcome.decision.reason == "below_threshold"
        assert outcome.decision.threshold_tokens == 2000  # 4000 × 0.50


def test_lock_contention_from_another_process_defers_R_10_1(tmp_path: Path) -> None:
    engine = TailEngine(keep=1, threshold=100)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        chat_turn(session, 2)
        holder_script = textwrap.dedent(
            f"""
            import sys
            from hermes_host.store import open_store
            store = open_store({str(tmp_path / "state.db")!r})
            lease = store.acquire_lease({session.id!r})
            print(lease.holder, flush=True)
            sys.stdin.readline()
            store.release_lease(lease)
            """
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", holder_script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            holder = proc.stdout.readline().strip()
            assert f"pid:{proc.pid}" in holder
            sid = session.id
            outcome = session.end_turn()
            assert outcome.deferred
            assert outcome.compression is not None
            assert outcome.compression.outcome == "compression_deferred"
            assert outcome.compression is not None
            assert outcome.compression.holder == holder
            assert holder in (outcome.compression.message or "")
            assert any(holder in e for e in outcome.events)
            assert session.id == sid and engine.compress_calls == 0
            # deferral is not exhaustion: the guards are untouched
            guards = host.store.read_guards(sid)
            assert guards.ineffective_count == 0 and guards.cooldown_until is None
        finally:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.close()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()
        assert session.end_turn().status == "committed"


def test_transient_failure_cooldown_and_force_clears_it_R_5_1(tmp_path: Path) -> None:
    engine = OutcomeEngine("failed_transient", cooldown=120.0, keep=1, threshold=100)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        first = session.end_turn()
        assert first.compression is not None and first.compression.status == "not_committed"
        guards = host.store.read_guards(session.id)
        assert guards.cooldown_until is not None and guards.cooldown_until > time.time() + 100
        chat_turn(session, 2)
        blocked = session.end_turn()
        assert blocked.status == "continued"
        assert (blocked.decision.reason or "").startswith("cooldown:")
        assert engine.compress_calls == 1
        engine.outcome = "summarised"
        report = session.compress(force=True)
        assert report.status == "committed"
        assert host.store.read_guards(session.id).cooldown_until is None


def test_anti_thrash_stops_after_two_ineffective_R_5_2(tmp_path: Path) -> None:
    engine = OutcomeEngine("noop", threshold=100)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(6):
            chat_turn(session, n)
            session.end_turn()
        # after two no-ops, each further attempt needs the window to have grown by 25 %
        # (guards.REARM_GROWTH) since the last one: while it has not, the turn is blocked
        guards = host.store.read_guards(session.id)
        assert guards.ineffective_count >= 2
        attempts = engine.compress_calls
        assert attempts < 6
        size = guards.ineffective_tokens
        assert size is not None
        while session.window_tokens < size * 1.2:
            session.add_user("short note")
            session.add_assistant("ok")
            assert session.end_turn().decision.reason == "ineffective"
        assert engine.compress_calls == attempts


def test_fallback_streak_stops_automatic_compression_R_5_2(tmp_path: Path) -> None:
    engine = OutcomeEngine("fallback", keep=1, threshold=100)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(6):
            chat_turn(session, n)
            session.end_turn()
        assert engine.compress_calls == 2
        assert host.store.read_guards(session.id).fallback_streak == 2


def test_memory_provider_text_reaches_engine_and_system_prompt_R_11_4_R_13_1(
    tmp_path: Path,
) -> None:
    (tmp_path / "MEMORY.md").write_text("- prefers pytest over unittest\n", encoding="utf-8")
    engine = TailEngine(keep=1, threshold=100)
    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost

    config = HermesConfig.model_validate(
        {
            "context": {"engine": "tail"},
            "memory": {"providers": ["markdown", "keeper"], "directory": str(tmp_path)},
        }
    )
    with ContextHost.from_config(
        config,
        store=tmp_path / "state.db",
        extra_plugins={"tail": engine, "keeper": PreservingMemory()},
    ) as host:
        session = host.open_session(system_prompt="base prompt")
        assert session.system_prompt.startswith("base prompt")
        assert "prefers pytest over unittest" in session.system_prompt
        assert host.store.get_session(session.id).system_prompt == session.system_prompt
        chat_turn(session, 1)
        chat_turn(session, 2)
        session.compress(force=True)
        context = engine.memory_contexts[-1] or ""
        assert "ops/deploy" in context and "prefers pytest" in context


def test_preview_publishes_nothing_and_resume_by_title(tmp_path: Path) -> None:
    engine = TailEngine(keep=1, threshold=10**9)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(title="my project", system_prompt="sys")
        chat_turn(session, 1)
        chat_turn(session, 2)
        sid = session.id
        host.store.write_guards(sid, Guards(ineffective_count=2))
        preview = session.compress(preview=True)
        assert preview.status == "preview" and preview.proposed
        assert host.store.read_guards(sid).ineffective_count == 2  # a preview changes nothing
        assert COMPACTED_MARKER not in session.events
        assert session.id == sid and host.store.lineage(sid) == [sid]
        report = session.compress(force=True, focus="tests")
        assert report.status == "committed"
    with make_host(tmp_path, engine) as host:
        resumed = host.resume("my project")
        assert resumed.id == report.session_id
        assert resumed.system_prompt == "sys"
        assert check_invariants(resumed.window()) == []
        assert host.resume("last").id == report.session_id


def test_memory_callbacks_are_broadcast_and_fenced_one_by_one_R_14_4(tmp_path: Path) -> None:
    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost
    from tests.host_helpers import BrokenProvider, RecordingProvider

    recorder = RecordingProvider()
    engine = TailEngine(keep=1, threshold=10**9)
    config = HermesConfig.model_validate(
        {"context": {"engine": "tail"}, "memory": {"providers": ["broken", "rec", "keeper"]}}
    )
    with ContextHost.from_config(
        config,
        store=tmp_path / "state.db",
        extra_plugins={
            "tail": engine, "broken": BrokenProvider(), "rec": recorder,
            "keeper": PreservingMemory(),
        },
    ) as host:
        session = host.open_session(system_prompt="sys")
        assert session.system_prompt == "sys"  # the raising provider added nothing
        first = session.id
        chat_turn(session, 1)
        session.end_turn()
        chat_turn(session, 2)
        report = session.compress(force=True)
        assert report.status == "committed"
        assert "ops/deploy" in (engine.memory_contexts[-1] or "")  # survived the broken one
        assert recorder.events[0] == ("start", first, "new")
        assert ("turn", first, "4") in recorder.events
        assert recorder.events[-2:] == [
            ("end", first, "compression"),
            ("switch", session.id, first),
        ]


def test_exported_session_id_follows_rotation_R_8_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_host.host import SESSION_ENV

    monkeypatch.delenv(SESSION_ENV, raising=False)
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys", cwd=str(tmp_path))
        assert session.cwd == str(tmp_path)
        other = host.open_session(system_prompt="sys")
        session.export_id()
        assert os.environ[SESSION_ENV] == session.id
        chat_turn(session, 1)
        chat_turn(session, 2)
        old = session.id
        assert session.compress(force=True).status == "committed"
        assert session.id != old and os.environ[SESSION_ENV] == session.id
        chat_turn(other, 1)
        chat_turn(other, 2)
        assert other.compress(force=True).status == "committed"
        assert os.environ[SESSION_ENV] == session.id  # another session's rotation: untouched
        assert host.resume(session.id).cwd == str(tmp_path)


def test_context_timeout_bounds_the_whole_pass_R_14_9(tmp_path: Path) -> None:
    engine = HangingEngine()
    with make_host(
        tmp_path, engine, name="slow", compression={"context_timeout_seconds": 0.6}
    ) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        sid = session.id
        start = time.monotonic()
        outcome = session.end_turn()  # compress's own limit is 120 s; the pass allows 0.6 s
        assert time.monotonic() - start < 3
        assert outcome.compression is not None
        assert (outcome.compression.status, outcome.compression.outcome) == ("rejected", "timeout")
        assert session.id == sid and host.store.lineage(sid) == [sid]
    engine.release.set()


def test_in_place_mode_keeps_the_id_and_never_doubles_the_window_R_8_2(tmp_path: Path) -> None:
    engine = TailEngine(keep=1, threshold=10**9)
    with make_host(tmp_path, engine, compression={"mode": "in_place"}) as host:
        session = host.open_session(system_prompt="sys")
        chat_turn(session, 1)
        chat_turn(session, 2)
        sid = session.id
        before = len(host.store.all_messages(sid))
        report = session.compress(force=True)
        assert report.status == "committed" and session.id == sid
        assert host.store.active_messages(sid) == session.raw_window
        chat_turn(session, 3)
        session.end_turn()
        assert host.store.active_messages(sid) == session.raw_window
        rows = host.store.all_messages(sid)
        # archived rows kept; the kept tail (turn 2) is not copied: only the summary and
        # turn 3 are new rows (the old expectation counted the copied tail)
        assert len(rows) == before + 1 + 4
        assert sum(1 for r in rows if not r.active) == before - 4


def test_status_marker_is_emitted_before_the_engine_runs_R_10_4(tmp_path: Path) -> None:
    seen: list[str] = []

    class Watching(TailEngine):
        def _tail(self, request):  # type: ignore[no-untyped-def]
            self.seen_at_compress = list(seen)
            return super()._tail(request)

    engine = Watching(keep=1, threshold=10**9)
    with make_host(tmp_path, engine) as host:
        session = host.open_session(system_prompt="sys")
        session.on_event = seen.append
        chat_turn(session, 1)
        chat_turn(session, 2)
        assert session.compress(force=True).status == "committed"
        assert engine.seen_at_compress == [COMPACTING_MARKER]
        assert seen == [COMPACTING_MARKER, COMPACTED_MARKER]
        session.on_event = lambda line: 1 / 0  # a broken display callback breaks nothing
        chat_turn(session, 3)
        chat_turn(session, 4)
        assert session.compress(force=True).status == "committed"


def test_status_reports_tokens_context_use_and_guards_R_12_1(tmp_path: Path) -> None:
    with make_host(tmp_path, OutcomeEngine("failed_transient", cooldown=60, threshold=100)) as host:
        session = host.open_session(title="st", system_prompt="sys")
        chat_turn(session, 1)
        session.end_turn()
        status = session.status()
        assert status["session_id"] == session.id and status["title"] == "st"
        assert status["window_tokens"] == session.window_tokens > 0
        assert status["context_length"] == 4000
        assert status["context_used"] == round(session.window_tokens / 4000, 4)
        # the engine decides (current_tokens > 100) without naming a threshold: status no
        # longer reports the host's 2,000 it does not use (issue 12)
        assert status["threshold_tokens"] is None
        assert status["threshold"] == {"tokens": None, "decided_by": "engine:tail"}
        assert str(status["blocked"]).startswith("cooldown:")
        assert status["engines"]["compress"] == ["tail"]
        json.dumps(status)  # JSON-ready


def test_second_host_follows_a_rotation_instead_of_publishing_over_it_R_8_1(
    tmp_path: Path,
) -> None:
    engine = TailEngine(keep=1, threshold=10**9)
    with make_host(tmp_path, engine) as host_a, make_host(tmp_path, engine) as host_b:
        a = host_a.open_session(title="shared", system_prompt="sys")
        chat_turn(a, 1)
        chat_turn(a, 2)
        b = host_b.resume(a.id)  # a second host serving the same session
        assert a.compress(force=True).status == "committed"
        old = b.id
        report = b.compress(force=True)
        assert b.id == a.id and b.lineage == [old, a.id]  # followed, not refused
        assert b.raw_window == a.raw_window
        assert report.status == "not_committed"  # the window it now sees is compressed
        assert any("another process changed this conversation" in e for e in b.events)
        assert host_b.store.lineage(a.id) == [old, a.id]  # nothing published over it
        assert host_b.resume("shared").id == a.id  # resume by title finds the newest
