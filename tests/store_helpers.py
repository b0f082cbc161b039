"""Shared helpers for the store tests (SQLite index checks, transcripts folder).

The windows and the multi-process compress worker live in the store contract kit
(:mod:`hermes_host.testing.store_suite._kit`), shared with every backend's tests.
"""

from __future__ import annotations

import os
import sqlite3
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
