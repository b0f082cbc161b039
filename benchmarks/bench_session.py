"""Appending to a session: the cost of ``session.add_user`` at a 100- and a 20,000-message
window, on a real SQLite store.

Run: ``python benchmarks/bench_session.py``.  Prints one markdown section; both sizes are
measured in this run.  The window is bulk-written and its trigram index caught up first
(``index_pending``), then each measured step is one ``add_user`` (then one ``add_assistant``,
not timed, so roles alternate); a "turn" also reads ``window_tokens`` (the normalised window
and its running token total).  Targets (issue 15): an append costs the same at 20,000 as at
100 messages (ratio ≤ 1.5) and ≤ 300 µs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from _targets import Targets

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session

SIZES = (100, 20_000)
STEPS = 400
TARGET_RATIO = 1.5
TARGET_US = 300.0


def _session(host: ContextHost, size: int) -> Session:
    session = host.open_session(title=f"w{size}", system_prompt="You are terse.")
    words = "the append path must not grow with the window of the session".split()
    host.store.append_messages(session.id, [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": " ".join(words[(i + j) % len(words)] for j in range(30)) + f" #{i}"}
        for i in range(size)
    ])
    while host.store.index_pending():  # type: ignore[attr-defined]
        pass
    session = host.resume(session.id)
    session.window()
    return session


def _step(session: Session, i: int, *, turn: bool) -> float:
    t0 = time.perf_counter()
    session.add_user(f"new question {i}")
    if turn:
        _ = session.window_tokens
    cost = time.perf_counter() - t0
    session.add_assistant(f"answer {i}")
    return cost


def _costs(sessions: dict[int, Session], *, turn: bool) -> dict[int, float]:
    """Median µs per size; the sizes take turns step by step, so a drift of the shared
    machine's speed touches both alike."""
    costs: dict[int, list[float]] = {size: [] for size in sessions}
    for i in range(STEPS):
        for size, session in sessions.items():
            costs[size].append(_step(session, i, turn=turn))
    return {size: statistics.median(c) * 1e6 for size, c in costs.items()}


def main() -> int:
    targets = Targets("session")
    with tempfile.TemporaryDirectory() as tmp:
        host = ContextHost.from_config(HermesConfig(), store=Path(tmp) / "state.db")
        try:
            sessions = {size: _session(host, size) for size in SIZES}
            append = _costs(sessions, turn=False)
            turn = _costs(sessions, turn=True)
        finally:
            host.close()
    small, large = SIZES
    ratio = append[large] / append[small]
    turn_ratio = turn[large] / turn[small]
    ratio_check = targets.check(f"`add_user`, {large:,} vs {small:,} messages", ratio, "<=",
                                TARGET_RATIO, "{:.2f}×", "{}×")
    us_check = targets.check(f"`add_user` at {large:,} messages", append[large], "<=",
                             TARGET_US, "{:.0f} µs", "{:.0f} µs")
    turn_check = targets.check(f"`add_user` + `window_tokens`, {large:,} vs {small:,} messages",
                               turn_ratio, "<=", TARGET_RATIO, "{:.2f}×", "{}×")
    print("## session\n")
    print(f"Median of {STEPS} steps per size, the sizes alternating step by step, on a real "
          "SQLite store.\n")
    print(f"| step | {small:,} messages | {large:,} messages | ratio | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| `add_user` | {append[small]:.0f} µs | {append[large]:.0f} µs | {ratio:.2f}× | "
          f"{ratio_check.target_text}; {us_check.target_text} |")
    print(f"| `add_user` + `window_tokens` | {turn[small]:.0f} µs | {turn[large]:.0f} µs | "
          f"{turn_ratio:.2f}× | {turn_check.target_text} |")
    print()
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
