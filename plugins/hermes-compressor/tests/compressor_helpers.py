"""Helpers of the hermes-compressor tests: message builders, request factories and a
deterministic in-process summariser that records every job it gets."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_host.llm.base import SUMMARY_SECTIONS, SummaryJob
from hermes_host.messages import normalize_alternation, repair_tool_pairs, text_of
from hermes_host.models import (
    CompressionSettings,
    CompressRequest,
    GuardState,
    Message,
    ShouldCompressRequest,
)

from hermes_compressor import Compressor

SECTIONS = tuple(f"## {name}" for name in SUMMARY_SECTIONS)


def transcripts_dir() -> Path:
    default = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "transcripts"
    return Path(os.environ.get("HERMES_HOST_TRANSCRIPTS", default))


def transcript_paths() -> list[Path]:
    folder = transcripts_dir()
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def load_normalised(path: Path) -> list[Message]:
    """A transcript as a host would send it: orphan pairs repaired, alternation normalised."""
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    repaired, _ = repair_tool_pairs(raw)
    merged, _ = normalize_alternation(repaired)
    return merged


class RecordingSummarizer:
    """Deterministic summariser for tests: eleven sections built from the job's messages.

    ``fail_with`` makes the next calls raise (one exception per call, then succeed)."""

    name = "recording"

    def __init__(
        self,
        *,
        calls_llm: bool = True,
        fail_with: list[Exception] | None = None,
        text: Callable[[SummaryJob], str] | None = None,
    ) -> None:
        self.calls_llm = calls_llm
        self.jobs: list[SummaryJob] = []
        self.fail_with = list(fail_with or [])
        self._text = text

    def summarize(self, job: SummaryJob) -> str:
        self.jobs.append(job)
        if self.fail_with:
            raise self.fail_with.pop(0)
        if self._text is not None:
            return self._text(job)
        users = [text_of(m) for m in job.messages if m.get("role") == "user"]
        tools = [m for m in job.messages if m.get("role") == "tool"]
        body = {
            "## Historical Task Snapshot": (users[0][:200] if users else "None."),
            "## Completed Actions": f"1. PROCESSED {len(job.messages)} messages — "
            f"{len(tools)} tool results [tool: recording]",
        }
        return "\n\n".join(f"{s}\n{body.get(s, 'None.')}" for s in SECTIONS)


class BrokenSummarizer(RecordingSummarizer):
    def __init__(self, exc: Exception) -> None:
        super().__init__()
        self.exc = exc

    def summarize(self, job: SummaryJob) -> str:
        self.jobs.append(job)
        raise self.exc


def tool_turn(
    i: int,
    output: str,
    *,
    name: str = "Bash",
    args: dict[str, Any] | None = None,
    user: str | None = None,
) -> list[Message]:
    """user → assistant(tool call) → tool → assistant."""
    call_id = f"call_{i}"
    return [
        {"role": "user", "content": user or f"please do step {i}"},
        {
            "role": "assistant",
            "content": f"running step {i}",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(args or {"command": f"ls {i}"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
        {"role": "assistant", "content": f"step {i} done"},
    ]


def conversation(
    turns: int, output_chars: int = 2000, system: str = "You are helpful."
) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": system}]
    for i in range(turns):
        out = (f"line {i}\n" * (output_chars // 7 + 1))[:output_chars] + f"\nExit code {i % 2}"
        msgs += tool_turn(i, out)
    return msgs


def guards(**kw: Any) -> GuardState:
    return GuardState(now=kw.pop("now", time.time()), **kw)


def compress_request(
    messages: list[Message],
    *,
    engine: Compressor | None = None,
    context_length: int = 16_000,
    **kw: Any,
) -> CompressRequest:
    engine = engine or Compressor()
    kw.setdefault("guards", guards())
    kw.setdefault("compression", CompressionSettings())
    return CompressRequest(
        session_id=kw.pop("session_id", "s1"),
        messages=messages,
        current_tokens=sum(engine.count(m) for m in messages),
        context_length=context_length,
        **kw,
    )


def should_request(
    tokens: int, *, context_length: int = 200_000, **kw: Any
) -> ShouldCompressRequest:
    kw.setdefault("guards", guards())
    return ShouldCompressRequest(
        session_id="s1", messages=[], current_tokens=tokens, context_length=context_length, **kw
    )
