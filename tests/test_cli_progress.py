"""Progress bars with an ETA on ``replay``, ``eval`` and ``store migrate`` (issue 30,
deliverable 5): on stderr, only when stderr is a terminal, never with ``--json``.

Each command runs as a real process whose stderr is a pseudo-terminal and whose stdout is a
pipe, so what a user sees and what a script reads are checked apart.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.transcripts import load_transcript
from tests.host_helpers import TRANSCRIPTS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

TRANSCRIPT = TRANSCRIPTS / "taubench-airline-gpt4o-task33-trial0.jsonl"
needs_transcript = pytest.mark.skipif(
    not TRANSCRIPT.is_file(), reason=f"real transcript {TRANSCRIPT} not found"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BAR = re.compile(r"\d+/\d+ \d:\d\d:\d\d ETA (-:--:--|\d:\d\d:\d\d)")
"""done/total, elapsed, ETA and the time remaining, as the bar draws them."""


def _run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """The CLI with stdout to a pipe and stderr on a pseudo-terminal: exit code, stdout,
    the terminal's text (escape sequences removed)."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "ANTHROPIC_"))}
    env.update({"HERMES_HOST_HOME": str(cwd / "home"), "COLUMNS": "150", "TERM": "xterm",
                "NO_COLOR": "1"})
    proc = subprocess.Popen(
        [sys.executable, "-c", "from hermes_host.cli import cli; cli()", *args],
        stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(slave)
    screen = b""
    assert proc.stdout is not None
    out = b""
    streams = [master, proc.stdout.fileno()]
    while streams:
        ready, _, _ = select.select(streams, [], [], 120)
        assert ready, "the command hung"
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other end closed
                data = b""
            if not data:
                streams.remove(fd)
            elif fd == master:
                screen += data
            else:
                out += data
    os.close(master)
    proc.stdout.close()
    code = proc.wait(60)
    return code, out.decode(), ANSI.sub("", screen.decode("utf-8", "replace"))


@needs_transcript
def test_replay_draws_a_bar_with_an_eta_on_a_terminal_only(tmp_path: Path) -> None:
    args = ["replay", str(TRANSCRIPT), "--store", str(tmp_path / "a.db"),
            "--context-length", "8000"]
    code, out, screen = _run(args, tmp_path)
    assert code == 0, screen
    assert f"replay {TRANSCRIPT.name}" in screen and BAR.search(screen), screen
    assert "replay of" in out and "ETA" not in out and "\x1b" not in out
    # with --json: stdout is one JSON object, the terminal shows no bar
    code, out, screen = _run([*args[:3], str(tmp_path / "b.db"), *args[4:], "--json"],
                             tmp_path)
    assert code == 0, screen
    assert json.loads(out)["turns"] > 0
    assert "ETA" not in screen and not BAR.search(screen)


@needs_transcript
def test_eval_draws_a_bar_over_its_runs(tmp_path: Path) -> None:
    args = ["eval", str(TRANSCRIPT), "--engines", "compressor", "--context-length", "8000"]
    code, out, screen = _run(args, tmp_path)
    assert code == 0, screen
    assert "eval 1 transcript(s) × 1 engine set(s)" in screen and BAR.search(screen), screen
    # the bar counts messages replayed, not runs: one long transcript still moves it
    assert f"/{len(load_transcript(TRANSCRIPT).messages)} " in screen, screen
    assert f"eval {TRANSCRIPT.name} [compressor]:" in screen  # the run's line stays
    assert "overall" in out and "ETA" not in out
    code, out, screen = _run([*args, "--json"], tmp_path)
    assert code == 0 and json.loads(out)["runs"]
    assert not BAR.search(screen) and f"eval {TRANSCRIPT.name} [compressor]:" in screen


@needs_transcript
def test_store_migrate_bar_is_on_stderr_not_in_the_report(tmp_path: Path) -> None:
    source = tmp_path / "from.db"
    code, _, screen = _run(["replay", str(TRANSCRIPT), "--store", str(source),
                            "--context-length", "8000", "--json"], tmp_path)
    assert code == 0, screen
    code, out, screen = _run(["store", "migrate", "--from", str(source), "--to",
                              str(tmp_path / "to.db")], tmp_path)
    assert code == 0, screen
    assert "migrate messages" in screen and BAR.search(screen), screen
    assert out.startswith("Copied ") and "ETA" not in out and "━" not in out
    code, out, screen = _run(["store", "migrate", "--from", str(source), "--to",
                              str(tmp_path / "json.db"), "--json"], tmp_path)
    assert code == 0 and json.loads(out)["ok"] is True
    assert not BAR.search(screen)


@needs_transcript
def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(cli, ["replay", str(TRANSCRIPT), "--store",
                                      str(tmp_path / "c.db"), "--context-length", "8000"])
    assert result.exit_code == 0, result.output
    assert "ETA" not in result.stderr and not BAR.search(result.stderr)
    assert "🗜️  turn" in result.stderr, "the compression lines still go to stderr"


def test_a_long_transcript_shows_it_is_being_read_before_the_bar(tmp_path: Path) -> None:
    """issue 31: a transcript of many lines takes seconds to read and check before the
    replay's bar can start; the terminal says so (``reading NAME (size)…``), the pipe and
    ``--json`` never do.  Its last line is broken, so the run ends after reading it, with
    the line named, once."""
    big = tmp_path / "long.jsonl"
    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                         "content": f"message {i}"}) for i in range(200_000)]
    big.write_text("\n".join([*lines, "not json"]) + "\n", encoding="utf-8")
    for command in (["replay", str(big)], ["eval", str(big), "--engines", "compressor"]):
        code, out, screen = _run(command, tmp_path)
        assert code == 2, screen
        assert "reading long.jsonl (" in screen and " MB)…" in screen, screen
        assert screen.count("long.jsonl:200001") == 1, screen
        assert "reading" not in out
        code, out, screen = _run([*command, "--json"], tmp_path)
        assert code == 2 and "reading" not in screen and "long.jsonl:200001" in screen
