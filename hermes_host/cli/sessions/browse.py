"""Browsing the store: ``sessions list``, ``show``, ``search`` and ``lineage`` (R-14.5)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from hermes_host.messages import one_line, text_of
from hermes_host.models import Message
from hermes_host.store import Session
from hermes_host.store.registry import redact_url

from ..config_cmd import console as make_console
from .opening import (
    _checked_file,
    _common,
    _dumps_line,
    _missing_file,
    _opened,
    _resolve_path,
)

__all__ = ["lineage_cmd", "list_cmd", "search_cmd", "show_cmd"]


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _status(session: Session) -> str:
    flags = []
    if session.ended_at is not None:
        flags.append(f"ended: {session.end_reason or '?'}")
    if session.archived:
        flags.append("archived")
    if session.pinned:
        flags.append("pinned")
    return ", ".join(flags) or "open"


def _describe(message: Message, limit: int) -> str:
    """One line for a bookend: its text, or the tools it called."""
    text = one_line(text_of(message), limit)
    if text:
        return text
    names = [
        str((call.get("function") or {}).get("name", "?"))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    ]
    return f"[calls {', '.join(names)}]" if names else "(empty)"


@click.command("list")
@_common
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--all", "include_archived", is_flag=True, help="Include archived sessions.")
@click.option("--source", default=None, help="Only sessions from this source (cli, telegram…).")
@click.option("--user", "user_id", default=None, help="Only this user's sessions.")
def list_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    limit: int,
    include_archived: bool,
    source: str | None,
    user_id: str | None,
) -> None:
    """Conversations, most recent activity first: one row each, shown by its newest
    session (the one holding the live window), with how many times it was rotated.
    ``sessions lineage`` lists the sessions of one."""
    path, ttl = _resolve_path(store_path, config_path)
    _checked_file(path)
    missing = _missing_file(path)
    if missing is not None:
        if as_json:
            click.echo("[]")
        else:
            click.echo(f"No sessions yet ({missing} does not exist).")
        return
    with _opened(store_path, config_path, create=False, resolved=(path, ttl)) as store:
        found = store.list_conversations(
            limit=limit, include_archived=include_archived, source=source, user_id=user_id
        )
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in found], indent=2, ensure_ascii=False))
        return
    if not found:
        click.echo("No sessions.")
        return
    table = Table("id", "title", "source", "model", "messages", "rotations", "tokens in/out",
                  "last activity", "status", title=f"Conversations in {redact_url(path)}")
    for c in found:
        s = c.tip
        table.add_row(
            s.id, escape(s.title or ""), escape(s.source or ""), escape(s.model or ""),
            f"{s.active_count}/{c.message_count}", str(c.rotations),
            f"{c.input_tokens:,}/{c.output_tokens:,}", _when(s.last_activity_at), _status(s),
        )
    table.columns[0].no_wrap = True
    make_console().print(table)


@click.command("show")
@_common
@click.argument("session")
def show_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, session: str
) -> None:
    """One session (by id, title or ``last``): its fields and a compact recap."""
    with _opened(store_path, config_path, create=False) as store:
        found = store.resume(session)
        recap = store.recap(found.id)
        window = store.active_messages(found.id) if as_json else []
    if as_json:
        payload = {"session": found.to_dict(), "recap": recap, "window": window}
        click.echo(_dumps_line(payload))
        return
    table = Table("field", "value", show_header=False)
    rows: list[tuple[str, str]] = [
        ("id", found.id),
        ("title", found.title or ""),
        ("parent", found.parent_session_id or ""),
        ("source / user", f"{found.source or '-'} / {found.user_id or '-'}"),
        ("model", found.model or ""),
        ("cwd", found.cwd or ""),
        ("created", _when(found.created_at)),
        ("last activity", _when(found.last_activity_at)),
        ("status", _status(found)),
        ("messages", f"{found.active_count} in the window, {found.message_count} stored"),
        ("compressions", str(found.compression_count)),
        ("tokens", f"in {found.input_tokens:,} · out {found.output_tokens:,} · cache read "
                   f"{found.cache_read_tokens:,} · cache write {found.cache_write_tokens:,} · "
                   f"reasoning {found.reasoning_tokens:,}"),
        ("cost", f"${found.cost_usd:.4f}"),
    ]
    for key, value in rows:
        table.add_row(key, escape(value))
    console = make_console()
    console.print(table)
    console.print(escape(recap))


@click.command("search")
@_common
@click.argument("query")
@click.option("--session", "session_id", default=None, help="Search this session only…")
@click.option("--no-lineage", is_flag=True, help="…without its earlier (rotated) sessions.")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(min=1, max=500))
def search_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    query: str,
    session_id: str | None,
    no_lineage: bool,
    limit: int,
) -> None:
    """Full-text search of every stored message (archived ones too), with the messages
    around each hit.  No LLM call."""
    with _opened(store_path, config_path, create=False) as store:
        hits = store.session_search(query, session_id, not no_lineage, limit)
    if as_json:
        click.echo(_dumps_line([h.to_dict() for h in hits]))
        return
    if not hits:
        click.echo("No matches.")
        return
    console = make_console()
    for hit in hits:
        state = "" if hit.active else " [dim](archived)[/dim]"
        console.print(
            f"[bold]{hit.session_id}[/bold] #{hit.message_id} {hit.role}{state}"
            f"  [dim]{_when(hit.timestamp)}[/dim]"
        )
        for m in hit.before:
            console.print(f"  [dim]{m.role}: {escape(_describe(m.message, 120))}[/dim]")
        console.print(f"  [bold]{hit.role}: {escape(one_line(hit.content, 200))}[/bold]")
        for m in hit.after:
            console.print(f"  [dim]{m.role}: {escape(_describe(m.message, 120))}[/dim]")
        console.print()


@click.command("lineage")
@_common
@click.argument("session")
def lineage_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, session: str
) -> None:
    """The chain of sessions (root first) that compression rotations made of SESSION
    (an id, a title — whose newest session is used — or ``last``)."""
    with _opened(store_path, config_path, create=False) as store:
        chain = [store.get_session(sid) for sid in store.lineage(store.resume(session).id)]
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in chain], indent=2, ensure_ascii=False))
        return
    table = Table("#", "id", "title", "created", "messages", "compressions", "status",
                  title=f"Lineage of {session} (root first)")
    for depth, s in enumerate(chain):
        table.add_row(str(depth), s.id, escape(s.title or ""), _when(s.created_at),
                      f"{s.active_count}/{s.message_count}", str(s.compression_count),
                      _status(s))
    table.columns[1].no_wrap = True
    make_console().print(table)
