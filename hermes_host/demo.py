"""``hermes-host demo``: a real agent-style session that the project itself produces.

A scripted tour of hermes-host's own source: each turn asks a question, the "agent" calls
tools that really run — reading the installed package's files, grepping them, running small
commands (``python --version``, listing a directory) — and answers with facts taken from the
tool output.  So every tool output is genuine; only the choice of questions is scripted.
No API key and no network: the offline summariser writes the summaries, and a small window
makes the default compressor compress several times.  Third-party transcripts are never used.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hermes_host
from hermes_host.config import HermesConfig
from hermes_host.host import CompressionReport, ContextHost, Session
from hermes_host.messages import SUMMARY_PREFIX, is_summary, text_of

__all__ = ["DEMO_CONTEXT_LENGTH", "DemoResult", "demo_config", "run_demo"]

DEMO_CONTEXT_LENGTH = 4_000
"""Small enough that the tour compresses several times."""

SYSTEM_PROMPT = (
    "You are a coding agent exploring the hermes-host source tree. Use the tools read_file, "
    "grep and run to answer; cite files and line numbers."
)

PACKAGE_DIR = Path(hermes_host.__file__).resolve().parent
_READ_LIMIT = 120
_GREP_LIMIT = 30


# --- the tools (they really run) -------------------------------------------------------------


def _safe_path(relative: str) -> Path:
    path = (PACKAGE_DIR / relative).resolve()
    if PACKAGE_DIR not in (path, *path.parents):
        raise ValueError(f"{relative}: outside the hermes_host package")
    return path


def tool_read_file(path: str, start: int = 1, limit: int = _READ_LIMIT) -> str:
    lines = _safe_path(path).read_text(encoding="utf-8").splitlines()
    chunk = lines[start - 1 : start - 1 + limit]
    body = "\n".join(f"{start + i:4d}  {line}" for i, line in enumerate(chunk))
    return f"{path} lines {start}-{start + len(chunk) - 1} of {len(lines)}\n{body}"


def tool_grep(pattern: str, path: str = ".") -> str:
    regex = re.compile(pattern)
    root = _safe_path(path)
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    hits: list[str] = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if regex.search(line):
                hits.append(f"{file.relative_to(PACKAGE_DIR)}:{number}: {line.strip()}")
    shown = hits[:_GREP_LIMIT]
    more = f"\n[{len(hits) - len(shown)} more matches]" if len(hits) > len(shown) else ""
    return f"{len(hits)} matches for /{pattern}/\n" + "\n".join(shown) + more


_LIST_PACKAGE = f"import os; print('\\n'.join(sorted(os.listdir({str(PACKAGE_DIR)!r}))))"
_PLUGGY_VERSION = "import importlib.metadata as m; print('pluggy', m.version('pluggy'))"
_COMMANDS: dict[str, list[str]] = {
    "python --version": [sys.executable, "--version"],
    "ls hermes_host": [sys.executable, "-c", _LIST_PACKAGE],
    "pip show pluggy": [sys.executable, "-c", _PLUGGY_VERSION],
}


def tool_run(command: str) -> str:
    argv = _COMMANDS.get(command)
    if argv is None:
        raise ValueError(f"command not allowed in the demo: {command!r}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    output = (done.stdout + done.stderr).strip()
    return f"$ {command}\n{output}\n[exit {done.returncode}]"


TOOLS: dict[str, Callable[..., str]] = {
    "read_file": tool_read_file,
    "grep": tool_grep,
    "run": tool_run,
}


# --- the tour --------------------------------------------------------------------------------


@dataclass
class Step:
    question: str
    calls: list[tuple[str, dict[str, Any]]]


TOUR: list[Step] = [
    Step("Which Python runs this, and what is in the package?",
         [("run", {"command": "python --version"}), ("run", {"command": "ls hermes_host"})]),
    Step("How is the host meant to be embedded? Read the top of host.py.",
         [("read_file", {"path": "host.py", "start": 1, "limit": 60})]),
    Step("Which hooks exist? Grep the hookspecs.",
         [("grep", {"pattern": r"^def (should_compress|compress|select_context|on_\w+)",
                    "path": "hookspecs.py"}),
          ("read_file", {"path": "hookspecs.py", "start": 1, "limit": 40})]),
    Step("What are the default compression settings?",
         [("grep", {"pattern": r"Field\(", "path": "models.py"})]),
    Step("How does the fence bound a hook call?",
         [("read_file", {"path": "fence/runner.py", "start": 1, "limit": 45})]),
    Step("Where are the guard rules (cooldown, anti-thrash)?",
         [("read_file", {"path": "guards.py", "start": 1, "limit": 80})]),
    Step("Which pluggy version is installed?", [("run", {"command": "pip show pluggy"})]),
    Step("What does the wire sanitiser strip?",
         [("grep", {"pattern": r"def (sanitize_for_wire|repair_tool_pairs|normalize_alternation)",
                    "path": "messages/wire.py"}),
          ("read_file", {"path": "messages/wire.py", "start": 1, "limit": 50})]),
    Step("How are tokens counted?",
         [("read_file", {"path": "tokens.py", "start": 1, "limit": 70})]),
    Step("How are transcripts validated for replay?",
         [("read_file", {"path": "transcripts.py", "start": 1, "limit": 70})]),
    Step("Where does the config file come from?",
         [("grep", {"pattern": r"HERMES_HOST_(HOME|CONFIG)", "path": "."})]),
    Step("Summarise what the memory provider does.",
         [("read_file", {"path": "memory/markdown.py", "start": 1, "limit": 60})]),
    Step("How does the replay driver decide when a turn ends?",
         [("read_file", {"path": "replay.py", "start": 1, "limit": 40}),
          ("grep", {"pattern": r"end_turn|build_request", "path": "replay.py"})]),
    Step("Where are turn-scoped injections attached?",
         [("read_file", {"path": "injections.py", "start": 1, "limit": 40})]),
    Step("Which Python was that again? Check once more before we finish.",
         [("run", {"command": "python --version"})]),
]


def _answer(results: list[tuple[str, str]]) -> str:
    """The agent's reply: facts taken from this turn's genuine tool outputs."""
    facts = []
    for name, output in results:
        first = output.splitlines()[0] if output else "(no output)"
        defs = re.findall(r"^\s*\d+\s+(?:class|def) (\w+)", output, flags=re.M)
        fact = f"{name}: {first}"
        if defs:
            fact += f"; defines {', '.join(dict.fromkeys(defs))}"
        facts.append(fact)
    return "Findings:\n" + "\n".join(f"- {f}" for f in facts)


# --- running it ------------------------------------------------------------------------------


@dataclass
class DemoResult:
    session_id: str
    lineage: list[str]
    turns: int
    tool_calls: int
    compressions: list[CompressionReport] = field(default_factory=list)
    summary: str | None = None
    store: str = ""
    window_tokens: int = 0

    @property
    def committed(self) -> list[CompressionReport]:
        return [c for c in self.compressions if c.status == "committed"]


def demo_config(
    context_length: int = DEMO_CONTEXT_LENGTH, home: Path | None = None
) -> HermesConfig:
    """The demo's configuration: default compressor, offline summariser, a small window."""
    data: dict[str, Any] = {
        "model": {
            "name": "demo-model",
            "context_length": context_length,
            "max_output_tokens": 512,
        },
        "summarizer": {"provider": "offline"},
        "compression": {"protect_last_n": 6, "summary_target_ratio": 0.2},
        "memory": {"providers": ["markdown"], "directory": str(home) if home else None},
    }
    return HermesConfig.model_validate(data)


