"""Moving sessions in and out: ``sessions export`` (JSONL or Markdown, secrets redacted unless
``--verbatim`` asks for a backup) and ``sessions import``."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import click

from hermes_host.models import CompactionReceipt, Message
from hermes_host.redact import redact_output
from hermes_host.store import Session, StateStore, StoredMessage
from hermes_host.store.conversations import ConversationRef
from hermes_host.store.manifests import RecordingStore
from hermes_host.transcripts import (
    TranscriptError,
    check_transcript,
    iter_jsonl_objects,
    read_text,
)

from ..inputs import expand_inputs
from ..output import progress_bar
from .markdown import conversation_markdown
from .opening import _common, _dumps_line, _opened, fail, find, only_session_option

__all__ = ["EXPORT_FORMATS", "export_cmd", "import_cmd"]

EXPORT_FORMATS = ("jsonl", "markdown", "html")


def _markdown(store: StateStore, ref: ConversationRef, members: list[Session],
              rows: list[StoredMessage], verbatim: bool) -> str:
    """The Markdown export (issue 29), with the receipts and the last request's view."""
    receipts: list[CompactionReceipt] = []
    last = None
    if isinstance(store, RecordingStore):
        scope = [m.id for m in members]
        receipts = store.list_receipts(scope)
        requests = store.list_requests(scope)
        last = requests[-1] if requests else None
    return conversation_markdown(ref, rows, receipts, last, verbatim=verbatim)


def _write(output: Path | None, text: str, what: str, count: int) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write the export: {exc.strerror or exc}")
    click.echo(f"Exported {count} messages of conversation {what} to {output}", err=True)


@click.command("export")
@_common
@click.argument("session")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of stdout.")
@click.option("--active-only", is_flag=True,
              help="Only the live window (active rows), not archived history.")
@only_session_option
@click.option("--lineage", "whole", is_flag=True,
              help="The whole conversation (the default; kept for scripts that pass it).")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="jsonl",
              show_default=True,
              help="jsonl: the messages, for re-import (with --verbatim: a backup); markdown: a "
              "document to read, each compaction marked where it happened, secrets redacted; "
              "html: one self-contained page, the conversation as `hermes-host browse` shows "
              "it in model view, secrets redacted.")
@click.option("--verbatim", is_flag=True,
              help="Writes secrets as stored; for backups.  Without it every secret the "
              "redactor knows is replaced by [REDACTED] (docs/redaction.md).")
def export_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    session: str,
    output: Path | None,
    active_only: bool,
    only_session: bool,
    whole: bool,
    fmt: str,
    verbatim: bool,
) -> None:
    """Every stored message of a conversation (by conversation id, the id of any of its
    sessions, a title or ``last``) as OpenAI-format JSONL (``_`` metadata included), secrets
    redacted unless ``--verbatim`` (a backup: written as stored), the system prompt first:
    every session its rotations made, each message once, in the order written (with
    ``--active-only``: its live window).
    ``--only-session``: the rows of the one session named.  With ``--json``: one object
    with ``session`` (the newest session, or the one named), for a conversation also
    ``conversation_id`` and ``sessions``, and ``messages``."""
    if only_session and whole:
        fail("--lineage (the whole conversation) and --only-session contradict each other")
    if fmt == "html" and (only_session or active_only or as_json):
        fail("--format html exports the whole conversation as one page; drop --only-session, "
             "--active-only and --json")
    with _opened(store_path, config_path, create=False) as store:
        ref = find(store, session)
        if fmt == "html":
            from hermes_host.browse import conversation_html

            _write(output, conversation_html(store, ref), ref.id, ref.message_count)
            return
        found = ref.session if only_session else ref.tip
        members = [found] if only_session or active_only else ref.sessions
        rows = [
            r for member in members
            for r in store.all_messages(member.id, include_inactive=not active_only)
        ]
        if fmt == "markdown":
            if not only_session and not active_only:
                rows.sort(key=lambda r: r.id)
            _write(output, _markdown(store, ref, members, rows, verbatim), ref.id, len(rows))
            return
    if not only_session and not active_only:
        rows.sort(key=lambda r: r.id)  # each row once, in the order it was written
    messages = [r.message for r in rows]
    labels = [f"message #{r.id} of {r.session_id}" for r in rows]
    prompt = next((m.system_prompt for m in members if m.system_prompt), None)
    if prompt and not (messages and messages[0].get("role") == "system"):
        messages.insert(0, {"role": "system", "content": prompt})  # kept off the rows
        labels.insert(0, f"the system prompt of {members[0].id}")
    if not verbatim:
        messages = redact_output(messages)
    lines = [_dumps_line(m, what) + "\n" for m, what in zip(messages, labels, strict=True)]
    if as_json:
        head: dict[str, Any] = {"session": found.to_dict()}
        if not only_session:
            head.update({"conversation_id": ref.id,
                         "sessions": [m.to_dict() for m in ref.sessions]})
        text = _dumps_line({**(head if verbatim else redact_output(head)),
                            "messages": messages}) + "\n"
    else:
        text = "".join(lines)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write the export: {exc.strerror or exc}")
    what = found.id if only_session else f"conversation {ref.id}"
    click.echo(f"Exported {len(messages)} messages of {what} to {output}", err=True)


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _load(path: Path) -> tuple[list[Message], str | None]:
    """A transcript's messages, validated by the rules ``replay`` applies, and its system
    prompt (the first message's text when it is a system message).  Raises
    :class:`TranscriptError` naming the file and the line (the wording every transcript
    reader shares)."""
    numbered = list(iter_jsonl_objects(read_text(path), partial(TranscriptError, path)))
    if not numbered:
        raise TranscriptError(path, None,
                              "no messages found (expected one JSON object per line)")
    messages = [value for _, value in numbered]
    check_transcript(messages, path, [number for number, _ in numbered])  # what replay accepts
    first = messages[0]
    system_prompt = first["content"] if (
        first.get("role") == "system" and isinstance(first.get("content"), str)) else None
    return messages, system_prompt


