"""Rich output is whole when piped, and keeps ids whole on a narrow terminal (issue 30,
deliverable 5).

Before: every command printed through a ``Console()`` of rich's default 80 columns when its
output was not a terminal, so ``hermes-host replay … | tail`` showed the engine-problems
table's ``breaker`` heading as ``brea``, and ``demo`` wrapped a compression's session ids
onto the next line.  Now every table and line goes through one console helper
(:mod:`hermes_host.cli.output`): no width limit when piped, and on a terminal the columns
of ids, names and numbers never wrap.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugins_helpers import (
    ENGINE_GROUP,
    FLAKY_SOURCE,
    FakeDist,
    FakeInstall,
    fake_installation,
    write_config,
)
from rich.console import Console
from rich.table import Table

from hermes_host.cli import cli
from hermes_host.cli.output import PIPED_WIDTH, console, keep_tokens_whole
from tests.host_helpers import TRANSCRIPTS

TRANSCRIPT = TRANSCRIPTS / "taubench-airline-gpt4o-task33-trial0.jsonl"
needs_transcript = pytest.mark.skipif(
    not TRANSCRIPT.is_file(), reason=f"real transcript {TRANSCRIPT} not found"
)
ID = re.compile(r"\b\d{8}_\d{6}_[0-9a-f]{6}\b")
"""A session id, whole."""

fake = pytest.fixture(fake_installation, name="fake")
NAME = "acme_flaky_context_engine_v2"
"""A third party's engine name: long enough that its table outgrows 80 columns."""


@pytest.fixture
def flaky(fake: FakeInstall) -> Iterator[FakeInstall]:
    fake.add(FakeDist("acme-flaky", "1.0", {ENGINE_GROUP: {NAME: "acme_flaky:Flaky"}},
                      {"acme_flaky": FLAKY_SOURCE}))
    fake.activate(allow=f"{NAME},compressor")
    try:
        yield fake
    finally:
        module = sys.modules.get("acme_flaky")
        if module is not None:
            module.RELEASE.set()  # no hung fence worker outlives the test


@needs_transcript
def test_replay_engine_problems_table_is_whole_when_piped(
    tmp_path: Path, flaky: FakeInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    config = write_config(
        tmp_path,
        f"context:\n  engine: {NAME}\nengines:\n  {NAME}:\n    mode: raise\n"
        "summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
    )
    result = CliRunner().invoke(cli, [
        "replay", str(TRANSCRIPT), "--store", str(tmp_path / "s.db"), "--context-length",
        "8000", "--config", str(config)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    [header] = [line for line in lines if "engine.hook" in line]
    assert header.split() == ["engine.hook", "calls", "errors", "timeouts", "invalid",
                              "skipped", "breaker"]
    rows = [line.split() for line in lines
            if line.strip().startswith(f"{NAME}.") and "last error" not in line]
    assert {row[0] for row in rows} == {f"{NAME}.should_compress", f"{NAME}.select_context"}
    assert all(row[-1] == "open" for row in rows), rows
    # the summary table's session id is whole, on the row that names it
    [session] = [line for line in lines if " session " in f" {line} " and ID.search(line)]
    assert "(lineage of" in session


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HERMES_", "ANTHROPIC_", "COLUMNS"))}
    env.update({"HERMES_HOST_HOME": str(cwd / "home"), "NO_COLOR": "1"})
    return subprocess.run(
        [sys.executable, "-c", "from hermes_host.cli import cli; cli()", *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def test_demo_piped_keeps_every_id_on_its_line(tmp_path: Path) -> None:
    """The demo into a pipe (a real process): the lineage is one line of whole ids, and
    each compression's 'session A → B' line holds both ids."""
    proc = _cli(["demo", "--store", str(tmp_path / "demo.db")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    [lineage] = [line for line in lines if line.startswith("lineage: ")]
    ids = lineage.removeprefix("lineage: ").split(" → ")
    assert len(ids) >= 4 and all(ID.fullmatch(i) for i in ids), lineage
    moves = [line for line in lines if "tokens; session " in line]
    assert moves and all(len(ID.findall(line)) == 2 for line in moves), moves
    assert not any(ID.fullmatch(line.strip()) for line in lines), "an id alone on a line"
    table_ids = {m for line in lines if line.startswith("│") for m in ID.findall(line)}
    assert table_ids == set(ids[1:]), "every compression's session, whole, in the table"


def test_the_shared_console_has_no_width_limit_when_piped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # a pipe has no columns, whatever the shell says
    out = console()
    assert not out.is_terminal and out.width == PIPED_WIDTH


def test_on_a_narrow_terminal_id_columns_do_not_wrap() -> None:
    """On an 80-column terminal the prose column wraps; the id and name columns stay whole."""
    ids = ["20261206_194043_2568ba", "20261206_194043_4f1b6a"]
    table = Table("id", "engine.hook", "note")
    for sid in ids:
        table.add_row(sid, "topic_router.select_context",
                      "a long note about what happened in this session " * 3)
    keep_tokens_whole(table)
    assert [c.no_wrap for c in table.columns] == [True, True, False]
    term = Console(width=80, force_terminal=True, color_system=None, record=True)
    term.print(table)
    text = term.export_text()
    assert all(sid in text for sid in ids) and text.count("topic_router.select_context") == 2
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_chat_on_an_80_column_terminal_keeps_session_ids_whole(tmp_path: Path) -> None:
    """The real console script on an 80-column pseudo-terminal, against the loopback
    Anthropic fake: /sessions lists two conversations with long titles; each id is whole on
    one screen line."""
    from hermes_host.testing.fake_anthropic import FakeAnthropic
    from tests.chat_helpers import PtyChat, chat_env, chat_responder
    from tests.chat_helpers import write_config as write_chat_config

    with FakeAnthropic(responder=chat_responder) as server:
        config = write_chat_config(tmp_path, context_length=200_000)
        env = {**chat_env(tmp_path, server.env()), "COLUMNS": "80"}
        chat = PtyChat(["--config", str(config), "--store", str(tmp_path / "state.db"),
                        "--title", "a first conversation with a long descriptive title"],
                       env, tmp_path)
        try:
            chat.send("hello there")
            chat.send("/branch a second conversation that also has a long title")
            listing = chat.send("/sessions")
            chat.type(b"\x04")
            assert chat.wait() == 0
        finally:
            chat.kill()
    lines = listing.splitlines()
    assert max(len(line) for line in lines) <= 80, listing
    ids = [m for line in lines for m in ID.findall(line)]
    assert len(ids) == 2 and len(set(ids)) == 2, listing
    # no id cut across lines: no line holds a fragment of an id in the id column
    assert not [line for line in lines if re.search(r"│\s*\*?\s*│\s*\d{6,}[0-9_a-f]*\s*│", line)
                and not ID.search(line)], listing
