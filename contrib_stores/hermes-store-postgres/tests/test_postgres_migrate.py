"""``hermes-host store migrate`` (issue 16): a whole history SQLite → PostgreSQL → SQLite,
verified; a non-empty target refused; no password printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.store import Guards, Lease, StateStore, open_store
from hermes_host.testing.store_suite._kit import compressed_window, conversation
from hermes_store_postgres.testing import TestServer


def _history(store: StateStore) -> None:
    """Rotations, an in-place compression (archived rows), a branch, guards, usage, state."""
    root = store.create_session(title="project", cwd="/srv", goal="ship", model="m",
                                model_config={"t": 0.2}, source="cli", user_id="u")
    store.append_messages(root.id, conversation(6, tag="alpha"))
    store.add_usage(root.id, input_tokens=120, output_tokens=30, cost_usd=0.5)
    store.write_guards(root.id, Guards(cooldown_until=99.5, fallback_streak=1,
                                       ineffective_count=2, ineffective_tokens=400))
    store.set_engine_state(root.id, "topic_router", {"branch": "b1"})
    lease = store.acquire_lease(root.id)
    assert isinstance(lease, Lease)
    child = store.publish_compression(lease, root.id, compressed_window("alpha")).session_id
    store.release_lease(lease)
    store.append_messages(child, conversation(2, tag="beta")[1:])
    lease = store.acquire_lease(child)
    assert isinstance(lease, Lease)
    store.publish_compression(lease, child, compressed_window("beta"), mode="in_place")
    store.release_lease(lease)
    branch = store.create_session(parent_session_id=root.id, title="side").id
    store.append_messages(branch, [{"role": "user", "content": "odd \x00 and \udc80 text",
                                    "_meta": {"k": [1, 2]}}])
    store.update_session(branch, archived=True)


def _view(store: StateStore) -> list[Any]:
    sessions = sorted(store.list_sessions(limit=1000, include_archived=True),
                      key=lambda s: s.id)
    out: list[Any] = list(sessions)
    for s in sessions:
        out += store.all_messages(s.id)
        out.append(store.get_engine_state(s.id, "topic_router"))
    return out


def test_migrate_sqlite_to_postgresql_and_back_verified_issue_16(
    tmp_path: Path, hermes_postgres: TestServer
) -> None:
    source = tmp_path / "state.db"
    with open_store(source) as store:
        _history(store)
        expected = _view(store)
    pg = hermes_postgres.fresh_url()
    result = CliRunner().invoke(cli, ["store", "migrate", "--from", str(source), "--to", pg])
    assert result.exit_code == 0, result.output
    assert "Verified: row counts match" in result.output
    assert hermes_postgres.password not in result.output and ":***@" in result.output
    with open_store(pg) as store:
        assert _view(store) == expected  # every field, every row, ids and order kept
        assert store.resume("project").title == "project #2"
        assert len(store.session_search("alpha", limit=50)) >= 6  # archived rows too
    again = CliRunner().invoke(cli, ["store", "migrate", "--from", str(source), "--to", pg])
    assert again.exit_code == 2 and "already holds" in again.output
    back = tmp_path / "back.db"
    result = CliRunner().invoke(cli, ["store", "migrate", "--from", pg, "--to", str(back),
                                      "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ok"] and report["copied"]["messages"] == report["verified_messages"] > 0
    assert hermes_postgres.password not in result.output
    with open_store(back) as store:
        assert _view(store) == expected
        assert store.session_search("laky pars")  # the substring index was brought up to date
    with open_store(pg) as store:  # new rows continue after the imported ids
        (fresh_id,) = store.append_messages(store.create_session().id,
                                            [{"role": "user", "content": "x"}])
        assert fresh_id > max(m.id for m in expected if hasattr(m, "message"))