def run_demo(
    store: str | os.PathLike[str] | None = None,
    *,
    context_length: int = DEMO_CONTEXT_LENGTH,
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Run the tour into ``store`` — a state.db path or a store URL (a fresh temporary
    SQLite store by default)."""
    workdir = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    store_path: str | os.PathLike[str] = store or workdir / "state.db"
    (workdir / "MEMORY.md").write_text(
        "- The demo explores the installed hermes_host package; tools are read-only.\n",
        encoding="utf-8",
    )
    config = demo_config(context_length, workdir)
    with ContextHost.from_config(config, store=store_path) as host:
        session = host.open_session(system_prompt=SYSTEM_PROMPT, cwd=str(PACKAGE_DIR))
        result = DemoResult(session_id=session.id, lineage=[session.id], turns=0, tool_calls=0)
        result.store = host.store.location
        for number, step in enumerate(TOUR, 1):
            _run_step(session, step, number, result, echo)
        result.session_id = session.id
        result.lineage = host.store.lineage(session.id)
        result.window_tokens = session.window_tokens
        summaries = [m for m in session.window() if is_summary(m)]
        if summaries:
            result.summary = text_of(summaries[-1]).replace(SUMMARY_PREFIX, "").strip()
    return result


def _run_step(
    session: Session, step: Step, number: int, result: DemoResult, echo: Callable[[str], None]
) -> None:
    session.add_user(step.question)
    echo(f"[turn {number}] user: {step.question}")
    session.build_request()  # what the model would receive now
    calls: list[dict[str, Any]] = []
    for j, (name, args) in enumerate(step.calls):
        calls.append({
            "id": f"call_{number}_{j}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        })
    session.add_assistant(f"I'll use {', '.join(n for n, _ in step.calls)}.", calls)
    outputs: list[tuple[str, str]] = []
    for call, (name, args) in zip(calls, step.calls, strict=True):
        try:
            output = TOOLS[name](**args)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            output = f"error: {exc}"
        session.add_tool_result(call["id"], output, name=name)
        outputs.append((name, output))
        result.tool_calls += 1
        echo(f"          {name}({', '.join(f'{k}={v!r}' for k, v in args.items())}) "
             f"→ {len(output):,} chars")
    _finish(session, result, echo)
    session.build_request()
    session.add_assistant(_answer(outputs))
    result.turns += 1
    _finish(session, result, echo)


def _finish(session: Session, result: DemoResult, echo: Callable[[str], None]) -> None:
    outcome = session.end_turn()
    for event in outcome.events:
        echo(f"          {event}")
    report = outcome.compression
    if report is not None:
        result.compressions.append(report)
        if report.status == "committed":
            echo(f"          {report.tokens_before:,} → {report.tokens_after:,} tokens; "
                 f"session {report.previous_session_id} → {report.session_id}")
