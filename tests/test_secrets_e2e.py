"""The secrets corpora end to end through the CLI: zero leaks (R-7.1, R-6.11, issue 13).

Both corpora — the hand-written one of documented formats (``secret_forms.py``) and the
generated one (``hermes_host.testing.secrets_corpus``) — are embedded in a synthetic
transcript, built here: in user turns, JSON-encoded tool-call arguments and tool output.
Real subprocesses then run

* ``hermes-host replay`` at a small ``--context-length`` (so compressions happen) with both
  select engines in the chain (``topic_router`` then ``retrieval``), the Anthropic summariser
  against the loopback fake server that *echoes the prompt it received* as the summary (so
  anything that reached the summariser would reach the summary), and
  ``HERMES_HOST_TRACE_PLUGINS=1``;
* ``hermes-host eval`` with ``compressor+retrieval`` and ``compressor+topic_router``, in JSON
  and as the human table.

What may hold a secret is what the contract says is kept verbatim: the store's message rows
are the session's own messages, persisted as received (docs/lifecycle.md), and a rotated
child session copies the kept tail verbatim.  Everything derived must not: summary rows,
any row whose text is not a verbatim input message (pruned tool output, markers), the
engines' state rows, session columns, stdout, stderr (logs and the plugin trace), the
summariser's request bodies, and the eval report.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_figures import record
from secret_forms import FORMS

from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.testing.secrets_corpus import secret_cases

CASES: list[tuple[str, tuple[str, ...]]] = [(f.text, f.secrets) for f in FORMS] + [
    (c.text, (c.secret,)) for c in secret_cases()
]
SECRETS = sorted({s for _, secrets in CASES for s in secrets})
CONTEXT_LENGTH = "8000"
PER_SLOT = 2  # cases per placement per turn
FILLER = " ".join(["the build and test output was long and unremarkable"] * 8)


def _figure(surface: str) -> None:
    """For docs/reliability.md (``nox -s reliability``): what was tried on ``surface``; only
    reached when that surface leaked nothing."""
    record("secrets", surface=surface, forms=len(FORMS), cases=len(CASES),
           secrets=len(SECRETS), leaks=0)


def _engines_installed() -> bool:
    from importlib.metadata import entry_points

    names = {e.name for e in entry_points(group="hermes_host.context_engines")}
    return {"compressor", "retrieval", "topic_router"} <= names


pytestmark = pytest.mark.skipif(
    not _engines_installed(), reason="needs the compressor, retrieval and topic_router engines"
)


def _transcript() -> list[dict[str, Any]]:
    """``PER_SLOT`` cases in each of: the user's request, the command the assistant runs
    (JSON-encoded arguments), the command's output."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."}
    ]
    for n in range(0, len(CASES), 3 * PER_SLOT):
        a, b, c = (
            "\n".join(CASES[(n + k * PER_SLOT + j) % len(CASES)][0] for j in range(PER_SLOT))
            for k in range(3)
        )
        call = f"call_{n}"
        messages += [
            {"role": "user", "content": f"Step {n}: look at src/pkg_{n}/app.py. {FILLER}\n{a}"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": call, "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": b})},
            }]},
            {"role": "tool", "tool_call_id": call, "content": f"$ step {n}\n{c}\n{FILLER}"},
            {"role": "assistant", "content": f"Step {n} done: src/pkg_{n}/app.py. {FILLER}"},
        ]
    return messages


def _leaks(text: str) -> list[str]:
    """The secrets in ``text``, as written or JSON-escaped."""
    return [s for s in SECRETS if s in text or json.dumps(s)[1:-1] in text]


def _derived_leaks(text: str, verbatim: list[str]) -> list[str]:
    """The secrets in ``text`` once every verbatim input message in it is taken out: a
    summary merged into a kept message, or a kept message in a request, is allowed to
    carry that message as received."""
    for v in verbatim:
        if v in text:
            text = text.replace(v, "<verbatim>")
    return _leaks(text)


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "hermes-host"), *args],
        capture_output=True, text=True, timeout=600, env=env, cwd=cwd, check=False,
    )


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secrets") / "secrets.jsonl"
    messages = _transcript()
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    assert len(_leaks(path.read_text(encoding="utf-8"))) == len(SECRETS)  # all planted
    return path


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, HERMES_HOST_HOME=str(home), NO_COLOR="1",
               HERMES_HOST_TRACE_PLUGINS="1", **extra)
    env.pop("HERMES_HOST_CONFIG", None)
    env.pop("ANTHROPIC_BASE_URL", None)
    return env


def _echo(body: Any) -> str:
    """The fake summariser's answer: the prompt it was sent, verbatim."""
    return str(body["messages"][0]["content"])


@pytest.fixture(scope="module")
def replayed(transcript: Path) -> Iterator[dict[str, Any]]:
    home = transcript.parent / "home"
    home.mkdir()
    with FakeAnthropic(responder=_echo) as fake:
        config = home / "config.yaml"
        config.write_text(
            "summarizer:\n  provider: anthropic\n"
            f"  base_url: {fake.base_url}\n  max_retries: 0\n  timeout_seconds: 20\n"
            "memory:\n  providers: []\n"
            "context:\n  engine: compressor\n  hooks:\n"
            "    select_context: [topic_router, retrieval]\n",
            encoding="utf-8",
        )
        store = home / "state.db"
        done = _cli("replay", str(transcript), "--json", "--config", str(config),
                    "--store", str(store), "--context-length", CONTEXT_LENGTH,
                    env=_env(home, ANTHROPIC_API_KEY="sk-ant-api03-e2e-" + "k" * 40),
                    cwd=home)
        bodies = [r.raw_body for r in fake.requests]
    assert done.returncode == 0, done.stderr[-2000:]
    yield {"done": done, "result": json.loads(done.stdout), "store": store,
           "bodies": bodies, "transcript": transcript}


