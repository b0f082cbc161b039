"""Issue 31 (smaller items): on a disk that is *already* full, ``compress()`` and
``end_turn()`` return the documented ``rejected``/``store_refused`` report instead of raising
``StoreError`` (they raised it from the compression lease and from recording usage), and
nothing is lost: once space is freed the same session compresses.

A real full disk: a 4 MiB ``tmpfs`` mounted for the test and filled by a file before the
calls (root only, as in ``tests/reliability/test_rel_sigkill.py``; SQLite's
``max_page_count`` cannot refuse a write that fits in a page already allocated, so it cannot
stand in for a disk with no block left)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_helpers import chat_turn, make_config

from hermes_host.host import ContextHost
from hermes_host.store import StoreError

pytest.importorskip("hermes_compressor")


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(directory: Path) -> Path:
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


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_compress_and_end_turn_on_a_full_disk_report_store_refused(
    tiny_tmpfs: Path, mode: str
) -> None:
    db = tiny_tmpfs / "state.db"
    host = ContextHost.from_config(
        make_config("compressor", summarizer={"provider": "offline"},
                    model={"context_length": 100_000, "max_output_tokens": 100},
                    compression={"mode": mode}),
        store=db,
    )
    with host:
        session = host.open_session("full", "You are terse.")
        for n in range(12):
            chat_turn(session, n, size=20)
        before = session.raw_window
        sid = session.id
        filler = _fill(tiny_tmpfs)

        report = session.compress(force=True)
        assert (report.status, report.outcome) == ("rejected", "store_refused"), report
        assert report.message and "full" in report.message and "unchanged" in report.message

        # the provider says the prompt is over the trigger: end_turn compresses, and reports
        outcome = session.end_turn({"prompt_tokens": 90_000, "completion_tokens": 10})
        assert outcome.decision.compress
        assert outcome.compression is not None
        assert (outcome.compression.status, outcome.compression.outcome) == (
            "rejected", "store_refused")
        assert any(line.startswith("usage not recorded") and "full" in line
                   for line in outcome.events)
        assert session.end_turn().status in ("continued", "rejected")

        assert session.raw_window == before and session.id == sid
        with pytest.raises(StoreError, match="full"):  # an append still says so, clearly
            session.add_user("written while the disk is full")

        filler.unlink()
        again = session.compress(force=True)
        assert again.status == "committed", again
        rows = [r.message for s in host.store.lineage(session.id)
                for r in host.store.all_messages(s)]
        for message in before:
            assert rows.count(message) == 1
