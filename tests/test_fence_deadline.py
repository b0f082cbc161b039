"""The host's own work on a result happens inside the deadline (issue 13, R-10.2, R-14.9).

Three re-checks, each with a test that fails when that re-check is deleted:

* the fence, when the engine's answer is in hand (``LATE_RETURN``): a host thread that got
  the answer only after the deadline (descheduled, GIL-starved) must not adopt it;
* the fence, after its own copy and validation (``LATE_CHECK``);
* the host's compression pass, after counting the proposal's tokens: a pass whose own
  post-processing ran past ``compression.context_timeout_seconds`` is discarded.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

from fence_helpers import make_pm, select_request, should_request, window
from host_helpers import chat_turn, make_host
from hostile_engines import summarised

from hermes_host import CompressRequest, CompressResult, hookimpl
from hermes_host.fence import HookRunner, Provenance
from hermes_host.fence.adopt import LATE_CHECK, LATE_RETURN
from hermes_host.models import CompressDecision, SelectRequest, SelectResult
from hermes_host.tokens import TokenCounter


class JumpingTimer:
    """perf_counter plus an offset the plugin moves: the host "wakes up" late.

    ``jump_after`` timer readings after :meth:`arm` the offset grows by an hour — so the
    first reading after the engine returns can be made to pass and a later one to fail."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.armed: int | None = None
        self.thread: int | None = None

    def arm(self, jump_after: int) -> None:
        """Count readings of the calling thread only (the fence's worker): the caller's own
        readings while it waits are not part of the host's work on the answer."""
        self.thread = threading.get_ident()
        self.armed = jump_after

    def __call__(self) -> float:
        if self.armed is not None and threading.get_ident() == self.thread:
            if self.armed == 0:
                self.offset += 3600.0
                self.armed = None
            else:
                self.armed -= 1
        return time.perf_counter() + self.offset


class ReturnsThenJumps:
    """Answers at once, after arming the timer: ``jump_after=0`` makes the very next
    reading (the fence's check of when the answer arrived) an hour late."""

    def __init__(self, timer: JumpingTimer, jump_after: int) -> None:
        self.timer = timer
        self.jump_after = jump_after

    @hookimpl
    def should_compress(self, request: Any) -> CompressDecision:
        self.timer.arm(self.jump_after)
        return CompressDecision(compress=True)

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.timer.arm(self.jump_after)
        return SelectResult(messages=window())


def test_issue13_an_answer_in_hand_only_after_the_deadline_is_not_adopted() -> None:
    """Deleting the fence's post-return re-check turns this stamp into LATE_CHECK (the
    later re-check still catches it, with the wrong reason) — the message says which."""
    timer = JumpingTimer()
    runner = HookRunner(make_pm(p=ReturnsThenJumps(timer, 0)), timer=timer)
    stamp = runner.call("p", "should_compress", should_request(), timeout=5)
    assert stamp.provenance is Provenance.TIMEOUT and stamp.value is None
    assert LATE_RETURN in (stamp.error or ""), stamp.error


def test_issue13_a_result_checked_past_the_deadline_is_not_adopted() -> None:
    """The first reading after the answer passes; the one after validation is an hour late.
    Deleting the post-validation re-check adopts the answer."""
    timer = JumpingTimer()
    runner = HookRunner(make_pm(p=ReturnsThenJumps(timer, 1)), timer=timer)
    stamp = runner.call("p", "select_context", select_request(), timeout=5)
    assert stamp.provenance is Provenance.TIMEOUT and stamp.value is None
    assert LATE_CHECK in (stamp.error or ""), stamp.error
    timer.armed = None
    ok = HookRunner(make_pm(p=ReturnsThenJumps(JumpingTimer(), 10**9)))
    assert ok.call("p", "select_context", select_request(), timeout=5).adopted  # control


def _prose(chars: int) -> str:
    rng = random.Random(13)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


class BigProposal:
    """Answers ``compress`` at once with a valid proposal: a summary followed by ``notes``
    (many distinct messages): cheap for the engine, costly for the host to token-count."""

    def __init__(self, notes: list[dict[str, Any]]) -> None:
        self.notes = notes

    @hookimpl
    def should_compress(self, request: Any) -> CompressDecision:
        return CompressDecision(compress=False)

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        head, summary, *tail = summarised(request)
        return CompressResult(messages=[head, summary, *self.notes, *tail], outcome="summarised")


def test_issue13_host_post_processing_past_the_pass_deadline_discards_the_compression(
    tmp_path: Path,
) -> None:
    """R-14.9: the engine answers in time, the host's token count of the proposal takes
    longer than what is left of ``context_timeout_seconds``: the pass must be discarded.
    Deleting the host's re-check after the engine returns commits it (the mutant issue 13
    found alive).  The budget is calibrated on this machine: well under the measured cost
    of counting, well over the cost of everything before it.  The cost is many distinct
    messages (each is encoded): one huge text is counted from samples in bounded time
    (issue 31)."""
    piece = _prose(2_000)
    pairs = 250

    def notes_of(tag: str) -> list[dict[str, Any]]:
        return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag} {i}: {piece}"}
                for i in range(2 * pairs)]

    while True:  # notes whose counting costs well over the 0.25 s floor of the budget
        TokenCounter().count_all(notes_of("warm-up"))  # the first encode costs more
        started = time.perf_counter()
        TokenCounter().count_all(notes_of("calibration"))  # texts counted nowhere else
        counting = time.perf_counter() - started
        if counting >= 0.5 or pairs >= 2_000:  # 8 MB of notes: under the result cap
            break
        pairs *= 2
    notes = notes_of("note")  # the same cost, not in any cache yet
    budget = max(0.25, counting * 0.5)
    with make_host(
        tmp_path, BigProposal(notes), name="big",
        compression={"context_timeout_seconds": budget},
    ) as host:
        session = host.open_session(system_prompt="sys")
        # a window larger than the proposal, in texts the window holds whole (counted now,
        # as they are appended)
        window_text = _prose(len(piece) * pairs * 3)[::-1]
        for at in range(0, len(window_text), 400_000):
            session.add_user(window_text[at:at + 200_000])
            session.add_assistant(window_text[at + 200_000:at + 400_000] or "noted")
        chat_turn(session, 2)  # the proposal keeps this turn and is smaller than the window
        sid = session.id
        report = session.compress(force=True)
        assert (report.status, report.outcome) == ("rejected", "timeout"), (report, counting)
        assert "finished after compression.context_timeout_seconds" in (report.message or "")
        assert session.id == sid and host.store.lineage(sid) == [sid]