def test_replay_compresses_with_both_select_engines(replayed: dict[str, Any]) -> None:
    result = replayed["result"]
    committed = [c for c in result["compressions"] if c["status"] == "committed"]
    assert len(committed) >= 3
    assert len(replayed["bodies"]) >= 3  # the summariser was really called
    stderr = replayed["done"].stderr
    assert "topic_router" in stderr and "retrieval" in stderr  # the trace saw both engines
    assert "select_context" in stderr


def test_replay_stdout_stderr_logs_and_trace_leak_nothing_r7_1(replayed: dict[str, Any]) -> None:
    """The report holds the final request: its messages are the session's own, verbatim, or
    an engine's injection (retrieval's block), which must hold no secret."""
    done = replayed["done"]
    report = dict(replayed["result"])
    final_request = report.pop("final_request")
    assert _leaks(json.dumps(report)) == []
    verbatim = _verbatim(replayed["transcript"])
    injected_leaks = [
        (m.get("role"), _derived_leaks(json.dumps(m, ensure_ascii=False), [
            json.dumps(v, ensure_ascii=False)[1:-1] for v in verbatim]))
        for m in final_request
    ]
    assert [x for x in injected_leaks if x[1]] == []
    assert _leaks(done.stderr) == []
    _figure("replay stdout, stderr, logs, plugin trace")


def test_summariser_requests_leak_nothing_r7_1(replayed: dict[str, Any]) -> None:
    assert _leaks("\n".join(replayed["bodies"])) == []
    _figure("summariser request bodies")


def _verbatim(transcript: Path) -> list[str]:
    """The input's message contents and tool-call argument strings as given (and stripped:
    a merged message loses its trailing newline), longest first."""
    found: set[str] = set()
    for line in transcript.read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        texts = [m["content"]] if isinstance(m.get("content"), str) else []
        texts += [call["function"]["arguments"] for call in m.get("tool_calls") or []]
        found.update(t for text in texts for t in (text, text.strip()) if t)
    return sorted(found, key=len, reverse=True)


def test_store_rows_keep_secrets_only_in_verbatim_messages_r7_1(
    replayed: dict[str, Any],
) -> None:
    """Read the SQLite file directly.  Raw message rows are the session's own messages
    (stored as received, by contract); a row holding a secret must be byte-identical to an
    input message.  Summary rows, engine state and session columns hold none."""
    verbatim = _verbatim(replayed["transcript"])
    db = sqlite3.connect(replayed["store"])
    try:
        rows = db.execute(
            "SELECT id, session_id, role, content, tool_calls, extra FROM messages"
        ).fetchall()
        states = db.execute("SELECT engine, state FROM engine_state").fetchall()
        sessions = db.execute(
            "SELECT title, goal, end_reason, model_config, last_activity_kind FROM sessions"
        ).fetchall()
    finally:
        db.close()
    summaries = [r for r in rows if r[5] and "_compressed_summary" in r[5]]
    assert len(summaries) >= 3
    raw_with_secrets = 0
    derived_leaks: list[tuple[int, str, list[str]]] = []
    for row_id, _sid, role, content, tool_calls, extra in rows:
        if content and _leaks(content):
            if _derived_leaks(content, verbatim):
                derived_leaks.append((row_id, role, _derived_leaks(content, verbatim)))
            else:
                raw_with_secrets += 1
        for call in json.loads(tool_calls) if tool_calls else []:
            args = call.get("function", {}).get("arguments", "")
            if _derived_leaks(args, verbatim):
                derived_leaks.append((row_id, "tool_call", _derived_leaks(args, verbatim)))
        if extra and _leaks(extra):
            derived_leaks.append((row_id, "extra", _leaks(extra)))
    assert derived_leaks == []
    assert raw_with_secrets > 0  # the raw history really is in the store, verbatim
    assert [(engine, _leaks(state)) for engine, state in states if _leaks(state)] == []
    assert {e for e, _ in states} >= {"topic_router", "retrieval"}
    assert [s for s in sessions if _leaks(json.dumps(s))] == []
    _figure("store rows, engine state, session columns")


def test_eval_output_leaks_nothing_r7_1(transcript: Path) -> None:
    """The JSON report (a superset of the table: recall points with their missing examples)
    and stderr (progress lines, logs, the trace)."""
    home = transcript.parent / "eval"
    home.mkdir()
    done = _cli("eval", str(transcript), "--engines",
                "compressor+retrieval,compressor+topic_router",
                "--context-length", CONTEXT_LENGTH, "--json", env=_env(home), cwd=home)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(done.stdout)["runs"]
    assert [r["compressions"] >= 3 for r in runs] == [True, True]
    assert runs[0]["select_adopted"].get("retrieval", 0) >= 1
    assert _leaks(done.stdout) == []
    assert _leaks(done.stderr) == []
    _figure("eval JSON report and stderr")
