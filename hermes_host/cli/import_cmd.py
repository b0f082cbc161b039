"""``hermes-host import FORMAT FILE... -o OUT``: other agents' logs → replayable transcripts.

The output is the OpenAI-format JSONL that ``hermes-host replay`` reads.  One FILE: a file
that cannot be converted is a one-line error naming the file and the line, exit code 2, and
nothing is written.  Several FILEs, or a directory of logs (``~/.claude/projects``,
``~/.codex/sessions``): one transcript per log in the directory ``-o`` names, a progress bar
with an ETA on a terminal's stderr (issue 30, deliverable 5), each log that cannot be
converted one error line on stderr while the others are still written, and exit code 2 at
the end when any failed.  (``sessions import`` stores an OpenAI-format transcript; this
command converts *to* that format.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hermes_host.importers import (
    FORMATS,
    ImportResult,
    NoConversationError,
    TranscriptImportError,
    import_file,
)

from .config_cmd import fail
from .inputs import expand_inputs, unique_name
from .output import progress_bar

__all__ = ["PATTERNS", "import_transcript"]

PATTERNS: dict[str, tuple[str, ...]] = {
    "claude-code": ("*.jsonl",),
    "codex": ("*.jsonl",),
    "openhands": ("*.json", "*.jsonl"),
}
"""The files a directory argument is searched for, per format."""

SUBAGENT = ("a Claude Code sub-agent's own log: its records are sidechains of another "
            "session's conversation")
"""Why a log of several is not converted, and not an error: it holds no conversation of its
own, only a sub-agent's (``isSidechain``), which ``claude-code`` skips in every log."""


def _write(result: ImportResult, output: Path) -> dict[str, Any]:
    """Write the transcript; its report.  Raises :class:`OSError`."""
    output.write_text(result.to_jsonl(), encoding="utf-8")
    report = result.summary()
    report["output"] = str(output)
    return report


def _wrote_line(report: dict[str, Any], source: Path | None = None) -> str:
    roles = ", ".join(f"{n} {role}" for role, n in report["by_role"].items())
    origin = f"{report['records']} records" + (f" of {source}" if source is not None else "")
    return f"Wrote {report['messages']} messages ({roles}) from {origin} to {report['output']}"


@click.command("import")
@click.argument("format", type=click.Choice(sorted(FORMATS)), metavar="FORMAT")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path),
                metavar="FILE...")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True,
    help="One FILE: where to write its OpenAI-format JSONL transcript (into it when it is a "
    "directory).  Several FILEs or a directory: the directory to write one transcript per "
    "log in, named after the log (created if missing).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def import_transcript(format: str, files: tuple[Path, ...], output: Path,
                      as_json: bool) -> None:
    """Convert FILE, another agent's session log, into a transcript for hermes-host replay.

    \b
    FORMAT is one of:
      claude-code   Claude Code session log (~/.claude/projects/*/<session>.jsonl)
      codex         Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)
      openhands     OpenHands event stream (JSON array or JSONL of events)

    Several FILEs, or a directory (searched recursively for *.jsonl; for openhands also
    *.json), convert each log into the directory -o names: a log that cannot be converted
    is one error line and the others are still written (exit code 2 at the end); a
    Claude Code sub-agent's own log (only sidechain records) is listed as not converted,
    no error.  A progress bar on a terminal.

    Records that are not conversation (summaries, reasoning, UI events) are skipped and
    counted in the report.
    """
    if len(files) == 1 and not files[0].is_dir():
        _import_one(format, files[0], output, as_json)
    else:
        _import_many(format, files, output, as_json)


def _import_one(format: str, file: Path, output: Path, as_json: bool) -> None:
    try:
        result = import_file(format, file)
    except TranscriptImportError as exc:
        fail(f"error: {exc}")
    if output.is_dir():
        output = output / f"{file.stem}.jsonl"
    if output.resolve() == file.resolve():
        fail(f"error: {output}: that is the log being converted; choose another output")
    try:
        report = _write(result, output)
    except OSError as exc:
        fail(f"error: {output}: cannot write the transcript: {exc.strerror or exc}")
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False))
        return
    click.echo(_wrote_line(report))
    if report["skipped"]:
        skipped = ", ".join(f"{kind} ×{n}" for kind, n in report["skipped"].items())
        click.echo(f"Skipped: {skipped}")
    click.echo(f"Next: hermes-host replay {output}")


def _import_many(format: str, args: tuple[Path, ...], directory: Path,
                 as_json: bool) -> None:
    """Each log into ``directory``; errors on stderr as they happen, the report after."""
    if directory.exists() and not directory.is_dir():
        fail(f"error: {directory}: not a directory; with several logs (or a directory of "
             "them) -o names the directory to write one transcript per log in")
    paths, errors = expand_inputs(args, PATTERNS[format], skip=directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"error: {directory}: cannot create the output directory: {exc.strerror or exc}")
    inputs = {path.resolve() for path in paths}
    taken: set[str] = set()
    entries: list[dict[str, Any]] = [{"file": str(arg), "error": error} for arg, error in errors]
    with progress_bar("import", as_json=as_json) as bar:
        for _, error in errors:
            bar.console.print(f"error: {error}", style="red", markup=False, highlight=False)
        task = bar.add_task("", total=len(paths))
        for path in paths:
            bar.update(task, description=path.name)
            target = directory / unique_name(path.stem, ".jsonl", taken)
            try:
                if target.resolve() in inputs:
                    raise TranscriptImportError(
                        path, None, f"its transcript would overwrite the log {target}; "
                        "choose another output directory")
                report = _write(import_file(format, path), target)
            except NoConversationError as exc:
                if not exc.skipped.get("sidechain"):
                    error = str(exc)
                else:  # a sub-agent's own log: its conversation is another session's
                    taken.discard(target.name)
                    entries.append({"file": str(path), "not_converted": SUBAGENT,
                                    "skipped": exc.skipped})
                    bar.advance(task)
                    continue
            except TranscriptImportError as exc:
                error = str(exc)
            except OSError as exc:
                error = f"{target}: cannot write the transcript: {exc.strerror or exc}"
            else:
                entries.append({"file": str(path), **report})
                bar.advance(task)
                continue
            entries.append({"file": str(path), "error": error})
            bar.console.print(f"error: {error}", style="red", markup=False, highlight=False)
            bar.advance(task)
    written = [e for e in entries if "output" in e]
    subagents = [e for e in entries if "not_converted" in e]
    failed = len(entries) - len(written) - len(subagents)
    if as_json:
        click.echo(json.dumps({"format": format, "output": str(directory),
                               "converted": len(written), "not_converted": len(subagents),
                               "failed": failed, "files": entries}, ensure_ascii=False))
    else:
        for entry in written:
            click.echo(_wrote_line(entry, Path(entry["file"])))
        for entry in subagents:
            click.echo(f"Not converted: {entry['file']}, {entry['not_converted']} "
                       f"(sidechain ×{entry['skipped']['sidechain']})")
        line = f"Converted {len(written)} of {len(entries)} logs into {directory}"
        if subagents:
            line += f"; {len(subagents)} sub-agent log(s) not converted"
        if failed:
            line += f"; {failed} could not be converted (the errors above)"
        click.echo(line)
        if written:
            click.echo(f"Next: hermes-host replay {written[0]['output']}, or compare engines "
                       f"on all of them: hermes-host eval {directory}/*.jsonl")
    if failed:
        raise SystemExit(2)
