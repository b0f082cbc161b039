"""Fixtures several host test modules share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fence_helpers import Gate

from hermes_host.store import open_store
from hermes_host.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh real store file in the test's own directory, closed afterwards."""
    opened = open_store(tmp_path / "state.db")
    assert isinstance(opened, SQLiteStore)
    yield opened
    opened.close()


@pytest.fixture
def gate() -> Iterator[Gate]:
    """A gate a plugin can block on; released at teardown so no fence worker stays stuck."""
    g = Gate()
    yield g
    g.release()
