"""A live ``Session`` follows what *another process* did to its conversation (R-8.1, R-8.2).

Gateway workers can take turns on one conversation.  Each test runs a real second process
(``python -c``) against the same SQLite file: it resumes the conversation, appends a turn,
and/or compresses it (rotate or in place), then exits.  The test's own session must then
continue from the store — right id, right window, nothing lost, nothing written to a rotated
parent — and its next compression must work instead of being refused as stale.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hermes_host.host import ContextHost, Session
from hermes_host.messages import check_invariants
from tests.host_helpers import RecordingProvider, TailEngine, chat_turn, make_config, make_host

ROOT = Path(__file__).resolve().parents[1]

_OTHER = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [{root!r}, {tests!r}]
    from pathlib import Path
    from tests.host_helpers import TailEngine, chat_turn, make_host
    with make_host(Path({tmp!r}), TailEngine(keep=1, threshold=10**9),
                   compression={{"mode": {mode!r}}}) as host:
        session = host.resume({session!r})
        for n in {turns!r}:
            chat_turn(session, n)
        report = session.compress(force=True) if {compress!r} else None
        print(json.dumps({{"id": session.id, "status": report and report.status,
                          "window": session.raw_window}}))
    """
)


def _other_process(tmp_path: Path, session: str, *, turns: list[int], compress: bool,
                   mode: str = "rotate") -> dict[str, Any]:
    script = _OTHER.format(root=str(ROOT), tests=str(ROOT / "tests"), tmp=str(tmp_path),
                           mode=mode, session=session, turns=turns, compress=compress)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _texts(session: Session) -> list[str]:
    return [str(m.get("content") or "") for m in session.raw_window]


def test_rotation_by_another_process_is_followed_R_8_1(tmp_path: Path) -> None:
    provider = RecordingProvider()
    config = make_config("tail", memory={"providers": ["recorder"]})
    with ContextHost.from_config(
        config, store=tmp_path / "state.db",
        extra_plugins={"tail": TailEngine(keep=1, threshold=10**9), "recorder": provider},
    ) as host:
        mine = host.open_session(title="shared", system_prompt="sys")
        chat_turn(mine, 1)
        chat_turn(mine, 2)
        parent = mine.id
        parent_rows = len(host.store.all_messages(parent))
        other = _other_process(tmp_path, parent, turns=[3], compress=True)
        assert other["status"] == "committed" and other["id"] != parent

        mine.add_user("question 4: after the other worker compressed")
        assert mine.id == other["id"] and mine.lineage == [parent, other["id"]]
        assert mine.raw_window[:-1] == other["window"]
        assert host.store.active_messages(mine.id) == mine.raw_window
        # Nothing of ours went to the rotated parent; it keeps only the rows the other
        # worker's compression replaced (its kept tail moved to the child, stored once).
        left = host.store.all_messages(parent)
        assert len(left) == parent_rows and not any(r.active for r in left)
        assert not any("question 4" in str(r.message.get("content")) for r in left)
        assert any("now session " + other["id"] in e for e in mine.events)
        assert ("switch", other["id"], parent) in provider.events
        request = mine.build_request()
        assert request[0] == {"role": "system", "content": "sys"}
        assert check_invariants(mine.raw_window) == []
        mine.add_assistant("answer 4")
        chat_turn(mine, 5)
        chat_turn(mine, 6)
        report = mine.compress(force=True)
        assert report.status == "committed", report.message  # not refused as stale
        assert host.store.lineage(mine.id) == [parent, other["id"], mine.id]
        assert mine.cache_violations == 0


def test_appends_by_another_process_join_the_window_in_store_order(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        mine = host.open_session(system_prompt="sys")
        chat_turn(mine, 1)
        other = _other_process(tmp_path, mine.id, turns=[2], compress=False)
        assert other["id"] == mine.id
        request = mine.build_request()
        assert mine.raw_window == other["window"] == host.store.active_messages(mine.id)
        assert any("question 2" in str(m.get("content")) for m in request)
        chat_turn(mine, 3)
        assert host.store.active_messages(mine.id) == mine.raw_window
        assert [t.split(":")[0] for t in _texts(mine) if t.startswith("question")] == [
            "question 1", "question 2", "question 3"]
        assert mine.cache_violations == 0  # appended elsewhere: the prefix still holds


def test_in_place_compression_by_another_process_is_taken_R_8_2(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9),
                   compression={"mode": "in_place"}) as host:
        mine = host.open_session(system_prompt="sys")
        for n in (1, 2, 3):
            chat_turn(mine, n)
        epoch = mine.compression_epoch
        other = _other_process(tmp_path, mine.id, turns=[], compress=True, mode="in_place")
        assert other["status"] == "committed" and other["id"] == mine.id
        end = mine.end_turn()
        assert mine.raw_window == other["window"] == host.store.active_messages(mine.id)
        assert mine.compression_count == 1 and mine.compression_epoch == epoch + 1
        assert end.window_tokens < 600
        chat_turn(mine, 4)
        mine.build_request()
        assert mine.cache_violations == 0  # the rewrite counts as a compression, not a breach


@pytest.mark.parametrize("turns", [20])
def test_own_writes_never_reload_the_window(tmp_path: Path, turns: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with make_host(tmp_path, TailEngine(keep=2, threshold=1500)) as host:
        session = host.open_session(system_prompt="sys")
        reads = []
        real = host.store.active_messages
        monkeypatch.setattr(host.store, "active_messages",
                            lambda sid: reads.append(sid) or real(sid))
        for n in range(turns):
            chat_turn(session, n)
            session.end_turn()
        session.undo(1)
        chat_turn(session, 99)
        assert session.compression_count >= 3  # rotations of our own happened
        assert reads == []  # ... and none of them, nor the undo, looked like someone else's
        assert host.store.active_messages(session.id) == session.raw_window


def test_resuming_a_rotated_id_continues_at_its_newest_descendant_R_8_3(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(keep=1, threshold=10**9)) as host:
        first = host.open_session(system_prompt="sys")
        chat_turn(first, 1)
        chat_turn(first, 2)
        root = first.id
        assert first.compress(force=True).status == "committed"
        chat_turn(first, 3)
        again = host.resume(root)
        assert again.id == first.id != root and again.lineage == [root, first.id]
        assert again.raw_window == first.raw_window
        again.add_user("question 4: from the resumed session")
        assert host.store.active_messages(first.id)[-1]["content"].startswith("question 4")
        assert not any(str(m.get("content") or "").startswith("question 4")
                       for m in host.store.active_messages(root))
