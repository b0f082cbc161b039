"""``hermes-host import`` and ``hermes-host sessions import`` over many logs (issue 30,
deliverable 5): several FILEs or a directory of them (``~/.claude/projects``,
``~/.codex/sessions``), one output per log, a log that cannot be read is one error line
while the others are still converted or stored (exit code 2 at the end), ``--json``, and a
progress bar with an ETA on a terminal's stderr, never with ``--json``.

The bar is checked on a real process whose stderr is a pseudo-terminal and whose stdout a
pipe (``tests/test_cli_progress.py``); the rest in CliRunner, whose stderr is no terminal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hermes_host.cli import cli
from hermes_host.store import open_store
from hermes_host.transcripts import load_transcript
from tests.importers_helpers import claude_code_records, codex_records, write_jsonl
from tests.test_cli_progress import BAR
from tests.test_cli_progress import _run as run_on_terminal

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
BAD_LINE = "imp/proj2/bad.jsonl:2:"


def _logs(tmp_path: Path) -> Path:
    """Claude Code's layout: one directory per project; two sessions share a file name, one
    log has a line that is not JSON, one is a sub-agent's, and a hidden directory is not
    searched."""
    root = tmp_path / "imp"
    for project, names in (("proj1", ["s1"]), ("proj2", ["s1", "s2"]), (".git", ["x"])):
        (root / project).mkdir(parents=True)
        for name in names:
            write_jsonl(root / project / f"{name}.jsonl", claude_code_records())
    (root / "proj2" / "bad.jsonl").write_text('{"type": "summary"}\nnot json\n',
                                              encoding="utf-8")
    write_jsonl(root / "proj2" / "agent-7.jsonl", [  # a sub-agent's own log: no error
        {**r, "isSidechain": True} for r in claude_code_records()
        if r.get("type") in ("user", "assistant")])
    (root / "proj2" / "notes.txt").write_text("not a log\n", encoding="utf-8")
    return root


def _invoke(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"HERMES_HOST_HOME": str(tmp_path / "h")})


@posix_only
def test_import_a_directory_draws_a_bar_and_converts_every_good_log(tmp_path: Path) -> None:
    _logs(tmp_path)
    code, out, screen = run_on_terminal(["import", "claude-code", "imp", "-o", "out"], tmp_path)
    assert code == 2, screen  # one log failed: the others are written, then exit 2
    assert "import " in screen and BAR.search(screen), screen
    assert "5/5" in screen, screen  # the bar ends at every log tried
    assert screen.count(BAD_LINE) == 1, screen  # the error, once, on stderr
    assert "agent-7" not in screen  # a sub-agent's log is no error
    assert "ETA" not in out and BAD_LINE not in out and "\x1b" not in out
    assert ("Converted 3 of 5 logs into out; 1 sub-agent log(s) not converted; 1 could not "
            "be converted") in out
    assert "Not converted: imp/proj2/agent-7.jsonl, a Claude Code sub-agent's own log" in out
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["s1-2.jsonl", "s1.jsonl", "s2.jsonl"]  # no .git/x, no notes.txt
    for name in written:  # each one a transcript replay accepts
        assert load_transcript(tmp_path / "out" / name).messages
    assert "imp/proj1/s1.jsonl to out/s1.jsonl" in out
    assert "imp/proj2/s1.jsonl to out/s1-2.jsonl" in out

    # --json: one JSON object on stdout, no bar; the error is still said once on stderr
    code, out, screen = run_on_terminal(["import", "claude-code", "imp", "-o", "jout",
                                         "--json"], tmp_path)
    assert code == 2
    report = json.loads(out)
    assert not BAR.search(screen) and screen.count(BAD_LINE) == 1, screen
    assert (report["converted"], report["not_converted"], report["failed"]) == (3, 1, 1)
    subagent = [f for f in report["files"] if "not_converted" in f]
    assert [f["file"] for f in subagent] == ["imp/proj2/agent-7.jsonl"]
    assert subagent[0]["skipped"]["sidechain"] > 0
    bad = [f for f in report["files"] if "error" in f]
    assert [f["file"] for f in bad] == ["imp/proj2/bad.jsonl"]
    assert bad[0]["error"].startswith(BAD_LINE)
    good = [f for f in report["files"] if "error" not in f]
    assert all(f["messages"] > 0 and Path(tmp_path / f["output"]).is_file() for f in good
               if "not_converted" not in f)

    # named alone, a sub-agent's log is an error that says what it holds
    code, out, screen = run_on_terminal(["import", "claude-code", "imp/proj2/agent-7.jsonl",
                                         "-o", "agent.jsonl"], tmp_path)
    assert code == 2 and not (tmp_path / "agent.jsonl").exists()
    assert "no conversation found (no user or assistant messages; it holds sidechain ×" in screen


def test_import_several_files_and_what_names_nothing(tmp_path: Path) -> None:
    root = _logs(tmp_path)
    codex = write_jsonl(tmp_path / "rollout-1.jsonl", codex_records())
    good = root / "proj1" / "s1.jsonl"
    (tmp_path / "empty").mkdir()
    result = _invoke(tmp_path, "import", "claude-code", str(good), str(good),
                     str(tmp_path / "missing.jsonl"), str(tmp_path / "empty"),
                     "-o", str(tmp_path / "out"), "--json")
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["converted"] == 1  # the file named twice is read once
    errors = [f["error"] for f in report["files"] if "error" in f]
    assert errors == [f"{tmp_path / 'missing.jsonl'}: no such file or directory",
                      f"{tmp_path / 'empty'}: a directory with no *.jsonl file in it"]
    assert all(error in result.stderr for error in errors)

    # every log converts: exit 0; codex rollouts too
    result = _invoke(tmp_path, "import", "codex", str(codex), str(codex.parent / "imp" /
                     "proj1" / "s1.jsonl"), "-o", str(tmp_path / "cx"))
    assert result.exit_code == 2  # a Claude Code log is no Codex rollout: said, not hidden
    assert "Converted 1 of 2 logs" in result.stdout and "s1.jsonl" in result.stderr
    assert load_transcript(tmp_path / "cx" / "rollout-1.jsonl").messages


def test_import_many_refuses_a_file_as_output_and_never_overwrites_a_log(
        tmp_path: Path) -> None:
    root = _logs(tmp_path)
    a_file = tmp_path / "taken.jsonl"
    a_file.write_text("x\n", encoding="utf-8")
    result = _invoke(tmp_path, "import", "claude-code", str(root), "-o", str(a_file))
    assert result.exit_code == 2 and "not a directory" in result.stderr
    assert a_file.read_text(encoding="utf-8") == "x\n"

    before = (root / "proj1" / "s1.jsonl").read_bytes()
    result = _invoke(tmp_path, "import", "claude-code", str(root / "proj1"),
                     "-o", str(root / "proj1"))
    assert result.exit_code == 2 and "would overwrite the log" in result.stderr
    assert (root / "proj1" / "s1.jsonl").read_bytes() == before
    result = _invoke(tmp_path, "import", "claude-code", str(root / "proj1" / "s1.jsonl"),
                     "-o", str(root / "proj1" / "s1.jsonl"))
    assert result.exit_code == 2 and "that is the log being converted" in result.stderr
    assert (root / "proj1" / "s1.jsonl").read_bytes() == before

    # -o inside the directory searched: a second run does not read the first one's output
    for run in range(2):
        result = _invoke(tmp_path, "import", "claude-code", str(root / "proj2"), "--json",
                         "-o", str(root / "proj2" / "out"))
        report = json.loads(result.stdout)
        assert [f["file"] for f in report["files"] if "/out/" in f["file"]] == [], run
        assert report["converted"] == 2 and report["failed"] == 1, report  # bad.jsonl

    # one FILE and an existing directory: the transcript goes into it, under the log's name
    (tmp_path / "into").mkdir()
    result = _invoke(tmp_path, "import", "claude-code", str(root / "proj1" / "s1.jsonl"),
                     "-o", str(tmp_path / "into"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == str(tmp_path / "into" / "s1.jsonl")
    assert load_transcript(tmp_path / "into" / "s1.jsonl").messages


def _transcripts(tmp_path: Path) -> Path:
    """OpenAI-format transcripts, as ``hermes-host import`` writes them, and a bad one."""
    root = _logs(tmp_path)
    result = _invoke(tmp_path, "import", "claude-code", str(root / "proj1"),
                     str(root / "proj2" / "s2.jsonl"), "-o", str(tmp_path / "t"))
    assert result.exit_code == 0, result.output
    (tmp_path / "t" / "bad.jsonl").write_text(
        '{"role": "user", "content": "hi"}\n{"role": "tool", "content": "x", '
        '"tool_call_id": "nope"}\n', encoding="utf-8")
    return tmp_path / "t"


@posix_only
def test_sessions_import_a_directory_draws_a_bar_and_stores_every_good_transcript(
        tmp_path: Path) -> None:
    folder = _transcripts(tmp_path)
    db = tmp_path / "s.db"
    code, out, screen = run_on_terminal(["sessions", "import", str(folder), "--store",
                                         str(db)], tmp_path)
    assert code == 2, screen
    assert "import " in screen and BAR.search(screen), screen
    assert screen.count("bad.jsonl:2:") == 1 and "bad.jsonl" not in out, screen
    assert "Imported 2 of 3 transcripts" in out and "ETA" not in out
    store = open_store(db)
    try:
        sessions = store.list_sessions()
        assert len(sessions) == 2
        for session in sessions:
            assert len(store.all_messages(session.id)) == 9
    finally:
        store.close()

    code, out, screen = run_on_terminal(["sessions", "import", str(folder), "--store",
                                         str(tmp_path / "j.db"), "--json"], tmp_path)
    assert code == 2 and not BAR.search(screen)
    report = json.loads(out)
    assert (report["imported"], report["failed"]) == (2, 1)
    assert {f["file"] for f in report["files"] if "session_id" in f} == {
        str(folder / "s1.jsonl"), str(folder / "s2.jsonl")}


def test_sessions_import_several_files_and_one_title(tmp_path: Path) -> None:
    folder = _transcripts(tmp_path)
    db = tmp_path / "s.db"
    files = [str(folder / "s1.jsonl"), str(folder / "s2.jsonl")]
    result = _invoke(tmp_path, "sessions", "import", *files, "--store", str(db),
                     "--title", "one")
    assert result.exit_code == 2 and "--title names one session" in result.stderr
    assert not db.exists()  # refused before the store was opened
    result = _invoke(tmp_path, "sessions", "import", *files, "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["imported"] == 2 and report["failed"] == 0
    store = open_store(db)
    try:
        assert {s.id for s in store.list_sessions()} == {
            f["session_id"] for f in report["files"]}
    finally:
        store.close()
