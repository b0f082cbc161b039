"""Shared helpers for the auxiliary-LLM and redaction tests (R-7, R-10.3, R-14.7)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hermes_host.models import Message

TRANSCRIPTS_ENV = "HERMES_HOST_TRANSCRIPTS"

PLANTED_KEY = "sk-ant-api03-PLANTEDkey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH-xyzAA"
"""An API key the tests hand to the summariser; it must never show up in an error or body."""


def transcripts_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "transcripts"
    return Path(os.environ.get(TRANSCRIPTS_ENV) or default)


def transcript_files() -> list[Path]:
    """Every real transcript, or a skip with the reason when the folder is absent."""
    folder = transcripts_dir()
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"no transcripts in {folder} (set {TRANSCRIPTS_ENV} to the folder)")
    return files


def transcript_params() -> list[object]:
    """``pytest.mark.parametrize`` values over the transcripts (one skip param when absent)."""
    folder = transcripts_dir()
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"no transcripts in {folder} (set {TRANSCRIPTS_ENV})"))]
    return [pytest.param(f, id=f.stem) for f in files]


def load_transcript(path: Path) -> list[Message]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def transcript_texts(messages: list[Message]) -> list[str]:
    """Every text a summariser could read: contents and tool-call arguments."""
    texts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        for call in m.get("tool_calls") or []:
            texts.append(str((call.get("function") or {}).get("arguments", "")))
    return texts
