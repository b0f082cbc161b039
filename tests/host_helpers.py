"""Small in-test engines and builders for the host tests (registered via ``extra_plugins``).

They are real pluggy plugins going through the real fence, store and host; they only stand
in for the default compressor where a test needs a precise, controllable behaviour (a hang, an
exception, a given outcome).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from hermes_host import (
    CompressDecision,
    CompressRequest,
    CompressResult,
    PreCompressRequest,
    ShouldCompressRequest,
    hookimpl,
)
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.messages import SUMMARY_METADATA_KEY, SUMMARY_PREFIX

TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"
)


def transcript_files() -> list[Path]:
    return sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []


class TailEngine:
    """Compress = keep the system prompt, one summary, and the last ``keep`` user turns."""

    def __init__(self, keep: int = 2, threshold: int = 600) -> None:
        self.keep = keep
        self.threshold = threshold
        self.compress_calls = 0
        self.memory_contexts: list[str | None] = []

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        return CompressDecision(compress=request.current_tokens > self.threshold)

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        self.compress_calls += 1
        self.memory_contexts.append(request.memory_context)
        return self._tail(request)

    def _tail(self, request: CompressRequest) -> CompressResult:
        messages = request.messages
        head = messages[:1] if messages and messages[0]["role"] == "system" else []
        body = messages[len(head) :]
        users = [i for i, m in enumerate(body) if m["role"] == "user"]
        if len(users) <= self.keep:
            return CompressResult(messages=messages, outcome="noop")
        cut = users[-self.keep]
        dropped = [m for m in body[:cut] if not m.get(SUMMARY_METADATA_KEY)]
        summary = {
            "role": "assistant",
            "content": f"{SUMMARY_PREFIX}\n\n{len(dropped)} earlier messages summarised.",
            SUMMARY_METADATA_KEY: True,
        }
        return CompressResult(messages=[*head, summary, *body[cut:]], outcome="summarised")


class HangingEngine:
    """``compress`` blocks until released (the fence must give up on it)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        return CompressDecision(compress=True)

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        self.release.wait(30)
        return CompressResult(messages=request.messages[:1], outcome="summarised")


class RaisingEngine:
    """``compress`` raises; ``should_compress`` raises when ``decide_raises``."""

    def __init__(self, decide_raises: bool = False) -> None:
        self.decide_raises = decide_raises

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        if self.decide_raises:
            raise RuntimeError("decision engine exploded")
        return CompressDecision(compress=True)

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        raise RuntimeError("engine exploded")


class OutcomeEngine(TailEngine):
    """Returns a fixed ``outcome`` (``failed_transient``, ``fallback``, ``noop`` ...)."""

    def __init__(self, outcome: str, cooldown: float | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.outcome = outcome
        self.cooldown = cooldown

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        self.compress_calls += 1
        if self.outcome in ("failed_transient", "noop", "failed_permanent"):
            return CompressResult(
                messages=request.messages, outcome=self.outcome, cooldown_seconds=self.cooldown
            )
        result = self._tail(request)
        return result.model_copy(update={"outcome": self.outcome})


class PreservingMemory:
    """A memory provider whose pre-compress text must reach the engine (R-11.4)."""

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> str:
        return "remember: the deploy key lives in vault path ops/deploy"


def make_config(engine: str = "tail", **overrides: Any) -> HermesConfig:
    data: dict[str, Any] = {
        "context": {"engine": engine},
        "memory": {"providers": []},
        "model": {"context_length": 4000, "max_output_tokens": 200},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return HermesConfig.model_validate(data)


def make_host(
    tmp_path: Path, engine: object, name: str = "tail", **overrides: Any
) -> ContextHost:
    config = make_config(name, **overrides)
    return ContextHost.from_config(
        config, store=tmp_path / "state.db", extra_plugins={name: engine}
    )


def chat_turn(session: Any, n: int, size: int = 40) -> None:
    """One user → assistant(tool call) → tool → assistant exchange with distinct text."""
    session.add_user(f"question {n}: " + "lorem ipsum " * size)
    session.build_request()
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "grep", "arguments": f'{{"pattern": "p{n}"}}'},
    }
    session.add_assistant(f"looking {n}", [call])
    session.add_tool_result(f"call_{n}", f"result {n}: " + "dolor sit " * size, name="grep")
    session.build_request()
    session.add_assistant(f"answer {n}: " + "amet " * size)


class RecordingProvider:
    """Records every memory callback it receives, in order (R-14.4)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    @hookimpl
    def on_session_start(self, request: Any) -> None:
        self.events.append(("start", request.session_id, request.reason))

    @hookimpl
    def on_session_switch(self, request: Any) -> None:
        self.events.append(("switch", request.session_id, request.previous_session_id))

    @hookimpl
    def on_session_end(self, request: Any) -> None:
        self.events.append(("end", request.session_id, request.reason))

    @hookimpl
    def on_turn_complete(self, request: Any) -> None:
        self.events.append(("turn", request.session_id, str(len(request.messages))))


class BrokenProvider:
    """Every callback raises: it must be fenced off without hiding the others."""

    @hookimpl
    def on_pre_compress(self, request: Any) -> str:
        raise RuntimeError("provider exploded")

    @hookimpl
    def on_session_switch(self, request: Any) -> None:
        raise RuntimeError("provider exploded")

    @hookimpl
    def on_system_prompt(self, request: Any) -> str:
        raise RuntimeError("provider exploded")
