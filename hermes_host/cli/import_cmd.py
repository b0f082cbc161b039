"""``hermes-host import FORMAT FILE -o OUT.jsonl``: another agent's log → a replayable transcript.

The output is the OpenAI-format JSONL that ``hermes-host replay`` reads.  A file that cannot
be converted is a one-line error naming the file and the line, exit code 2, and nothing is
written.  (``sessions import`` stores an OpenAI-format transcript; this command converts
*to* that format.)
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from hermes_host.importers import FORMATS, TranscriptImportError, import_file

from .config_cmd import fail

__all__ = ["import_transcript"]


@click.command("import")
@click.argument("format", type=click.Choice(sorted(FORMATS)), metavar="FORMAT")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="Where to write the OpenAI-format JSONL transcript.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def import_transcript(format: str, file: Path, output: Path, as_json: bool) -> None:
    """Convert FILE, another agent's session log, into a transcript for hermes-host replay.

    \b
    FORMAT is one of:
      claude-code   Claude Code session log (~/.claude/projects/*/<session>.jsonl)
      codex         Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)
      openhands     OpenHands event stream (JSON array or JSONL of events)

    Records that are not conversation (summaries, reasoning, UI events) are skipped and
    counted in the report.
    """
    try:
        result = import_file(format, file)
    except TranscriptImportError as exc:
        fail(f"error: {exc}")
    try:
        output.write_text(result.to_jsonl(), encoding="utf-8")
    except OSError as exc:
        fail(f"error: {output}: cannot write the transcript: {exc.strerror or exc}")
    report = result.summary()
    report["output"] = str(output)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False))
        return
    roles = ", ".join(f"{n} {role}" for role, n in report["by_role"].items())
    click.echo(f"Wrote {report['messages']} messages ({roles}) from {report['records']} "
               f"records to {output}")
    if report["skipped"]:
        skipped = ", ".join(f"{kind} ×{n}" for kind, n in report["skipped"].items())
        click.echo(f"Skipped: {skipped}")
    click.echo(f"Next: hermes-host replay {output}")
