"""SIGKILL at random moments loses no acknowledged message (issue 13; R-8.1, R-8.2, R-1.2).

A real child process (forked from the warm test process) works on a real SQLite file and
acknowledges every message the store accepted by appending it, as JSON, to an ack file *after*
the call returned.  The parent SIGKILLs it at a random moment, then checks:

* ``PRAGMA integrity_check`` and both FTS integrity checks pass;
* every acknowledged message is stored exactly once in the conversation (the rows of all its
  sessions together: a rotation moves the kept rows to the child, it does not copy them), and
  is either in the live window or archived as summarised (``compacted``);
* the conversation resumes through the host and its window validates
  (:func:`~hermes_host.messages.validate_messages`, no invariant violation) — and the next
  trial's child carries on with that very session.

Three workloads: turns through the real compressor (offline summariser) with the
``in_place`` and the ``rotate`` publish mode, and bulk appends as ``sessions import`` makes
them.  Sizes: ``HERMES_HOST_RELIABILITY_SIZE`` (``ci`` small, ``full`` ≥ 1,000 trials).

Disk full during publish: a real full file system (a 4 MiB tmpfs, mounted when running as
root) and SQLite's own size limit (``PRAGMA max_page_count`` on the store's connection); both
must give a clear error, change nothing, and let the same compression succeed once there is
space again.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_figures import record, scaled
from store_helpers import fork_child, fts_integrity, kill_at_random

from hermes_host.host import COMPACTED_MARKER, COMPACTING_MARKER, ContextHost
from hermes_host.messages import check_invariants, validate_messages
from hermes_host.models import Message
from hermes_host.store import StoreError, open_store
from hermes_host.store.sqlite import SQLiteStore
from hermes_host.tokens import count_text
from tests.host_helpers import chat_turn, make_config

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)"),
]

pytest.importorskip("hermes_compressor")

TITLE = "crash"
TURN_TRIALS = scaled(8, 400)  # per publish mode
BULK_TRIALS = scaled(8, 300)
BULK_BATCH = 40


def _config(mode: str) -> Any:
    return make_config(
        "compressor",
        summarizer={"provider": "offline"},
        model={"context_length": 2000, "max_output_tokens": 100},
        compression={"mode": mode},
    )


def _turn(trial: int, n: int) -> list[Message]:
    """One turn with text unique to (trial, n): user, tool call, tool result, answer."""
    tag = f"t{trial}n{n}"
    call = {"id": f"call_{tag}", "type": "function",
            "function": {"name": "grep", "arguments": json.dumps({"pattern": tag})}}
    return [
        {"role": "user", "content": f"question {tag}: " + "lorem ipsum " * 12},
        {"role": "assistant", "content": f"looking {tag}", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{tag}", "name": "grep",
         "content": f"result {tag}: " + "dolor sit " * 12},
        {"role": "assistant", "content": f"answer {tag}: " + "amet " * 12},
    ]


def _acked(path: Path) -> tuple[list[Message], Counter[str]]:
    """The acknowledged messages, and the markers (compaction started / finished) seen."""
    messages: list[Message] = []
    markers: Counter[str] = Counter()
    if not path.exists():
        return messages, markers
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.endswith("}"):
            continue  # never happens with one write() per line, but a torn line is not an ack
        row = json.loads(line)
        if "marker" in row:
            markers[row["marker"]] += 1
        else:
            messages.append(row["message"])
    return messages, markers


def _conversation_rows(db: Path) -> tuple[list[Any], set[str], str]:
    """Every stored row of the conversation titled ``TITLE`` (all its sessions), the ids of
    the tip's active rows' messages (as canonical JSON) and the tip id."""
    store = open_store(db)
    try:
        tip = store.resume(TITLE)
        rows = [row for sid in store.lineage(tip.id) for row in store.all_messages(sid)]
        live = {json.dumps(m, sort_keys=True) for m in store.active_messages(tip.id)}
        return rows, live, tip.id
    finally:
        store.close()


def _check_after_kill(db: Path, acked: list[Message], config: Any) -> None:
    fts_integrity(db)
    rows, live, tip = _conversation_rows(db)
    stored = Counter(json.dumps(r.message, sort_keys=True) for r in rows)
    compacted = {json.dumps(r.message, sort_keys=True) for r in rows if r.compacted}
    for message in acked:
        key = json.dumps(message, sort_keys=True)
        assert stored[key] == 1, f"acknowledged message stored {stored[key]} times: {key[:120]}"
        assert key in live or key in compacted, f"acked, neither live nor summarised: {key[:99]}"
    with ContextHost.from_config(config, store=db) as host:
        session = host.resume(TITLE)
        assert session.id == tip
        window = session.window()
        validate_messages(window)
        assert check_invariants(window) == [], check_invariants(window)


def _ack(fd: int, row: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode())


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_sigkill_during_turns_with_compression_loses_no_acked_message(
    tmp_path: Path, mode: str
) -> None:
    db = tmp_path / "state.db"
    config = _config(mode)
    with ContextHost.from_config(config, store=db) as host:
        host.open_session(TITLE, "You are a careful coding agent.")
    count_text("warm the tokenizer before forking")
    rng = random.Random(f"turns-{mode}")
    acks = tmp_path / "acks.jsonl"
    markers: Counter[str] = Counter()
    in_compaction = 0
    total_acked = 0

    for trial in range(TURN_TRIALS):

        def work(ready_fd: int, trial: int = trial) -> None:
            fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            child = ContextHost.from_config(config, store=db)
            session = child.resume(TITLE)
            session.on_event = lambda line: _ack(fd, {"marker": line}) if line in (
                COMPACTING_MARKER, COMPACTED_MARKER) else None
            os.write(ready_fd, b"r")
            for n in range(10**6):
                for message in _turn(trial, n):
                    session.add_message(message)
                    _ack(fd, {"message": message})
                    if message["role"] in ("user", "tool"):
                        session.build_request()
                session.end_turn()

        acks.unlink(missing_ok=True)
        pid, read_fd = fork_child(work)
        kill_at_random(pid, read_fd, rng, 0.6)
        acked, seen = _acked(acks)
        markers += seen
        in_compaction += seen[COMPACTING_MARKER] > seen[COMPACTED_MARKER]
        total_acked += len(acked)
        _check_after_kill(db, acked, config)

    rows, _, tip = _conversation_rows(db)
    store = open_store(db)
    try:
        compressions = store.get_session(tip).compression_count
        sessions = len(store.lineage(tip))
    finally:
        store.close()
    assert compressions >= 2, "the trials must run through compressions"
    assert total_acked > TURN_TRIALS, "the children must have written between kills"
    if mode == "rotate":
        assert sessions == compressions + 1
    record("sigkill", workload=f"turns, {mode} publish", trials=TURN_TRIALS,
           acked=total_acked, lost=0, duplicated=0, compressions=compressions,
           killed_mid_compaction=in_compaction, rows=len(rows))


def test_sigkill_during_bulk_appends_loses_no_acked_message(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = open_store(db)
    sid = store.create_session(title=TITLE, system_prompt="You are terse.").id
    store.close()
    config = _config("in_place")
    count_text("warm the tokenizer before forking")
    rng = random.Random("bulk")
    acks = tmp_path / "acks.jsonl"
    total_acked = 0
    for trial in range(BULK_TRIALS):

        def work(ready_fd: int, trial: int = trial) -> None:
            fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            child = open_store(db)
            assert isinstance(child, SQLiteStore)
            os.write(ready_fd, b"r")
            for batch in range(10**6):
                messages = [m for n in range(BULK_BATCH // 4)
                            for m in _turn(trial, batch * 1000 + n)]
                child.append_messages(sid, messages)
                for message in messages:
                    _ack(fd, {"message": message})
                if batch % 3 == 2:
                    child.index_pending()  # what `sessions import` does after its write

        acks.unlink(missing_ok=True)
        pid, read_fd = fork_child(work)
        kill_at_random(pid, read_fd, rng, 0.08)
        acked, _ = _acked(acks)
        total_acked += len(acked)
        _check_after_kill(db, acked, config)
        # a batch is one transaction: the rows of this trial come in whole batches
        rows, _, _ = _conversation_rows(db)
        mine = [r for r in rows if f"t{trial}n" in str(r.message.get("content") or "")]
        assert len(mine) % BULK_BATCH == 0, f"a partial batch of {len(mine) % BULK_BATCH} rows"
    assert total_acked > BULK_TRIALS * BULK_BATCH // 2
    record("sigkill", workload="bulk appends (batches of 40, trigram catch-up)",
           trials=BULK_TRIALS, acked=total_acked, lost=0, duplicated=0, compressions=0,
           killed_mid_compaction=0, rows=len(rows))


# -- disk full during publish --------------------------------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB file system (tmpfs) — a disk that fills up for real."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root (the max_page_count test covers the limit)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(directory: Path) -> Path:
    """Write a file until the file system is full; returns it (delete it to free space)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def _session_before_publish(db: Path, mode: str) -> tuple[ContextHost, Any]:
    host = ContextHost.from_config(
        make_config("compressor", summarizer={"provider": "offline"},
                    model={"context_length": 100_000, "max_output_tokens": 100},
                    compression={"mode": mode}),
        store=db,
    )
    session = host.open_session("full", "You are terse.")
    for n in range(12):
        chat_turn(session, n, size=20)
    return host, session


