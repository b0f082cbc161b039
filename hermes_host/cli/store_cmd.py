"""``hermes-host store``: whole-store operations.

``store migrate --from URL --to URL`` copies a whole history (sessions with their lineage,
usage and guards; every message row, window and archived; engine state) between any two
stores — SQLite file to PostgreSQL and back, or between two PostgreSQL schemas — with a
progress bar on a terminal's stderr, then verifies row counts and a checksum of every
message.  A target that already holds sessions is refused unless ``--into-nonempty``.  URLs
are shown without their password.
"""

from __future__ import annotations

import json
import sys

import click
from rich.progress import TaskID

from hermes_host.store import StoreError, open_store
from hermes_host.store.registry import redact_url
from hermes_host.store.transfer import migrate_history

from .config_cmd import fail
from .output import progress_bar

__all__ = ["store"]


@click.group("store")
def store() -> None:
    """Whole-store operations: migrate a history between stores."""


@store.command("migrate")
@click.option("--from", "source", required=True, metavar="PATH|URL",
              help="The store to copy from (a state.db path or a store URL).")
@click.option("--to", "target", required=True, metavar="PATH|URL",
              help="The store to copy into (created and migrated if needed).")
@click.option("--into-nonempty", "--force", "into_nonempty", is_flag=True,
              help="Copy into a target that already holds sessions (ids must not collide).")
@click.option("--batch", default=2_000, show_default=True, type=click.IntRange(min=1),
              help="Rows per transaction.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def migrate(source: str, target: str, into_nonempty: bool, batch: int, as_json: bool) -> None:
    """Copy every session, message and engine state from --from to --to, then verify."""
    if source == target:
        fail("--from and --to name the same store")
    try:
        src = open_store(source)
    except StoreError as exc:
        fail(f"--from: {exc}")
    try:
        dst = open_store(target)
    except StoreError as exc:
        src.close()
        fail(f"--to: {exc}")
    # on stderr, and only on a terminal without --json: stdout carries the report alone
    bar = progress_bar("migrate", as_json=as_json)
    tasks: dict[str, TaskID] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=max(total, 1))
        bar.update(tasks[stage], completed=done, total=max(total, done, 1))

    try:
        with bar:
            report = migrate_history(src, dst, into_nonempty=into_nonempty, batch=batch,
                                     progress=progress)
    except StoreError as exc:
        fail(str(exc))
    finally:
        src.close()
        dst.close()
    result = {"from": redact_url(source), "to": redact_url(target), **report.to_dict()}
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        copied = ", ".join(f"{n} {table}" for table, n in report.copied.items())
        click.echo(f"Copied {copied} from {result['from']} to {result['to']}.")
        if report.ok:
            click.echo(f"Verified: row counts match; {report.verified_messages} message "
                       "checksums match.")
    if not report.ok:
        for problem in report.problems:
            click.echo(f"verification failed: {problem}", err=True)
        sys.exit(1)
