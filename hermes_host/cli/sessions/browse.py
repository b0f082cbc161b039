"""Browsing the store: ``sessions list``, ``show``, ``search`` and ``lineage`` (R-14.5).

A conversation is the unit each of them speaks (issue 30): ``show``, ``lineage`` and
``search --session`` take a conversation id, the id of any session of it, a title or
``last``, and act on the whole conversation unless ``--only-session`` asks for one session;
``list`` lists conversations (``--sessions``: every session, one row each)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from hermes_host.messages import one_line, text_of
from hermes_host.models import Message
from hermes_host.redact import redact, redact_output
from hermes_host.store import SearchHit, Session, StateStore
from hermes_host.store.conversations import ConversationRef
from hermes_host.store.registry import redact_url

from ..config_cmd import console as make_console
from .opening import (
    _checked_file,
    _common,
    _dumps_line,
    _missing_file,
    _opened,
    _resolve_path,
    fail,
    find,
    only_session_option,
)
from .requests import show_request
from .snippets import Snippet, find_matches, snippet

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
    """One line for a bookend: its text (redacted before it is cut), or the tools it
    called."""
    text = one_line(redact(text_of(message)), limit)
    if text:
        return text
    names = [
        str((call.get("function") or {}).get("name", "?"))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    ]
    return f"[calls {', '.join(names)}]" if names else "(empty)"


def _tokens(input_tokens: int, output_tokens: int) -> str:
    return f"{input_tokens:,}/{output_tokens:,}"


@click.command("list")
@_common
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--all", "include_archived", is_flag=True, help="Include archived sessions.")
@click.option("--source", default=None, help="Only sessions from this source (cli, telegram…).")
@click.option("--user", "user_id", default=None, help="Only this user's sessions.")
@click.option("--sessions", "per_session", is_flag=True,
              help="Every session, one row each (rotated ones too), instead of one row per "
              "conversation; --json then prints the session fields only.")
def list_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    limit: int,
    include_archived: bool,
    source: str | None,
    user_id: str | None,
    per_session: bool,
) -> None:
    """Conversations, most recent activity first: one row each, named by its conversation
    id (the id an integration hands out, which every ``sessions`` command accepts), with its
    title, source, sessions (1 + rotations), stored messages and tokens summed over its
    sessions.  With ``--json`` each object is the newest session's fields plus
    ``conversation_id``, ``sessions``, ``rotations``, ``conversation_messages``,
    ``conversation_input_tokens`` and ``conversation_output_tokens``.  ``--sessions`` lists
    every session instead; ``sessions lineage`` lists those of one conversation."""
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
        if per_session:
            sessions = store.list_sessions(limit=limit, include_archived=include_archived,
                                           source=source, user_id=user_id)
        else:
            found = store.list_conversations(limit=limit, include_archived=include_archived,
                                             source=source, user_id=user_id)
    if per_session:
        _list_sessions(sessions, as_json, path)
        return
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in found], indent=2, ensure_ascii=False))
        return
    if not found:
        click.echo("No sessions.")
        return
    table = Table("conversation", "title", "source", "model", "sessions", "messages",
                  "tokens in/out", "last activity", "status",
                  title=f"Conversations in {redact_url(path)}",
                  caption="messages: in the live window / stored in the whole conversation; "
                  "--sessions lists every session")
    for c in found:
        s = c.tip
        table.add_row(
            c.id, escape(redact(s.title or "")), escape(s.source or ""), escape(s.model or ""),
            str(c.sessions), f"{s.active_count}/{c.message_count}",
            _tokens(c.input_tokens, c.output_tokens), _when(s.last_activity_at), _status(s),
        )
    table.columns[0].no_wrap = True
    make_console().print(table)


def _list_sessions(found: list[Session], as_json: bool, path: str) -> None:
    """``sessions list --sessions``: the per-session view (its ``--json`` keys are those of
    a session, as ``sessions list`` printed before it listed conversations)."""
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in found], indent=2, ensure_ascii=False))
        return
    if not found:
        click.echo("No sessions.")
        return
    table = Table("id", "conversation", "title", "source", "model", "messages",
                  "tokens in/out", "last activity", "status",
                  title=f"Sessions in {redact_url(path)}")
    for s in found:
        table.add_row(
            s.id, s.conversation_id or s.id, escape(redact(s.title or "")), escape(s.source or ""),
            escape(s.model or ""), f"{s.active_count}/{s.message_count}",
            _tokens(s.input_tokens, s.output_tokens), _when(s.last_activity_at), _status(s),
        )
    table.columns[0].no_wrap = True
    table.columns[1].no_wrap = True
    make_console().print(table)


def _session_rows(found: Session) -> list[tuple[str, str]]:
    return [
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


def _conversation_rows(ref: ConversationRef) -> list[tuple[str, str]]:
    tip, parts = ref.tip, ref.sessions
    sessions = f"{len(parts)} (root first): " + ", ".join(s.id for s in parts)
    rows = [
        ("conversation", ref.id),
        ("title", tip.title or ""),
        ("sessions", sessions if len(parts) > 1 else f"1: {tip.id}"),
        ("newest session", f"{tip.id} (holds the live window)"),
    ]
    if ref.root.parent_session_id:
        rows.append(("branched from", ref.root.parent_session_id))
    if ref.session.id not in (tip.id, ref.id):
        rows.append(("asked for", f"{ref.session.id}, a session of this conversation "
                                  "(--only-session shows it alone)"))
    rows += [
        ("source / user", f"{tip.source or '-'} / {tip.user_id or '-'}"),
        ("model", tip.model or ""),
        ("cwd", tip.cwd or ""),
        ("created", _when(ref.root.created_at)),
        ("last activity", _when(tip.last_activity_at)),
        ("status", _status(tip)),
        ("messages", f"{tip.active_count} in the window, {ref.message_count} stored in the "
                     "conversation"),
        ("compressions", str(tip.compression_count)),
        ("tokens", "in {:,} · out {:,} · cache read {:,} · cache write {:,} · reasoning {:,}"
         .format(*(sum(getattr(s, f) for s in parts) for f in (
             "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
             "reasoning_tokens")))),
        ("cost", f"${ref.cost_usd:.4f}"),
    ]
    return rows


@click.command("show")
@_common
@only_session_option
@click.option("--request", "request_n", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show the N-th model call of the conversation exactly as the model "
              "received it (`sessions requests` lists them).")
@click.argument("session")
def show_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, only_session: bool,
    request_n: int | None, session: str,
) -> None:
    """A conversation (by conversation id, the id of any of its sessions, a title or
    ``last``): its fields, summed over its sessions, and a compact recap of its live
    window.  With ``--json``: ``session`` (the newest session, or with ``--only-session``
    the one named), ``recap``, ``window``, and for a conversation also ``conversation_id``,
    ``conversation`` (totals) and ``sessions`` (every session, root first)."""
    with _opened(store_path, config_path, create=False) as store:
        ref = find(store, session)
        if request_n is not None:
            show_request(store, ref, request_n, only_session, as_json)
            return
        found = ref.session if only_session else ref.tip
        recap = store.recap(found.id)
        window = store.active_messages(found.id) if as_json else []
    if as_json:
        payload: dict[str, object] = {"session": found.to_dict(), "recap": recap,
                                      "window": window}
        if not only_session:
            payload.update({"conversation_id": ref.id, "conversation": ref.summary(),
                            "sessions": [s.to_dict() for s in ref.sessions]})
        click.echo(_dumps_line(redact_output(payload)))
        return
    table = Table("field", "value", show_header=False)
    rows = _session_rows(found) if only_session else _conversation_rows(ref)
    if only_session and len(ref.sessions) > 1:
        rows.insert(1, ("conversation", f"{ref.id} ({len(ref.sessions)} sessions; drop "
                                        "--only-session for all of it)"))
    for key, value in rows:
        table.add_row(key, escape(redact(value)))
    console = make_console()
    console.print(table)
    console.print(escape(redact(recap)))


def _search_scope(store: StateStore, session_id: str | None, only_session: bool,
                  ) -> tuple[str | None, bool, ConversationRef | None]:
    """The session to search from, whether with its lineage, and the conversation named."""
    if session_id is None:
        return None, True, None
    ref = find(store, session_id)
    if only_session:
        return ref.session.id, False, ref
    # The lineage of the newest session: every session of the conversation (and, for a
    # branch, the history it was branched from — what searching it always included).
    return ref.tip.id, True, ref


def _hit_dict(hit: SearchHit, query: str, conversations: dict[str, str]) -> dict[str, object]:
    content = redact(hit.content)
    matches = find_matches(content, query)
    cut = snippet(content, matches)
    return {
        **redact_output(hit.to_dict()),
        "content": content,
        "conversation_id": conversations.get(hit.session_id, hit.session_id),
        "snippet": cut.text,
        "snippet_matches": [list(m) for m in cut.matches],
        "matches": [list(m) for m in matches],
    }


def _conversation_ids(store: StateStore, hits: list[SearchHit]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for sid in {h.session_id for h in hits}:
        row = store.get_session(sid)
        ids[sid] = row.conversation_id or row.id
    return ids


def _hit_line(role: str, cut: Snippet) -> str:
    """The hit's line: its snippet, each match «between guillemets» and in bold."""
    parts: list[str] = []
    cursor = 0
    for start, end in cut.matches:
        parts += [escape(cut.text[cursor:start]),
                  "[bold reverse]«" + escape(cut.text[start:end]) + "»[/bold reverse]"]
        cursor = end
    parts.append(escape(cut.text[cursor:]))
    return f"[bold]▶ {role}:[/bold] " + "".join(parts)


