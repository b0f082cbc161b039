"""Shared pieces for the fence tests: a real pluggy manager, real plugin classes, requests.

Every plugin here is an ordinary hookimpl class registered by name, as ``plugins.py``
registers entry-point instances; nothing is mocked.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pluggy

from hermes_host import hookimpl, hookspecs
from hermes_host.messages import SUMMARY_METADATA_KEY, SUMMARY_PREFIX
from hermes_host.models import (
    CompressDecision,
    CompressRequest,
    GuardState,
    Message,
    PreCompressRequest,
    PruneRequest,
    SelectRequest,
    SelectResult,
    SessionEvent,
    ShouldCompressRequest,
)

SYSTEM = {"role": "system", "content": "You are a careful agent."}
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"


def window() -> list[Message]:
    """A small valid window: system, a tool round trip, and the incoming user message."""
    return [
        dict(SYSTEM),
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": f"my key is {SECRET} please keep it"},
    ]


def should_request() -> ShouldCompressRequest:
    return ShouldCompressRequest(
        session_id="s-1",
        messages=window(),
        current_tokens=120,
        context_length=1000,
        guards=GuardState(now=1_700_000_000.0),
    )


def select_request(history: Any = None, state: dict[str, Any] | None = None) -> SelectRequest:
    msgs = window()
    return SelectRequest(
        session_id="s-1",
        messages=msgs,
        incoming_message=dict(msgs[-1]),
        budget_tokens=4000,
        history=history,
        state=state or {},
    )


def pre_compress_request() -> PreCompressRequest:
    return PreCompressRequest(session_id="s-1", messages=window())


def session_event() -> SessionEvent:
    return SessionEvent(session_id="s-1", reason="new")


def make_pm(**plugins: object) -> pluggy.PluginManager:
    """A plugin manager with the host's hookspecs and ``plugins`` registered by name."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return pm


class FakeClock:
    """An injectable monotonic clock for the breaker (seconds)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Gate:
    """Holds hung plugins; the test releases them at teardown so no thread outlives it."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def hold(self) -> None:
        self.event.wait()

    def release(self) -> None:
        self.event.set()


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return bool(predicate())


# --- plugins ------------------------------------------------------------------------------


class Decider:
    """Answers should_compress; counts calls and remembers the worker thread."""

    def __init__(self, compress: bool = False, reason: str = "below_threshold") -> None:
        self.compress = compress
        self.reason = reason
        self.calls = 0
        self.threads: list[str] = []

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        return CompressDecision(compress=self.compress, reason=self.reason)


class ArglessDecider:
    """Uses pluggy's argument-subset rule: the implementation takes no arguments at all."""

    @hookimpl
    def should_compress(self) -> CompressDecision:
        return CompressDecision(compress=True, reason="argless")


class Hung:
    """Never returns until its gate is released."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.calls = 0

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        self.calls += 1
        self.gate.hold()
        return CompressDecision(compress=True, reason="hung-then-released")

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> str:
        self.gate.hold()
        return "too late"


class Raiser:
    def __init__(self, exc: BaseException | None = None) -> None:
        self.exc = exc or RuntimeError("engine exploded")
        self.calls = 0

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        self.calls += 1
        raise self.exc

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.calls += 1
        raise self.exc

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> str:
        raise self.exc


class Flaky:
    """Raises while ``failing`` is True, answers otherwise (for the breaker)."""

    def __init__(self) -> None:
        self.failing = True
        self.calls = 0

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        self.calls += 1
        if self.failing:
            raise ConnectionError("upstream unavailable")
        return CompressDecision(compress=False, reason="recovered")


class Late:
    """First call: sleeps past its timeout, then returns a distinctive value.  Later calls
    answer at once with an ordinary value."""

    DISTINCTIVE = "LATE-RESULT-7f3e"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self.returned_late = threading.Event()
        self.threads: list[str] = []

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        if self.calls == 1:
            time.sleep(self.delay)
            self.returned_late.set()
            return CompressDecision(compress=True, reason=self.DISTINCTIVE)
        return CompressDecision(compress=False, reason="on-time")


class Mutator:
    """Vandalises every part of its snapshot, then answers validly."""

    def __init__(self) -> None:
        self.saw_history: Any = None

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        request.messages[0]["content"] = "HIJACKED"
        request.messages[5]["content"] = "changed"
        request.messages.append({"role": "assistant", "content": "injected"})
        request.messages[2]["tool_calls"][0]["function"]["name"] = "rm"
        request.guards.fallback_streak = 99
        request.compression.model_thresholds["gpt"] = 0.1
        request.session_id = "other"
        return CompressDecision(compress=False)

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.saw_history = request.history
        request.state["touched"] = True
        request.messages.pop()
        assert request.incoming_message is not None
        request.incoming_message["content"] = "changed"
        return SelectResult(messages=window())


class Returns:
    """Returns a fixed value from every hook it implements (lifecycle and memory)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> Any:
        return self.value

    @hookimpl
    def select_context(self, request: SelectRequest) -> Any:
        return self.value

    @hookimpl
    def compress(self, request: CompressRequest) -> Any:
        return self.value

    @hookimpl
    def prune_tool_results_only(self, request: PruneRequest) -> Any:
        return self.value

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> Any:
        return self.value

    @hookimpl
    def on_session_start(self, request: SessionEvent) -> Any:
        return self.value


class Tagger:
    """A select_context link: records its name on the last message's ``_chain`` list and the
    state it was given, so composition order is visible in the output."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen_states: list[dict[str, Any]] = []
        self.seen_chains: list[list[str]] = []

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.seen_states.append(dict(request.state))
        messages = request.messages
        chain = list(messages[-1].get("_chain", []))
        self.seen_chains.append(chain)
        messages[-1]["_chain"] = [*chain, self.name]
        return SelectResult(messages=messages, decision={"by": self.name}, state={"n": 1})


class Provider:
    """A memory provider that answers on_pre_compress with text."""

    def __init__(self, text: str | None) -> None:
        self.text = text
        self.calls = 0

    @hookimpl
    def on_pre_compress(self, request: PreCompressRequest) -> str | None:
        self.calls += 1
        return self.text

    @hookimpl
    def on_session_start(self, request: SessionEvent) -> None:
        self.calls += 1


def summary(text: str = "earlier work") -> Message:
    return {"role": "user", "content": f"{SUMMARY_PREFIX}\n\n{text}", SUMMARY_METADATA_KEY: True}
