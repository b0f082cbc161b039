"""Issue 29 on PostgreSQL: request manifests and compaction receipts through ContextHost, the
same as on SQLite (a real server, started by the suite)."""

from __future__ import annotations

from pathlib import Path

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.store.manifests import decode_entries, rebuild_request
from hermes_store_postgres.testing import TestServer


def test_requests_rebuild_and_receipts_are_recorded_on_postgres(
    hermes_postgres: TestServer,
) -> None:
    config = HermesConfig.model_validate({
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "model": {"context_length": 3000, "max_output_tokens": 300},
    })
    sent = []
    with ContextHost.from_config(config, store=hermes_postgres.fresh_url()) as host:
        session = host.open_session(system_prompt="You fix parsers.")
        for n in range(30):
            session.add_user(f"step {n}: what does the parser do with input {n}? " + "x " * 60)
            sent.append(session.build_request())
            session.add_assistant(f"it reads token {n} " + "y " * 60)
            session.end_turn({"input_tokens": 100 + n, "output_tokens": 9})
        lineage = host.store.lineage(session.id)
        records = host.store.list_requests(lineage)
        assert [rebuild_request(host.store, r) for r in records] == sent
        assert [r.input_tokens for r in records] == [100 + n for n in range(30)]
        receipts = host.store.list_receipts(lineage)
        committed = [r for r in receipts if r.status == "committed"]
        assert committed and session.compression_count == len(committed)
        for receipt in committed:
            assert receipt.tokens_after < receipt.tokens_before
            assert len(decode_entries(receipt.before_ids)) == receipt.messages_before


def test_store_migrate_carries_manifests_into_postgres_and_ids_go_on(
    hermes_postgres: TestServer, tmp_path: Path
) -> None:
    from hermes_host.store.transfer import migrate_history

    config = HermesConfig.model_validate({
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "model": {"context_length": 3000, "max_output_tokens": 300},
    })
    sent = []
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session(system_prompt="You fix parsers.")
        for n in range(30):
            session.add_user(f"step {n}: " + "x " * 60)
            sent.append(session.build_request())
            session.add_assistant(f"token {n} " + "y " * 60)
            session.end_turn({"input_tokens": 1})
        lineage = host.store.lineage(session.id)
        receipts = host.store.list_receipts(lineage)
        url = hermes_postgres.fresh_url()
        with ContextHost.from_config(config, store=url) as pg:
            report = migrate_history(host.store, pg.store)
            assert report.ok, report.problems
            records = pg.store.list_requests(lineage)
            assert [rebuild_request(pg.store, r) for r in records] == sent
            assert [r.id for r in pg.store.list_receipts(lineage)] == [r.id for r in receipts]
            resumed = pg.resume(session.id)  # a new request gets a fresh id past the copied
            resumed.build_request()
            assert pg.store.list_requests(lineage)[-1].id > records[-1].id