@click.command("search")
@_common
@click.argument("query")
@click.option("--session", "session_id", default=None,
              help="Search this conversation only: a conversation id, the id of any of its "
              "sessions, a title or `last`.")
@only_session_option
@click.option("--no-lineage", is_flag=True,
              help="With --session: the session named only (the same as --only-session).")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(min=1, max=500))
def search_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    query: str,
    session_id: str | None,
    only_session: bool,
    no_lineage: bool,
    limit: int,
) -> None:
    """Full-text search of every stored message (archived ones too), with the messages
    around each hit.  Each hit shows a snippet around the match, the matched text
    «highlighted», and is marked ▶ among its context lines; ``--json`` adds ``snippet``,
    ``snippet_matches`` (``[start, end]`` in the snippet), ``matches`` (``[start, end]`` in
    ``content``) and ``conversation_id`` to each hit.  No LLM call."""
    if (only_session or no_lineage) and session_id is None:
        fail("--only-session and --no-lineage need --session ID (the session to search)")
    with _opened(store_path, config_path, create=False) as store:
        scope, lineage, ref = _search_scope(store, session_id, only_session or no_lineage)
        hits = store.session_search(query, scope, lineage, limit)
        conversations = _conversation_ids(store, hits)
    if as_json:
        click.echo(_dumps_line([_hit_dict(h, query, conversations) for h in hits]))
        return
    if not hits:
        where = ""
        if ref is not None:
            named = "" if session_id == ref.id else f" ({session_id!r})"
            where = f" in conversation {ref.id}{named}, {len(ref.sessions)} session(s)"
            if not lineage:
                where = (f" in session {scope}{named} alone (drop --only-session to search "
                         f"its conversation {ref.id})")
        click.echo(f"No matches{where}.")
        return
    console = make_console()
    for hit in hits:
        state = "" if hit.active else " [dim](archived)[/dim]"
        conversation = conversations.get(hit.session_id, hit.session_id)
        of = "" if conversation == hit.session_id else f" of conversation {conversation}"
        content = redact(hit.content)  # secrets out of the output; matches in what is shown
        matches = find_matches(content, query)
        cut = snippet(content, matches)
        note = ""
        if not matches and find_matches(hit.content, query):
            note = "  [dim](the match is inside a redacted secret)[/dim]"
        elif not matches:
            note = "  [dim](matched in its tool call or tool name, not its text)[/dim]"
        elif len(matches) > len(cut.matches):
            more = len(matches) - len(cut.matches)
            note = f"  [dim](+{more} more match{'es' if more > 1 else ''} in it)[/dim]"
        console.print(
            f"[bold]{hit.session_id}[/bold]{of} #{hit.message_id} {hit.role}{state}"
            f"  [dim]{_when(hit.timestamp)}[/dim]"
        )
        for m in hit.before:
            console.print(f"    [dim]{m.role}: {escape(_describe(m.message, 120))}[/dim]")
        console.print("  " + _hit_line(hit.role, cut) + note)
        for m in hit.after:
            console.print(f"    [dim]{m.role}: {escape(_describe(m.message, 120))}[/dim]")
        console.print()


