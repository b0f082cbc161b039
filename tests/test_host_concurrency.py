"""Two hosts on one store lose nothing while one of them compresses (R-8.1, R-8.2, R-9.4).

Host A's engine is slow; while it works on a snapshot of the window, host B appends to the
same conversation.  When A publishes, B's messages must be in the new window — the one a
fresh resume sees and the one B sends next — in both publish modes, and an in-place publish
must not mark them ``compacted`` (they were never summarised).  The last test runs two real
processes taking turns on one conversation and checks that every message either is in the
final window or is named by a summary in it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes_host import CompressRequest, CompressResult, hookimpl
from hermes_host.host import CompressionReport
from hermes_host.store import StaleSessionError, open_store
from tests.host_helpers import TailEngine, chat_turn, make_host

ROOT = Path(__file__).resolve().parents[1]


class SlowTailEngine(TailEngine):
    """A :class:`TailEngine` whose ``compress`` waits until the test releases it."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.entered = threading.Event()
        self.release = threading.Event()

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        self.entered.set()
        assert self.release.wait(30), "the test never released the engine"
        return self._tail(request)


def _texts(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_messages_appended_during_a_slow_compression_stay_in_the_window(
    tmp_path: Path, mode: str
) -> None:
    slow = SlowTailEngine(keep=1, threshold=10**9)
    with make_host(tmp_path, slow, compression={"mode": mode}) as host_a, make_host(
        tmp_path, TailEngine(keep=1, threshold=10**9), compression={"mode": mode}
    ) as host_b:
        a = host_a.open_session("shared", "You are terse.")
        for n in range(4):
            chat_turn(a, n, size=5)
        b = host_b.resume("shared")
        reports: list[CompressionReport] = []
        worker = threading.Thread(target=lambda: reports.append(a.compress(force=True)))
        worker.start()
        assert slow.entered.wait(30)
        b.add_assistant("B-ANSWER written while A compresses")
        b.add_user("B-QUESTION written while A compresses")
        slow.release.set()
        worker.join(30)
        assert reports and reports[0].status == "committed", reports

        fresh = host_b.resume("shared")
        assert fresh.id == a.id
        window = _texts(fresh.raw_window)
        assert "B-ANSWER" in window and "B-QUESTION" in window
        assert "question 0" not in window  # the compression itself was published
        assert "B-QUESTION" in _texts(b.build_request())
        assert b.id == a.id
        assert "B-QUESTION" in _texts(a.raw_window)  # A's live window carried them too

        rows = host_b.store.all_messages(fresh.id)
        b_rows = [r for r in rows if str(r.message.get("content") or "").startswith("B-")]
        assert len(b_rows) == 2
        assert all(r.active and not r.compacted for r in b_rows)
        if mode == "rotate":
            parent = host_b.store.all_messages(fresh.lineage[-2])
            assert not [r for r in parent if r.active], "a rotated parent keeps no window"
        # one conversation, one id, whatever the rotations (what a framework id maps to)
        first = fresh.lineage[0]
        assert a.conversation_id == b.conversation_id == fresh.conversation_id == first
        assert fresh.status()["conversation_id"] == first
        assert host_b.store.get_session(fresh.id).conversation_id == first


def test_append_to_a_rotated_parent_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        session = host.open_session("rotating", "sys")
        for n in range(3):
            chat_turn(session, n, size=20)
        parent = session.id
        assert session.compress(force=True).status == "committed"
        before = host.store.all_messages(parent)
        with pytest.raises(StaleSessionError, match="compressed into"):
            host.store.append_messages(parent, [{"role": "user", "content": "late"}])
        assert host.store.all_messages(parent) == before


_WORKER = textwrap.dedent(
    """
    import fcntl, re, sys, time
    sys.path[:0] = [{root!r}]
    from pathlib import Path
    from hermes_host import CompressRequest, CompressResult, hookimpl
    from tests.host_helpers import TailEngine, chat_turn, make_host

    class NamingTail(TailEngine):
        # The summary names every message it replaces ("<kind> <n>"), and carries the
        # names of the summaries it replaces, so 'nothing lost' can be checked exactly.
        @hookimpl
        def compress(self, request: CompressRequest) -> CompressResult:
            time.sleep(0.02)  # long enough for the other process to write meanwhile
            result = self._tail(request)
            if result.outcome != "summarised":
                return result
            kept = {{id(m) for m in result.messages}}
            names = []
            for m in request.messages[1:]:
                if id(m) not in kept:
                    names += re.findall(r"(?:question|looking|result|answer) [0-9]+",
                                        str(m.get("content") or ""))
            summary = dict(result.messages[1])
            summary["content"] = "SUMMARY OF " + " | ".join(names)
            return result.model_copy(update={{"messages": [result.messages[0], summary,
                                                          *result.messages[2:]]}})

    with make_host(Path({tmp!r}), NamingTail(keep=1, threshold=2500), "tail",
                   model={{"context_length": 16000, "max_output_tokens": 500}},
                   compression={{"mode": {mode!r}}}) as host:
        session = host.resume("shared")
        with open({lock!r}, "w") as lock:
            for n in range({first}, {first} + {turns}):
                # One turn's messages are written without the other process's in between
                # (workers take turns); compressing runs outside the turn, so the other
                # process appends while this one's engine works.
                fcntl.flock(lock, fcntl.LOCK_EX)
                chat_turn(session, n, size=20)
                fcntl.flock(lock, fcntl.LOCK_UN)
                session.end_turn()
    """
)

@pytest.mark.parametrize("mode", ["rotate", "in_place"])
def test_two_processes_taking_turns_lose_no_message(tmp_path: Path, mode: str) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        host.open_session("shared", "You are terse.")
    turns = 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER.format(root=str(ROOT), tmp=str(tmp_path), mode=mode,
                                                  first=first, turns=turns,
                                                  lock=str(tmp_path / "turn.lock"))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for first in (0, 1000)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    store = open_store(tmp_path / "state.db")
    try:
        tip = store.resume("shared")
        window = _texts(store.active_messages(tip.id))
        lineage = store.lineage(tip.id)
        compressions = tip.compression_count
    finally:
        store.close()
    assert compressions >= 2, "the test must exercise compressions while both write"
    if mode == "rotate":
        assert len(lineage) == compressions + 1
    wanted = {(kind, n) for first in (0, 1000) for n in range(first, first + turns)
              for kind in ("question", "looking", "result", "answer")}
    present = {(kind, int(n)) for kind, n in re.findall(r"\b(question|looking|result|answer) "
                                                          r"(\d+)", window)}
    missing = sorted(wanted - present)
    assert not missing, f"{len(missing)} messages missing from the window: {missing[:10]}"
