"""Issue 31: no secret of the documented forms reaches what a person or a log is shown.

Every form of ``secret_forms.py`` (written from the providers' documentation, ≥ 150) is
planted in a transcript — in a user turn, in JSON-encoded tool-call arguments and in tool
output — which a real ``hermes-host replay`` subprocess stores in a real SQLite file with the
offline summariser at a small window (so compactions write summaries).  Then:

* the summaries it wrote, its stdout and its stderr (the log) hold no secret;
* ``sessions search`` (human and ``--json``, for a word of every planted message and for
  each secret itself), ``sessions show`` and ``sessions export`` (JSONL, ``--json``,
  Markdown), run through click on that store, hold none;
* ``sessions export --verbatim`` (a backup) holds every one, as stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from secret_forms import FORMS

from hermes_host.cli import cli

SECRETS = sorted({s for f in FORMS for s in f.secrets})
PROBE = "zqxprobe"
ENV = {"COLUMNS": "100000", "NO_COLOR": "1"}  # no wrapping: a secret is never split


def _leaks(text: str) -> list[str]:
    """The secrets in ``text``: as written, JSON-escaped, or split by whitespace."""
    flat = "".join(text.split())
    return [s for s in SECRETS
            if s in text or json.dumps(s)[1:-1] in text or "".join(s.split()) in flat]


def _transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "A careful agent."}]
    for n, form in enumerate(FORMS):
        call = f"call_{n}"
        messages += [
            {"role": "user", "content": f"step {n} {PROBE}: {form.text}"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": call, "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": form.text})},
            }]},
            {"role": "tool", "tool_call_id": call, "content": f"{PROBE} output\n{form.text}"},
            {"role": "assistant", "content": f"Step {n} looked at the {form.family} output."},
        ]
    return messages


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("secret-outputs")
    transcript = root / "t.jsonl"
    transcript.write_text("".join(json.dumps(m) + "\n" for m in _transcript()),
                          encoding="utf-8")
    config = root / "config.yaml"
    config.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                      encoding="utf-8")
    db = root / "state.db"
    env = dict(os.environ, HERMES_HOST_HOME=str(root), NO_COLOR="1")
    env.pop("HERMES_HOST_CONFIG", None)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hermes-host"), "replay", str(transcript),
         "--config", str(config), "--store", str(db), "--context-length", "6000",
         "--title", "secrets", "--json"],
        capture_output=True, text=True, timeout=900, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {"db": db, "config": config, "stdout": done.stdout, "stderr": done.stderr,
            "result": json.loads(done.stdout)}


def _run(replayed: dict[str, Any], *args: str) -> str:
    result = CliRunner().invoke(
        cli, [*args, "--store", str(replayed["db"]), "--config", str(replayed["config"])],
        env=ENV, catch_exceptions=False)
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output
    return result.output


def test_corpus_has_150_independent_forms() -> None:
    assert len(FORMS) >= 150 and len({f.text for f in FORMS}) == len(FORMS)


def test_replay_summaries_and_log_hold_no_secret(replayed: dict[str, Any]) -> None:
    committed = [c for c in replayed["result"]["compressions"] if c["status"] == "committed"]
    assert len(committed) >= 3  # summaries were written over the planted forms
    conn = sqlite3.connect(replayed["db"])
    try:
        summaries = [r[0] for r in conn.execute("SELECT content, extra FROM messages")
                     if r[0] and r[1] and "_compressed_summary" in r[1]]
    finally:
        conn.close()
    assert len(summaries) >= 3
    # a summary merged into a kept message carries that message as it was received
    verbatim = [m["content"] for m in _transcript() if isinstance(m.get("content"), str)]
    leaked = []
    for summary in summaries:
        for v in verbatim:
            summary = summary.replace(v, "<verbatim>")
        leaked += _leaks(summary)
    assert leaked == []
    assert _leaks(replayed["stdout"]) == []
    assert _leaks(replayed["stderr"]) == []


def test_sessions_search_shows_no_secret(replayed: dict[str, Any]) -> None:
    human = _run(replayed, "sessions", "search", PROBE, "--limit", "500")
    assert human.count(PROBE) >= len(FORMS)  # every planted user turn and tool output
    as_json = _run(replayed, "sessions", "search", PROBE, "--limit", "500", "--json")
    hits = json.loads(as_json)
    assert len(hits) >= 2 * len(FORMS) - 10
    assert _leaks(human) == [] and _leaks(as_json) == []


def test_searching_for_a_secret_does_not_print_it(replayed: dict[str, Any]) -> None:
    found = 0
    leaked: list[str] = []
    for secret in SECRETS:
        query = secret.splitlines()[0][:60]
        out = _run(replayed, "sessions", "search", query, "--limit", "3")
        found += "No matches" not in out
        leaked += [s for s in _leaks(out) if s.startswith(query) or query in s]
    assert leaked == []
    assert found >= len(SECRETS) // 2  # the store does find them; the output hides them


def test_sessions_show_shows_no_secret(replayed: dict[str, Any]) -> None:
    human = _run(replayed, "sessions", "show", "secrets")
    as_json = _run(replayed, "sessions", "show", "secrets", "--json")
    assert json.loads(as_json)["window"]
    assert _leaks(human) == [] and _leaks(as_json) == []


def test_sessions_export_redacts_unless_verbatim(replayed: dict[str, Any]) -> None:
    jsonl = _run(replayed, "sessions", "export", "secrets")
    assert len(jsonl.splitlines()) >= 4 * len(FORMS)
    as_json = _run(replayed, "sessions", "export", "secrets", "--json")
    markdown = _run(replayed, "sessions", "export", "secrets", "--format", "markdown")
    assert _leaks(jsonl) == [] and _leaks(as_json) == [] and _leaks(markdown) == []
    assert "[REDACTED]" in jsonl
    backup = _run(replayed, "sessions", "export", "secrets", "--verbatim")
    assert sorted(_leaks(backup)) == SECRETS  # a backup is the conversation as stored
    restored = [json.loads(line) for line in backup.splitlines()]
    assert restored[1:5] == _transcript()[1:5]


def test_export_help_says_what_verbatim_does() -> None:
    out = CliRunner().invoke(cli, ["sessions", "export", "--help"], env=ENV).output
    assert "--verbatim" in out and "writes secrets as stored; for backups" in out.lower()
