"""A store as a user of ``hermes-host browse`` has one: a real transcript replayed through the
host by ``hermes-host replay`` (a real subprocess), with compactions, and a secret planted in
its first user message (the store keeps it verbatim; no page may show it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from host_helpers import TRANSCRIPTS

TRANSCRIPT = "sweagent-gpt4-pydicom-1458.jsonl"
"""A real transcript that compacts 7 times in an 8,000-token window (and declines 10 times)."""
CONTEXT_LENGTH = 8_000
SECRET = "sk-proj-FAKEb7Qx2LmN9pRs4TuVw6YzA1cD3eF5gH7jK9"
"""Fake, format-valid: redaction replaces it."""
TITLE = "pydicom fix"
HERMES_HOST = Path(sys.executable).parent / "hermes-host"  # the console script users run


def transcript_path() -> Path:
    return TRANSCRIPTS / TRANSCRIPT


def _config(directory: Path, record_requests: bool) -> Path:
    path = directory / "config.yaml"
    text = "summarizer:\n  provider: offline\nmemory:\n  providers: []\n"
    if not record_requests:
        text += "store:\n  record_requests: false\n"
    path.write_text(text, encoding="utf-8")
    return path


def replayed_store(directory: Path, *, record_requests: bool = True) -> Path:
    """Replay the transcript, secret planted, into ``directory/state.db``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = transcript_path().read_text(encoding="utf-8").splitlines()
    messages = [json.loads(line) for line in lines if line.strip()]
    first_user = next(m for m in messages if m["role"] == "user")
    first_user["content"] = f"Use OPENAI_API_KEY={SECRET} for the tests.\n" + first_user["content"]
    planted = directory / "planted.jsonl"  # a temporary copy: transcripts stay out of the repo
    planted.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    store = directory / "state.db"
    env = {**os.environ, "HERMES_HOST_HOME": str(directory / "home")}
    subprocess.run(
        [str(HERMES_HOST), "replay", str(planted), "--store", str(store),
         "--config", str(_config(directory, record_requests)), "--context-length",
         str(CONTEXT_LENGTH), "--title", TITLE, "--json"],
        check=True, capture_output=True, text=True, env=env, timeout=300, cwd=directory,
    )
    return store
