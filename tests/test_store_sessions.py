"""Sessions, guards, usage, lineage, resume and recap against a real SQLite file
(R-5.3, R-8.3, R-9.1)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hermes_host.store import (
    StateStore,
    StoreError,
    open_store,
)
from hermes_host.store.sqlite import SQLiteStore


def test_store_file_is_owner_only_wal_with_foreign_keys_R_9(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.db"
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteStore) and isinstance(store, StateStore)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    store.close()


def test_unsupported_url_scheme_names_what_is_supported(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"installed schemes: .*sqlite://"):
        open_store("mysql://db/hermes")


def test_public_names_are_sorted_and_importable() -> None:
    import hermes_host.store as store_pkg

    assert store_pkg.__all__ == sorted(store_pkg.__all__)
    for name in store_pkg.__all__:
        assert getattr(store_pkg, name) is not None, name
