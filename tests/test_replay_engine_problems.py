"""A broken engine is visible in ``hermes-host replay`` (issue 12, "visible failures").

The engines are real installed distributions (``plugins_helpers.FakeInstall``: real
``dist-info`` metadata found by ``importlib.metadata`` and stevedore) that raise, answer
something invalid, answer a plain ``dict`` or hang; the transcript is a real one.  Before the
fix such a replay printed the same table as a healthy one and exited 0; the reason was only
in ``--json``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugins_helpers import (
    ENGINE_GROUP,
    FLAKY_MESSAGE,
    FLAKY_SECRET,
    FLAKY_SOURCE,
    FakeDist,
    FakeInstall,
    fake_installation,
    write_config,
)

from hermes_host.cli import cli
from tests.host_helpers import TRANSCRIPTS

MESSAGE, SECRET = FLAKY_MESSAGE, FLAKY_SECRET
TRANSCRIPT = TRANSCRIPTS / "taubench-airline-gpt4o-task33-trial0.jsonl"
needs_transcript = pytest.mark.skipif(
    not TRANSCRIPT.is_file(), reason=f"real transcript {TRANSCRIPT} not found"
)

fake = pytest.fixture(fake_installation, name="fake")


@pytest.fixture
def flaky(fake: FakeInstall) -> Iterator[FakeInstall]:
    fake.add(FakeDist("acme-flaky", "1.0", {ENGINE_GROUP: {"flaky": "acme_flaky:Flaky"}},
                      {"acme_flaky": FLAKY_SOURCE}))
    fake.activate(allow="flaky,compressor")
    try:
        yield fake
    finally:
        module = sys.modules.get("acme_flaky")
        if module is not None:
            module.RELEASE.set()  # no hung fence worker outlives the test


def _config(tmp_path: Path, mode: str | None) -> Path:
    engine = (
        "context:\n  engine: compressor\n"
        if mode is None
        else f"context:\n  engine: flaky\nengines:\n  flaky:\n    mode: {mode}\n"
    )
    return write_config(
        tmp_path,
        engine
        + "summarizer:\n  provider: offline\nmemory:\n  providers: []\n"
        + "hooks:\n  timeouts:\n    should_compress: 0.2\n    select_context: 0.2\n",
        name=f"config-{mode}.yaml",
    )


def _replay(tmp_path: Path, mode: str | None, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli,
        ["replay", str(TRANSCRIPT), "--store", str(tmp_path / f"{mode}.db"),
         "--context-length", "8000", "--config", str(_config(tmp_path, mode)), *extra],
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


@needs_transcript
def test_a_raising_engine_is_reported_in_plain_output_with_its_message(
    tmp_path: Path, flaky: FakeInstall
) -> None:
    code, out, _ = _replay(tmp_path, "raise")
    assert code == 0, out  # without --strict a replay with a broken engine still completes
    assert "engine problems" in out
    for hook in ("should_compress", "select_context"):
        assert f"flaky.{hook} last error: plugin 'flaky' hook {hook!r} raised RuntimeError: " \
            f"{MESSAGE}" in out, out
    assert "open" in out  # three failures in a row opened the breaker
    assert SECRET not in out and "[REDACTED]" in out


@needs_transcript
def test_strict_exits_1_for_every_kind_of_engine_problem(
    tmp_path: Path, flaky: FakeInstall
) -> None:
    for mode, needles in (
        ("raise", ["raised RuntimeError"]),
        ("invalid", [
            "should_compress' returned an invalid result: returned str, expected "
            "CompressDecision",
            # each hook has its own breaker, so select_context's last error is its third
            "select_context' returned an invalid result: 2 window invariant violation(s): "
            "alternation at ",
        ]),
        ("dict", ["returned a plain dict, expected CompressDecision or None",
                  "returned a plain dict, expected SelectResult or None"]),
        ("hang", ["timed out after 0.2s"]),
    ):
        started = time.monotonic()
        code, out, _ = _replay(tmp_path, mode, "--strict")
        assert code == 1, (mode, out)
        for needle in needles:
            assert needle in out, (mode, needle, out)
        assert "engine problems" in out
        if mode == "hang":  # the breaker skips the hung engine: not 0.2 s per step
            assert time.monotonic() - started < 30
            assert "skipped" in out


@needs_transcript
def test_strict_exits_0_for_a_healthy_replay(tmp_path: Path, flaky: FakeInstall) -> None:
    code, out, _ = _replay(tmp_path, None, "--strict")
    assert code == 0, out
    assert "engine problems" not in out
    assert "replay of" in out


@needs_transcript
def test_json_lists_engine_problems_per_engine_and_hook(
    tmp_path: Path, flaky: FakeInstall
) -> None:
    code, out, err = _replay(tmp_path, "raise", "--json", "--strict")
    assert code == 1
    data = json.loads(out)  # still exactly one JSON object on stdout
    rows = {(r["plugin"], r["hook"]): r for r in data["engine_problems"]}
    assert set(rows) == {("flaky", "should_compress"), ("flaky", "select_context")}
    # one breaker per plugin and hook: three failures in a row open each
    assert all(r["errors"] == 3 for r in rows.values())
    for row in rows.values():
        assert row["skipped"] > 0 and row["breaker"] == "open"
        assert row["calls"] == row["errors"] + row["skipped"] + row["ok"] + row["none"]
        assert MESSAGE in row["last_error"] and SECRET not in row["last_error"]
    assert "engine problem(s)" in err


@needs_transcript
def test_trace_prints_the_message_and_the_traceback_reaches_stderr(
    tmp_path: Path, flaky: FakeInstall
) -> None:
    """``HERMES_HOST_TRACE_PLUGINS=1`` printed ``error=RuntimeError`` without the message,
    and no traceback was logged at any level; a real subprocess of the console script."""
    env = {**os.environ, "HERMES_HOST_TRACE_PLUGINS": "1",
           "PYTHONPATH": os.pathsep.join([str(flaky.root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hermes-host"), "replay", str(TRANSCRIPT), "--json",
         "--store", str(tmp_path / "t.db"), "--context-length", "8000",
         "--config", str(_config(tmp_path, "raise"))],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr
    trace = [line for line in done.stderr.splitlines()
             if line.startswith("[hermes-host trace] plugin=flaky hook=should_compress")
             and "provenance=error" in line]
    assert trace and f"error=RuntimeError message=plugin 'flaky' hook 'should_compress' " \
        f"raised RuntimeError: {MESSAGE}" in trace[0]
    assert "[hermes-host WARNING] plugin 'flaky' hook 'should_compress' raised" in done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert 'in _fail\n    raise RuntimeError' in done.stderr  # the plugin's own frame
    assert SECRET not in done.stderr and SECRET not in done.stdout


def test_the_fence_logs_the_traceback_at_warning(
    caplog: pytest.LogCaptureFixture, flaky: FakeInstall, tmp_path: Path
) -> None:
    """Embedding: the ``hermes_host.fence`` logger gets the redacted traceback at WARNING,
    and the breaker opening once."""
    from hermes_host.config import load_config
    from hermes_host.host import ContextHost

    host = ContextHost.from_config(load_config(_config(tmp_path, "raise")),
                                   store=tmp_path / "e.db")
    try:
        session = host.open_session("embedded", "You are terse.")
        with caplog.at_level(logging.WARNING, logger="hermes_host.fence"):
            for i in range(5):
                session.add_user(f"question {i}")
                session.build_request()
                session.add_assistant("answer")
                session.end_turn()
        problems = [r for r in host.engine_health() if r["problems"]]
        status = session.status()
    finally:
        host.close()
    raised = [r for r in caplog.records if "raised RuntimeError" in r.getMessage()]
    assert raised and all(r.levelno == logging.WARNING for r in raised)
    assert all(r.name == "hermes_host.fence" for r in raised)
    assert "Traceback (most recent call last)" in raised[0].getMessage()
    assert "[REDACTED]" in raised[0].getMessage()
    assert all(SECRET not in r.getMessage() for r in caplog.records)
    opened = [r for r in caplog.records if "circuit breaker opened" in r.getMessage()]
    # one breaker per hook: each opens once, naming its own hook
    assert len(opened) == 2 and all("'flaky'" in r.getMessage() for r in opened)
    assert {h for h in ("'should_compress'", "'select_context'")
            for r in opened if h in r.getMessage()} == {"'should_compress'", "'select_context'"}
    assert {(r["plugin"], r["hook"]) for r in problems} == {
        ("flaky", "should_compress"), ("flaky", "select_context")
    }
    assert all(r["breaker"] == "open" for r in problems)
    assert status["engine_problems"] == problems
