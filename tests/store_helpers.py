"""Shared helpers for the store tests (SQLite index checks, transcripts folder).

The windows and the multi-process compress worker live in the store contract kit
(:mod:`hermes_host.testing.store_suite._kit`), shared with every backend's tests.
"""

from __future__ import annotations

import os
import random
import select
import signal
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path

from hermes_host.testing.store_suite._kit import compressed_window, conversation

__all__ = ["compressed_window", "conversation", "fts_integrity", "transcripts_dir"]

TRANSCRIPTS_ENV = "HERMES_HOST_TRANSCRIPTS"


def transcripts_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "transcripts"
    return Path(os.environ.get(TRANSCRIPTS_ENV) or default)


def fts_integrity(path: Path) -> None:
    """Raise if either FTS index disagrees with its content (rank=1 checks the content
    table/view too) or the database fails ``PRAGMA integrity_check``."""
    conn = sqlite3.connect(path)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        assert result == "ok", result
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute(
            "INSERT INTO messages_fts_trigram(messages_fts_trigram, rank) "
            "VALUES ('integrity-check', 1)"
        )
    finally:
        conn.close()


def fork_child(body: Callable[[int], None]) -> tuple[int, int]:
    """Fork a child that runs ``body(ready_fd)`` forever; returns (pid, read end)."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns about fork with threads; we never share state
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which only ever dies by SIGKILL
        try:
            os.close(read_fd)
            body(write_fd)
        except BaseException:
            os._exit(3)
        os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def kill_at_random(pid: int, read_fd: int, rng: random.Random, max_delay: float) -> None:
    """Wait for the child's ``r`` (ready) byte, sleep a random part of ``max_delay`` (none
    one time in ten), SIGKILL it and reap it."""
    ready, _, _ = select.select([read_fd], [], [], 30)
    assert ready, "child never became ready"
    assert os.read(read_fd, 1) == b"r"
    if rng.random() < 0.9:
        select.select([], [], [], rng.uniform(0, max_delay))
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_fd)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status

