"""Session operations behind the slash commands: /undo, /branch, /title (R-12.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.messages import check_invariants
from hermes_host.store import TitleConflictError
from tests.host_helpers import TailEngine, chat_turn, make_host


def test_undo_archives_the_last_turns_and_keeps_them_searchable(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(3):
            chat_turn(session, n)
        session.add_user("UNDO-ME please")
        sid = session.id
        assert session.undo(2) == 5  # the half-finished turn and turn 2 (4 messages)
        assert session.id == sid
        window = session.raw_window
        assert len(window) == 8 and window[-1]["content"].startswith("answer 1")
        assert host.store.active_messages(sid) == window
        assert check_invariants(session.build_request()) == []
        archived = [r.message for r in host.store.all_messages(sid) if not r.active]
        assert any(m.get("content") == "UNDO-ME please" for m in archived)
        assert host.store.session_search("UNDO-ME", session_id=sid)
        # An undo is not a compression: no count, and the rows are not marked compacted.
        assert host.store.get_session(sid).compression_count == 0
        assert not any(r.compacted for r in host.store.all_messages(sid) if not r.active)
        session.add_user("next question")
        assert session.build_request()[-1] == {"role": "user", "content": "next question"}
        with pytest.raises(ValueError):
            session.undo(0)


def test_undo_archives_rows_instead_of_republishing_the_window(tmp_path: Path) -> None:
    """3 undos on 6 messages used to leave 12 rows (the remaining window republished as
    new rows each time), with new ids and the same message found 3 times by search."""
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        for n in range(3):
            session.add_user(f"KEEPSAKE question {n}")
            session.add_assistant(f"answer {n}")
        sid = session.id
        ids = [r.id for r in host.store.all_messages(sid)]
        assert len(ids) == 6
        for left in (4, 2, 0):
            assert session.undo(1) == 2
            rows = host.store.all_messages(sid)
            assert [r.id for r in rows] == ids  # the same six rows, ids unchanged
            assert [r.id for r in rows if r.active] == ids[:left]
        hits = host.store.session_search("KEEPSAKE question 0", session_id=sid, limit=50)
        assert [h.message_id for h in hits].count(ids[0]) == 1
        assert len({(h.role, h.content) for h in hits}) == len(hits)  # no stored copies
        assert not any(r.compacted for r in host.store.all_messages(sid))


def test_branch_forks_the_window_and_leaves_the_original(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(title="main line", system_prompt="sys")
        chat_turn(session, 1)
        fork = session.branch("experiment")
        assert fork.id != session.id and fork.title == "experiment"
        assert fork.raw_window == session.raw_window
        assert host.store.get_session(fork.id).parent_session_id == session.id
        fork.add_user("only in the fork")
        assert len(session.raw_window) == 4 and len(fork.raw_window) == 5
        assert len(host.store.active_messages(session.id)) == 4
        assert fork.build_request()[0] == {"role": "system", "content": "sys"}


def test_title_is_unique(tmp_path: Path) -> None:
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        first = host.open_session(title="alpha", system_prompt="sys")
        second = host.open_session(system_prompt="sys")
        second.set_title("beta")
        assert host.store.get_session(second.id).title == "beta"
        with pytest.raises(TitleConflictError):
            second.set_title(first.title or "")
        assert host.resume("beta").id == second.id


def test_undo_counts_turns_as_the_chat_does_a_summary_block_is_not_one(tmp_path: Path) -> None:
    from hermes_host.messages import SUMMARY_METADATA_KEY, turn_starts

    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        session.add_user("head question")
        session.add_assistant("head answer")
        session.add_message({"role": "user", "content": "[summary of the middle]",
                             SUMMARY_METADATA_KEY: True})
        session.add_assistant("continuing")
        session.add_user("last question")
        session.add_assistant("last answer")
        assert len(turn_starts(session.raw_window)) == 2  # what /undo offers in the chat
        assert session.undo(1) == 2
        assert session.raw_window[-1]["content"] == "continuing"
        assert session.undo(1) == 4  # the head turn, and the summary that followed it
        assert session.raw_window == []
