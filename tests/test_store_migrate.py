"""``hermes-host store migrate`` between two SQLite files (issue 16; the PostgreSQL round trip
is in contrib_stores/hermes-store-postgres/tests/test_postgres_migrate.py): everything is
copied with ids kept, verification catches a damaged row, a non-empty target is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from store_helpers import conversation

from hermes_host.cli import cli
from hermes_host.store import Lease, open_store
from hermes_host.store.sqlite import SQLiteStore
from hermes_host.store.transfer import migrate_history


def _fill(path: Path) -> list[Any]:
    with open_store(path) as store:
        root = store.create_session(title="t")
        store.append_messages(root.id, conversation(3, tag="gamma"))
        lease = store.acquire_lease(root.id)
        assert isinstance(lease, Lease)
        child = store.publish_compression(lease, root.id, conversation(1, tag="kept"))
        store.set_engine_state(child.session_id, "e", {"n": 1})
        return [store.all_messages(s.id) for s in store.list_sessions()]


def test_migrate_copies_everything_and_refuses_a_nonempty_target_issue_16(
    tmp_path: Path,
) -> None:
    expected = _fill(tmp_path / "a.db")
    result = CliRunner().invoke(cli, ["store", "migrate", "--from", str(tmp_path / "a.db"),
                                      "--to", str(tmp_path / "b.db")])
    assert result.exit_code == 0, result.output
    assert "Verified: row counts match" in result.output
    with open_store(tmp_path / "b.db") as store:
        assert [store.all_messages(s.id) for s in store.list_sessions()] == expected
        assert store.get_engine_state(store.resume("t").id, "e") == {"n": 1}
    again = CliRunner().invoke(cli, ["store", "migrate", "--from", str(tmp_path / "a.db"),
                                     "--to", str(tmp_path / "b.db")])
    assert again.exit_code == 2 and "already holds 2 sessions" in again.output
    collide = CliRunner().invoke(cli, ["store", "migrate", "--from", str(tmp_path / "a.db"),
                                       "--to", str(tmp_path / "b.db"), "--into-nonempty"])
    assert collide.exit_code == 2 and "copying sessions stopped after 0 rows" in collide.output


def test_verification_catches_a_row_the_target_changed_issue_16(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db")

    class Lossy(SQLiteStore):
        def import_rows(self, table: str, columns: Any, rows: Any) -> None:
            if table == "messages":
                at = list(columns).index("content")
                rows = [(*r[:at], "damaged", *r[at + 1:]) if i == 3 else r
                        for i, r in enumerate(rows)]
            super().import_rows(table, columns, rows)

    with SQLiteStore(tmp_path / "a.db") as source, Lossy(tmp_path / "c.db") as target:
        report = migrate_history(source, target)
    assert not report.ok and len(report.problems) == 1
    assert "checksum differs" in report.problems[0]


def test_migrate_names_a_bad_source_without_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["store", "migrate", "--from", "nosuch://x",
                                      "--to", str(tmp_path / "b.db")])
    assert result.exit_code == 2 and "--from: unknown store URL scheme" in result.output
    same = CliRunner().invoke(cli, ["store", "migrate", "--from", str(tmp_path / "b.db"),
                                    "--to", str(tmp_path / "b.db")])
    assert same.exit_code == 2 and "the same store" in same.output
    assert not (tmp_path / "b.db").exists()