def _assert_refused_and_unchanged(host: ContextHost, session: Any, before: list[Message],
                                  report: Any) -> None:
    assert report.status == "rejected", report
    assert report.outcome == "store_refused", report
    assert report.message and "full" in report.message and "session unchanged" in report.message
    assert session.raw_window == before
    assert host.store.active_messages(session.id)[-len(before):] == before


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_disk_full_during_publish_is_a_clear_error_and_loses_nothing(
    tiny_tmpfs: Path, mode: str
) -> None:
    """A real full disk (tmpfs), filled while the summariser works: the publish fails with
    the store's "disk is full" error; nothing changes; after space is freed the same
    compression commits."""
    db = tiny_tmpfs / "state.db"
    host, session = _session_before_publish(db, mode)
    try:
        before = session.raw_window
        fillers: list[Path] = []
        # The disk fills up while the summariser works: after the lease, before the publish.
        session.on_event = lambda line: fillers.append(_fill(tiny_tmpfs)) if (
            line == COMPACTING_MARKER and not fillers) else None
        report = session.compress(force=True)
        assert fillers, "the compression never started"
        _assert_refused_and_unchanged(host, session, before, report)
        with pytest.raises(StoreError, match="full"):
            session.add_user("written while the disk is full")
        fillers[0].unlink()
        assert session.raw_window == before
        again = session.compress(force=True)
        assert again.status == "committed", again
    finally:
        host.close()
    fts_integrity(db)
    store = open_store(db)
    try:
        tip = store.resume("full")
        rows = [r.message for sid in store.lineage(tip.id) for r in store.all_messages(sid)]
        for message in before:
            assert rows.count(message) == 1
    finally:
        store.close()
    record("disk_full", how="tmpfs of 4 MiB filled by a file", mode=mode, lost=0,
           error=report.message)


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_store_size_limit_during_publish_is_a_clear_error_and_loses_nothing(
    tmp_path: Path, mode: str
) -> None:
    """SQLite's own limit (``PRAGMA max_page_count`` on the store's connection, set to the
    pages in use): SQLITE_FULL at publish, the same clear error, nothing changed."""
    db = tmp_path / "state.db"
    host, session = _session_before_publish(db, mode)
    try:
        before = session.raw_window
        store = host.store
        assert isinstance(store, SQLiteStore)
        conn = store._conn()  # the limit is per connection: it must be the store's own
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        report = session.compress(force=True)
        _assert_refused_and_unchanged(host, session, before, report)
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert session.compress(force=True).status == "committed"
    finally:
        host.close()
    fts_integrity(db)
    conn2 = sqlite3.connect(db)
    try:
        texts = [row[0] for row in conn2.execute("SELECT content FROM messages")]
    finally:
        conn2.close()
    assert texts  # the rows are there for the check above to mean something
    record("disk_full", how="PRAGMA max_page_count = pages in use", mode=mode, lost=0,
           error=report.message)