@click.command("lineage")
@_common
@only_session_option
@click.argument("session")
def lineage_cmd(
    store_path: str | None, config_path: Path | None, as_json: bool, only_session: bool,
    session: str,
) -> None:
    """The chain of sessions (root first) that compression rotations made of a
    conversation (by conversation id, the id of any of its sessions, a title or ``last``),
    up to its newest session — for a branch, the sessions it was branched from first.
    ``--only-session``: the chain up to the session named, not past it."""
    with _opened(store_path, config_path, create=False) as store:
        ref = find(store, session)
        last = ref.session if only_session else ref.tip
        chain = [store.get_session(sid) for sid in store.lineage(last.id)]
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in chain], indent=2, ensure_ascii=False))
        return
    members = {s.id for s in ref.sessions}
    table = Table("#", "id", "title", "created", "messages", "compressions", "status",
                  title=f"Lineage of conversation {ref.id} (root first)",
                  caption=f"{session!r} resolved to conversation {ref.id}"
                  if session != ref.id else None)
    for depth, s in enumerate(chain):
        status = _status(s)
        if s.id not in members:
            status += " (before the branch)"
        elif s.id == ref.tip.id:
            status += " (newest)"
        table.add_row(str(depth), s.id, escape(redact(s.title or "")), _when(s.created_at),
                      f"{s.active_count}/{s.message_count}", str(s.compression_count),
                      escape(status))
    table.columns[1].no_wrap = True
    make_console().print(table)
