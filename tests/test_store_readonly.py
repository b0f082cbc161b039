"""Operator paper cuts around the store file (issue 12): a file in the ``--store`` path is a
one-line error; a read-only store (a 0444 file, or a read-only directory) can be browsed with
``sessions list/search/show/export``; the host never makes a user's 0444 store writable again.

The read-only cases run the real ``hermes-host`` in a subprocess.  When the tests run as root
(which ignores file modes) that subprocess runs without capabilities (``setpriv``), so the
kernel enforces the modes exactly as for an ordinary user."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from store_helpers import compressed_window, conversation

from hermes_host.cli import cli
from hermes_host.store import Lease, StoreError, open_store
from hermes_host.store.sqlite import SQLiteStore

_SETPRIV = shutil.which("setpriv")
_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

needs_modes = pytest.mark.skipif(
    _AS_ROOT and _SETPRIV is None, reason="running as root without setpriv: modes not enforced"
)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process that file modes apply to."""
    command = [sys.executable, "-c", "from hermes_host.cli import cli; cli()", *args]
    if _AS_ROOT:
        assert _SETPRIV is not None
        command = [_SETPRIV, "--bounding-set=-all", "--inh-caps=-all", *command]
    env = {**os.environ, "HERMES_HOST_HOME": str(cwd / "home")}
    env.pop("HERMES_HOST_CONFIG", None)
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


def _populate(db: Path) -> tuple[str, str]:
    store = open_store(db)
    root = store.create_session(title="demo", model="claude-x", system_prompt="be brief")
    store.append_messages(root.id, conversation(3, tag="gazelle"))
    lease = store.acquire_lease(root.id)
    assert isinstance(lease, Lease)
    child = store.publish_compression(lease, root.id, compressed_window("child")).session_id
    store.close()
    return root.id, child


@pytest.fixture
def readonly_file(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "state.db"
    _populate(db)
    db.chmod(0o444)
    yield db
    db.chmod(0o600)


@pytest.fixture
def readonly_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "archive"
    folder.mkdir()
    db = folder / "state.db"
    _populate(db)
    folder.chmod(0o555)
    yield db
    folder.chmod(0o755)


def _browse(db: Path, cwd: Path) -> None:
    listed = _cli("sessions", "list", "--store", str(db), "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["title"] for r in rows] == ["demo #2"]
    found = _cli("sessions", "search", "gazelle", "--store", str(db), "--json", cwd=cwd)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout), "search found nothing in a read-only store"
    shown = _cli("sessions", "show", "demo", "--store", str(db), cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    exported = _cli("sessions", "export", "demo", "--lineage", "--store", str(db), cwd=cwd)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert lines[0]["role"] == "system"
    for result in (listed, found, shown, exported):
        assert "Traceback" not in result.stderr


@needs_modes
def test_a_0444_store_can_be_browsed_issue_12(readonly_file: Path, tmp_path: Path) -> None:
    """issue 12: ``sessions list/search/show/export`` all failed on a read-only store."""
    _browse(readonly_file, tmp_path)
    assert stat.S_IMODE(readonly_file.stat().st_mode) == 0o444  # and it stays read-only


@needs_modes
def test_a_store_in_a_read_only_directory_can_be_browsed_issue_12(
    readonly_dir: Path, tmp_path: Path
) -> None:
    _browse(readonly_dir, tmp_path)
    assert sorted(p.name for p in readonly_dir.parent.iterdir()) == ["state.db"]


@needs_modes
def test_writing_to_a_read_only_store_is_a_clear_error_issue_12(
    readonly_file: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    result = _cli("sessions", "import", str(source), "--store", str(readonly_file), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "read-only" in result.stderr or "readonly" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_opening_never_makes_a_0444_store_writable_again_issue_12(tmp_path: Path) -> None:
    """issue 12: a 0444 store was silently chmod-ed back to 0600."""
    db = tmp_path / "state.db"
    _populate(db)
    db.chmod(0o444)
    try:
        store = open_store(db, read_only=True)
        assert isinstance(store, SQLiteStore)
        assert store.list_conversations()
        store.close()
        assert stat.S_IMODE(db.stat().st_mode) == 0o444
        try:  # read-write: root may write anyway, an ordinary user gets an error
            open_store(db).close()
        except StoreError:
            pass
        assert stat.S_IMODE(db.stat().st_mode) == 0o444
    finally:
        db.chmod(0o600)


def test_a_world_readable_store_is_still_tightened_to_owner_only(tmp_path: Path) -> None:
    """What the chmod is for (the store holds conversations): group/other bits go, the
    owner's own bits are never added."""
    db = tmp_path / "state.db"
    _populate(db)
    db.chmod(0o644)
    open_store(db).close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_file_in_the_store_path_is_a_one_line_error_issue_12(tmp_path: Path) -> None:
    """issue 12: ``--store afile/state.db`` (``afile`` a regular file) gave a traceback."""
    (tmp_path / "afile").write_text("not a directory", encoding="utf-8")
    target = tmp_path / "afile" / "state.db"
    source = tmp_path / "in.jsonl"
    source.write_text('{"role": "user", "content": "hi"}\n'
                      '{"role": "assistant", "content": "hello"}\n', encoding="utf-8")
    for args in (["sessions", "list"], ["sessions", "show", "x"],
                 ["sessions", "import", str(source)], ["replay", str(source)]):
        result = CliRunner().invoke(cli, [*args, "--store", str(target)])
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit), result.exception  # no traceback
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert f"{tmp_path / 'afile'} is a file, not a directory" in lines[0], lines[0]
    with pytest.raises(StoreError, match="is a file, not a directory"):
        open_store(target)
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "not a directory"