def _index_pending(store: StateStore) -> None:
    index_pending = getattr(store, "index_pending", None)
    if callable(index_pending):
        index_pending()  # a bulk write leaves substring indexing for later: do it now


@click.command("import")
@_common
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path),
                metavar="FILE...")
@click.option("--title", default=None,
              help="Title of the new session (must be unused; one FILE only).")
@click.option("--source", default="import", show_default=True)
@click.option("--model", default=None)
@click.option("--cwd", default=None, help="Working directory to record for resume.")
def import_cmd(
    store_path: str | None,
    config_path: Path | None,
    as_json: bool,
    files: tuple[Path, ...],
    title: str | None,
    source: str,
    model: str | None,
    cwd: str | None,
) -> None:
    """Store an OpenAI-format JSONL transcript as a new session, verbatim.  Each line is
    validated first, by the rules ``replay`` applies; an error names the line and nothing
    is stored.

    Several FILEs, or a directory (searched recursively for *.jsonl, e.g. the output of
    ``hermes-host import FORMAT DIR -o OUT``), store one session per transcript: a file
    that cannot be read is one error line and the others are still stored (exit code 2 at
    the end); a progress bar on a terminal."""
    for option, value in (("--title", title), ("--source", source), ("--model", model),
                          ("--cwd", cwd)):
        if value is not None and not _utf8_ok(value):  # argv bytes that are not UTF-8
            fail(f"{option} is not valid UTF-8 text (it cannot be stored)")
    if len(files) == 1 and not files[0].is_dir():
        _import_one(store_path, config_path, as_json, files[0], title, source, model, cwd)
        return
    if title is not None:
        fail("--title names one session: give one FILE, or import without it")
    _import_many(store_path, config_path, as_json, files, source, model, cwd)


def _import_one(store_path: str | None, config_path: Path | None, as_json: bool, file: Path,
                title: str | None, source: str, model: str | None, cwd: str | None) -> None:
    try:
        messages, system_prompt = _load(file)
    except TranscriptError as exc:
        fail(str(exc))
    with _opened(store_path, config_path, create=True) as store:
        session = store.create_session(title=title, source=source, model=model, cwd=cwd,
                                       system_prompt=system_prompt)
        ids = store.append_messages(session.id, messages)
        _index_pending(store)
    if as_json:
        click.echo(json.dumps({"session_id": session.id, "title": session.title,
                               "messages": len(ids), "store": store.location}))
    else:
        click.echo(f"Imported {len(ids)} messages from {file} into session {session.id}")


def _import_many(store_path: str | None, config_path: Path | None, as_json: bool,
                 args: tuple[Path, ...], source: str, model: str | None,
                 cwd: str | None) -> None:
    """One session per transcript; errors on stderr as they happen, the report after."""
    paths, errors = expand_inputs(args, ("*.jsonl",))
    entries: list[dict[str, Any]] = [{"file": str(arg), "error": error} for arg, error in errors]
    with _opened(store_path, config_path, create=True) as store, progress_bar(
        "import", as_json=as_json
    ) as bar:
        for _, error in errors:
            bar.console.print(f"error: {error}", style="red", markup=False, highlight=False)
        task = bar.add_task("", total=len(paths))
        for path in paths:
            bar.update(task, description=path.name)
            try:
                messages, system_prompt = _load(path)
            except TranscriptError as exc:
                entries.append({"file": str(path), "error": str(exc)})
                bar.console.print(f"error: {exc}", style="red", markup=False, highlight=False)
            else:
                session = store.create_session(source=source, model=model, cwd=cwd,
                                               system_prompt=system_prompt)
                ids = store.append_messages(session.id, messages)
                entries.append({"file": str(path), "session_id": session.id,
                                "title": session.title, "messages": len(ids)})
            bar.advance(task)
        _index_pending(store)
    stored = [e for e in entries if "error" not in e]
    failed = len(entries) - len(stored)
    if as_json:
        click.echo(json.dumps({"store": store.location, "imported": len(stored),
                               "failed": failed, "files": entries}, ensure_ascii=False))
    else:
        for entry in stored:
            click.echo(f"Imported {entry['messages']} messages from {entry['file']} into "
                       f"session {entry['session_id']}")
        line = f"Imported {len(stored)} of {len(entries)} transcripts into {store.location}"
        if failed:
            line += f"; {failed} could not be read (the errors above)"
        click.echo(line)
    if failed:
        raise SystemExit(2)
