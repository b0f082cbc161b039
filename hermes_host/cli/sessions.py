"""``hermes-host sessions``: list, show, search, lineage, export and import stored sessions.

Every command takes ``--store PATH|URL`` (default: the configured store, ``store.url`` or
``$HERMES_HOST_HOME/state.db``; a URL of any installed backend, e.g.
``postgresql://…``), ``--config PATH`` and ``--json``.  Humans get rich tables; scripts get
JSON.  A store problem or bad input is a one-line error and exit code 2 (1 for
"no such session"), never a traceback.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from hermes_host.messages import one_line, text_of
from hermes_host.models import Message
from hermes_host.store import (
    Session,
    SessionNotFoundError,
    StateStore,
    StoreError,
    open_store,
    store_file,
)
from hermes_host.store.registry import load_store_class, redact_url, url_scheme
from hermes_host.store.sqlite import check_location
from hermes_host.transcripts import (
    TranscriptError,
    check_transcript,
    iter_jsonl_objects,
    read_text,
)

from .config_cmd import config_option, load_config_or_fail
from .config_cmd import console as make_console
from .config_cmd import fail as _fail

__all__ = ["sessions"]

F = TypeVar("F", bound=Callable[..., Any])


def _common(fn: F) -> F:
    """``--store``, ``--config`` and ``--json`` on every subcommand."""
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        fn
    )
    fn = config_option(fn)
    return click.option(
        "--store",
        "store_path",
        metavar="PATH|URL",
        default=None,
        help="Store to use: a state.db path or a store URL (default: the configured store, "
        "$HERMES_HOST_HOME/state.db).",
    )(fn)


def fail(exc: Exception | str) -> NoReturn:
    code = 1 if isinstance(exc, SessionNotFoundError) else 2
    _fail(f"error: {exc}", code)


def _resolve_path(store_path: str | None, config_path: Path | None) -> tuple[str, float]:
    """The store location (a path or URL) and the lease TTL to open it with."""
    config, _ = load_config_or_fail(config_path)
    location = store_path if store_path is not None else config.store_url()
    try:
        load_store_class(location)  # an unknown or missing backend fails before anything
    except StoreError as exc:
        fail(f"store.url: {exc}" if store_path is None else exc)
    return location, config.store.lease_ttl_seconds


def _local_file(location: str) -> Path | None:
    """The SQLite file ``location`` names (``None`` for a server store's URL)."""
    if url_scheme(location) not in (None, "sqlite"):
        return None
    return store_file(location)


def _missing_file(location: str) -> Path | None:
    """The SQLite file ``location`` names when it does not exist yet (a server store always
    "exists": opening it tells)."""
    path = _local_file(location)
    return None if path is None or path.exists() else path


@contextmanager
def _opened(
    store_path: str | None,
    config_path: Path | None,
    *,
    create: bool,
    resolved: tuple[str, float] | None = None,
) -> Iterator[StateStore]:
    """The store, open for the ``with`` block: reading commands refuse to create one where
    none exists, a :class:`StoreError` becomes a one-line error, and it is always closed."""
    path, ttl = resolved or _resolve_path(store_path, config_path)
    local = _local_file(path)
    if local is not None:
        try:
            check_location(local)
        except StoreError as exc:
            fail(exc)
    missing = _missing_file(path)
    if not create and missing is not None:
        fail(f"{missing}: no store here yet (it is created by the first session); "
             "pass --store PATH to use another one")
    # A store this user cannot write (a 0444 file, a read-only directory) is still browsed:
    # reading commands open it read-only instead of failing (issue 12).
    read_only = not create and local is not None and not _writable(local)
    try:
        store = open_store(path, lease_ttl=ttl, read_only=read_only)
    except StoreError as exc:
        fail(exc)
    try:
        yield store
    except StoreError as exc:
        fail(exc)
    finally:
        store.close()


def _writable(path: Path) -> bool:
    """Whether this process may write the store file and create its -wal/-shm files."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


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


def _dumps_line(value: Any, what: str = "the output") -> str:
    """One line of strict JSON, readable UTF-8 when possible, escaped when the text holds
    lone surrogates (which no UTF-8 stream can carry).  A non-finite number (which a store
    written by an older version may hold) is a one-line error naming ``what``: the output
    is always valid JSON."""
    try:
        line = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        fail(f"{what} holds a non-finite number (NaN or Infinity), which JSON cannot carry")
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(value, ensure_ascii=True, allow_nan=False)
    return line


@click.group("sessions")
def sessions() -> None:
    """Stored sessions: list, show, search, lineage, export, import."""


@sessions.command("list")
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
    local = _local_file(path)
    if local is not None:
        try:
            check_location(local)
        except StoreError as exc:
            fail(exc)
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


@sessions.command("show")
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


@sessions.command("search")
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


@sessions.command("lineage")
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


@sessions.command("export")
@_common
@click.argument("session")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of stdout.")
@click.option("--active-only", is_flag=True,
              help="Only the window (active rows), not archived history.")
@click.option("--lineage", "whole", is_flag=True,
              help="The whole conversation: every session its rotations made, each stored "
              "message once, in the order written (with --active-only: its live window).")
def export_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    session: str,
    output: Path | None,
    active_only: bool,
    whole: bool,
) -> None:
    """Every stored message of SESSION as OpenAI-format JSONL, verbatim (``_`` metadata
    included), the system prompt first.  With ``--json``: one object with the session (or
    with ``--lineage`` the conversation's sessions) and the messages."""
    with _opened(store_path, config_path, create=False) as store:
        found = store.resume(session)
        members = [found]
        if whole:
            tip = store.get_session(store.window_marker(found.id).session_id)
            members = [
                row for row in (store.get_session(sid) for sid in store.lineage(tip.id))
                if row.conversation_id == tip.conversation_id
            ]
            if active_only:
                members = [tip]
        rows = [
            r for member in members
            for r in store.all_messages(member.id, include_inactive=not active_only)
        ]
    if whole and not active_only:
        rows.sort(key=lambda r: r.id)  # each row once, in the order it was written
    messages = [r.message for r in rows]
    labels = [f"message #{r.id} of {found.id}" for r in rows]
    prompt = next((m.system_prompt for m in members if m.system_prompt), None)
    if prompt and not (messages and messages[0].get("role") == "system"):
        messages.insert(0, {"role": "system", "content": prompt})  # kept off the rows
        labels.insert(0, f"the system prompt of {found.id}")
    lines = [_dumps_line(m, what) + "\n" for m, what in zip(messages, labels, strict=True)]
    if as_json:
        head: dict[str, Any] = {"session": found.to_dict()}
        if whole:
            head = {"conversation_id": members[-1].conversation_id,
                    "sessions": [m.to_dict() for m in members]}
        text = _dumps_line({**head, "messages": messages}) + "\n"
    else:
        text = "".join(lines)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write the export: {exc.strerror or exc}")
    what = f"conversation {members[-1].conversation_id}" if whole else found.id
    click.echo(f"Exported {len(messages)} messages of {what} to {output}", err=True)


def _read_jsonl(path: Path) -> tuple[list[Message], list[int]]:
    """Messages and the line number of each; exits 2 naming the line on bad input (the
    wording every transcript reader shares)."""
    try:
        numbered = list(iter_jsonl_objects(read_text(path), partial(TranscriptError, path)))
    except TranscriptError as exc:
        fail(str(exc))
    if not numbered:
        fail(f"{path}: no messages found (expected one JSON object per line)")
    return [value for _, value in numbered], [number for number, _ in numbered]


@sessions.command("import")
@_common
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--title", default=None, help="Title of the new session (must be unused).")
@click.option("--source", default="import", show_default=True)
@click.option("--model", default=None)
@click.option("--cwd", default=None, help="Working directory to record for resume.")
def import_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    file: Path,
    title: str | None,
    source: str,
    model: str | None,
    cwd: str | None,
) -> None:
    """Store an OpenAI-format JSONL transcript as a new session, verbatim.  Each line is
    validated first, by the rules ``replay`` applies; an error names the line and nothing
    is stored."""
    messages, lines = _read_jsonl(file)
    try:
        check_transcript(messages, file, lines)  # what replay accepts, no more
    except TranscriptError as exc:
        fail(str(exc))
    first = messages[0]
    system_prompt = first["content"] if (
        first.get("role") == "system" and isinstance(first.get("content"), str)) else None
    with _opened(store_path, config_path, create=True) as store:
        session = store.create_session(title=title, source=source, model=model, cwd=cwd,
                                       system_prompt=system_prompt)
        ids = store.append_messages(session.id, messages)
        index_pending = getattr(store, "index_pending", None)
        if callable(index_pending):
            index_pending()  # a bulk write leaves substring indexing for later: do it now
    if as_json:
        click.echo(json.dumps({"session_id": session.id, "title": session.title,
                               "messages": len(ids), "store": store.location}))
    else:
        click.echo(f"Imported {len(ids)} messages from {file} into session {session.id}")
