"""The session path an agent runs, measured through ``ContextHost``/``Session``: appending,
building the request, and one forced compression of a 100,000-message session.

Run: ``python benchmarks/bench_session.py [--base DIR] [--check]``.  Prints one markdown
section; every figure is measured in this run, on a real SQLite store.

* **append** (``Session.add_user``) at a 100- and a 20,000-message window.  The window is
  bulk-written and its trigram index caught up first (``index_pending``), then each measured
  step is one ``add_user`` (then one ``add_assistant``, not timed, so roles alternate); a
  "turn" also reads ``window_tokens``.  Targets (issue 15): ratio ≤ 1.5 and ≤ 300 µs.
* **build_request** (``Session.build_request``, the window unchanged between calls) at 20
  and 2,000 messages, with no ``select_context`` engine (the default config) and with a
  trivial one selected in config (``context.hooks.select_context: [trivial]``: it returns
  its window, ``benchmarks/_fence_engines.py``), all four interleaved.  Targets (issue 32):
  the select engine adds ≤ 1.5× as much at 2,000 as at 20 messages and ≤ 150 µs at 2,000;
  with no select engine, 2,000 messages cost ≤ 0.25× what the base commit (13170af, before
  issue 32) costs, measured in this run: child processes of this script import the base
  commit's ``hermes_host`` (``git archive``, or ``--base DIR``) and this tree's in turn.
* **compression** of a synthetic 100,000-message session (``bench_compressor.synthetic``)
  through the host — ``resume(id).compress(force=True)``, offline summariser — against the
  compressor's own ``compress`` on the same window, CPU seconds.  Targets (issue 32): ≤ 1.3×
  the compressor's own time, ≤ 4 s.  The same two calls are measured again in a fresh
  interpreter (``--compress-child``), shown beside them, not a target.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _targets import Targets
from _trees import base_tree

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session

SIZES = (100, 20_000)
STEPS = 400
TARGET_RATIO = 1.5
TARGET_US = 300.0

REQUEST_SIZES = (20, 2_000)
REQUEST_ROUNDS = 25
PER_ROUND = 40
TARGET_ADDED_RATIO = 1.5
TARGET_ADDED_US = 150.0
BASE_COMMIT = "13170af"
TARGET_VS_BASE = 0.25
BASE_PAIRS = 5

COMPRESS_MESSAGES = 100_000
TARGET_OVER_ENGINE = 1.3
TARGET_COMPRESS_CPU = 4.0

WORDS = "the append path must not grow with the window of the session".split()


def _messages(size: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(30)) + f" #{i}"}
        for i in range(size)
    ]


def _session(host: ContextHost, size: int) -> Session:
    session = host.open_session(title=f"w{size}", system_prompt="You are terse.")
    host.store.append_messages(session.id, _messages(size))
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


def _append_rows(targets: Targets) -> list[str]:
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
    return [
        "### append\n",
        f"Path: `Session.add_user` (and `Session.window_tokens`). Median of {STEPS} steps per "
        "size, the sizes alternating step by step, on a real SQLite store.\n",
        f"| path | {small:,} messages | {large:,} messages | ratio | target |",
        "|---|---:|---:|---:|---|",
        f"| `Session.add_user` | {append[small]:.0f} µs | {append[large]:.0f} µs | {ratio:.2f}× | "
        f"{ratio_check.target_text}; {us_check.target_text} |",
        f"| `Session.add_user` + `Session.window_tokens` | {turn[small]:.0f} µs | "
        f"{turn[large]:.0f} µs | "
        f"{turn_ratio:.2f}× | {turn_check.target_text} |",
        "",
    ]


# --- build_request, as an agent calls it ----------------------------------------------------


def _request_hosts(tmp: Path) -> dict[str, ContextHost]:
    from _fence_engines import Trivial

    select = HermesConfig.model_validate(
        {"context": {"hooks": {"select_context": ["trivial"]}}})
    return {
        "none": ContextHost.from_config(HermesConfig(), store=tmp / "none.db"),
        "select": ContextHost.from_config(select, store=tmp / "select.db",
                                          extra_plugins={"trivial": Trivial()}),
    }


def _request_session(host: ContextHost, size: int) -> Session:
    """A session whose request holds ``size`` messages (system prompt included)."""
    session = host.open_session(system_prompt="You are terse.")
    host.store.append_messages(session.id, _messages(size - 1))
    session = host.resume(session.id)
    session.build_request()
    return session


def _timed_calls(session: Session, n: int) -> float:
    """Median µs of ``n`` ``build_request`` calls."""
    one: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        session.build_request()
        one.append(time.perf_counter() - t0)
    return statistics.median(one) * 1e6


def request_costs() -> dict[str, list[float]]:
    """Per case (``none20``, ``select2000``...), each round's median µs; the four cases take
    turns round by round."""
    with tempfile.TemporaryDirectory() as tmp:
        hosts = _request_hosts(Path(tmp))
        try:
            sessions = {f"{kind}{n}": _request_session(host, n)
                        for kind, host in hosts.items() for n in REQUEST_SIZES}
            rounds: dict[str, list[float]] = {k: [] for k in sessions}
            for _ in range(REQUEST_ROUNDS):
                for name, session in sessions.items():
                    rounds[name].append(_timed_calls(session, PER_ROUND))
        finally:
            for host in hosts.values():
                host.close()
    return rounds


def _child_none_cost() -> None:
    """``--child``: the median µs of ``build_request`` at the large size with no select
    engine, for whichever ``hermes_host`` this process imports (the parent sets
    ``PYTHONPATH``), as one JSON line."""
    n = REQUEST_SIZES[-1]
    with tempfile.TemporaryDirectory() as tmp:
        host = ContextHost.from_config(HermesConfig(), store=Path(tmp) / "state.db")
        try:
            session = _request_session(host, n)
            costs = [_timed_calls(session, PER_ROUND) for _ in range(8)]
        finally:
            host.close()
    import hermes_host

    print(json.dumps({"us": statistics.median(costs), "from": hermes_host.__file__}))


def _child(tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                          text=True, env=env, check=True, timeout=600)
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert str(tree) in reply["from"], reply  # the tree asked for, not an installed copy
    return float(reply["us"])


def _vs_base(argv: list[str]) -> tuple[float, float, float, str] | None:
    """(this tree's µs, the base's µs, the median of per-pair ratios, where the base came
    from): child processes of each tree in turn, A B A B..."""
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        base, source = base_tree(Path(tmp), argv, BASE_COMMIT)
        if base is None:
            print(f"(no comparison with the base commit: {source})", file=sys.stderr)
            return None
        pairs = [(_child(here), _child(base)) for _ in range(BASE_PAIRS)]
    ours = statistics.median(a for a, _ in pairs)
    theirs = statistics.median(b for _, b in pairs)
    return ours, theirs, statistics.median(a / b for a, b in pairs), source


def _request_rows(targets: Targets, argv: list[str]) -> list[str]:
    rounds = request_costs()
    small, large = REQUEST_SIZES
    median = {k: statistics.median(v) for k, v in rounds.items()}
    added = {n: statistics.median(s - b for s, b in zip(rounds[f"select{n}"],
                                                         rounds[f"none{n}"], strict=True))
             for n in REQUEST_SIZES}
    ratio = added[large] / added[small] if added[small] > 0 else float("inf")
    ratio_check = targets.check(
        f"`build_request`, added by a trivial select engine, {large:,} vs {small:,} messages",
        ratio, "<=", TARGET_ADDED_RATIO, "{:.2f}×", "{}×")
    us_check = targets.check(
        f"`build_request`, added by a trivial select engine at {large:,} messages",
        added[large], "<=", TARGET_ADDED_US, "{:.0f} µs", "{:.0f} µs")
    lines = [
        "### build_request\n",
        "Path: `Session.build_request()` as an agent calls it each model call (the window "
        f"unchanged between calls), on a real SQLite store, default config otherwise. "
        f"{REQUEST_ROUNDS} rounds of {PER_ROUND} calls per case, the four cases in turn; "
        "the median of the round medians, and *added* = the median of the per-round "
        "differences (select − none).\n",
        "| path | window | no select engine | trivial select engine | added | target |",
        "|---|---|---:|---:|---:|---|",
        f"| `Session.build_request()` | {small:,} messages | {median[f'none{small}']:.0f} µs | "
        f"{median[f'select{small}']:.0f} µs | {added[small]:.0f} µs | |",
        f"| `Session.build_request()` | {large:,} messages | {median[f'none{large}']:.0f} µs | "
        f"{median[f'select{large}']:.0f} µs | {added[large]:.0f} µs | "
        f"{us_check.target_text} |",
        f"| `Session.build_request()` | ratio {large:,} / {small:,} | "
        f"{median[f'none{large}'] / median[f'none{small}']:.2f}× "
        f"| {median[f'select{large}'] / median[f'select{small}']:.2f}× | {ratio:.2f}× | "
        f"{ratio_check.target_text} |",
        "",
    ]
    vs = _vs_base(argv)
    if vs is None:
        lines += ["(Not compared with the base commit in this run: it was not available.)",
                  ""]
        return lines
    ours, theirs, pair_ratio, source = vs
    base_check = targets.check(
        f"`build_request`, no select engine, {large:,} messages, vs the base commit "
        f"{BASE_COMMIT}", pair_ratio, "<=", TARGET_VS_BASE, "{:.2f}×", "{}×")
    lines += [
        f"Against the base commit {BASE_COMMIT} (before issue 32; {source}), same path, no "
        f"select engine, {large:,} messages: {BASE_PAIRS} pairs of child processes of this "
        "script, one importing each tree, in turn; the medians, and the median of the "
        "per-pair ratios.\n",
        "| path | tree | median µs | ratio | target |",
        "|---|---|---:|---:|---|",
        f"| `Session.build_request()` | base {BASE_COMMIT} | {theirs:.0f} | | |",
        f"| `Session.build_request()` | this tree | {ours:.0f} | {pair_ratio:.2f}× | "
        f"{base_check.target_text} |",
        "",
    ]
    return lines


# --- one forced compression of a 100,000-message session, through the host ------------------


def _through_host() -> tuple[float, float]:
    """CPU seconds of ``resume(id)`` and of ``compress(force=True)`` on a fresh store holding
    the synthetic session."""
    from bench_compressor import synthetic

    messages = synthetic(COMPRESS_MESSAGES)
    config = HermesConfig.model_validate({
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "hooks": {"timeouts": {"compress": 600}},
        "compression": {"context_timeout_seconds": 600},
    })
    with tempfile.TemporaryDirectory() as tmp:
        host = ContextHost.from_config(config, store=Path(tmp) / "state.db")
        try:
            session = host.open_session(system_prompt=str(messages[0]["content"]))
            host.store.append_messages(session.id, messages[1:])  # as `sessions import` does
            t0 = time.process_time()
            session = host.resume(session.id)
            resume = time.process_time() - t0
            t0 = time.process_time()
            report = session.compress(force=True)
            through = time.process_time() - t0
        finally:
            host.close()
    assert report.status == "committed" and report.outcome == "summarised", report
    return resume, through


def _fresh_through_host() -> tuple[float, float]:
    """:func:`_through_host` in a fresh interpreter (``--compress-child``): nothing of this
    script's earlier sections alive in the process."""
    done = subprocess.run([sys.executable, __file__, "--compress-child"], capture_output=True,
                          text=True, check=True, timeout=1200)
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    return float(reply["resume"]), float(reply["through"])


def _compress_rows(targets: Targets) -> list[str]:
    from bench_compressor import whole_compress_cpu

    resume, through = _through_host()
    engine = whole_compress_cpu(COMPRESS_MESSAGES)
    fresh_resume, fresh = _fresh_through_host()
    ratio = through / engine
    ratio_check = targets.check(
        f"forced compression of {COMPRESS_MESSAGES:,} messages through the host / the "
        "compressor alone (CPU)", ratio, "<=", TARGET_OVER_ENGINE, "{:.2f}×", "{}×")
    cpu_check = targets.check(
        f"forced compression of {COMPRESS_MESSAGES:,} messages through the host (CPU)",
        through, "<=", TARGET_COMPRESS_CPU, "{:.2f} s", "{:.0f} s")
    return [
        "### compression through the host\n",
        f"A synthetic {COMPRESS_MESSAGES:,}-message session (`bench_compressor.synthetic`), "
        "bulk-written to a real SQLite store as `sessions import` does, offline summariser, "
        "the default 200,000-token window, no memory provider; CPU seconds of this process "
        "(every thread), in this run.\n",
        "| path | CPU | target |",
        "|---|---:|---|",
        f"| `ContextHost.resume(id)` (reads the window; not a target) | {resume:.2f} s | |",
        f"| `Session.compress(force=True)` (host: count, fence, engine, publish, receipt) | "
        f"{through:.2f} s | {cpu_check.target_text} |",
        f"| `Compressor.compress` alone on the same window (`bench_compressor`) | "
        f"{engine:.2f} s | |",
        f"| host / compressor alone | {ratio:.2f}× | {ratio_check.target_text} |",
        f"| the same two calls in a fresh interpreter (`--compress-child`; not a target): "
        f"resume, compress | {fresh_resume:.2f} s, {fresh:.2f} s | |",
        f"| fresh compress / compressor alone (not a target) | {fresh / engine:.2f}× | |",
        "",
        "The target rows run in this script's process after its other sections; the fresh "
        "row repeats the same code in a new process (as an agent resuming a session after "
        "`sessions import` would): the code measured is the same, so a difference between "
        "the two is the process's state (what the sections before left alive, the heap) or "
        "the shared machine's noise.\n",
    ]


def main() -> int:
    argv = sys.argv[1:]
    if "--compress-child" in argv:
        resume, through = _through_host()
        print(json.dumps({"resume": resume, "through": through}))
        return 0
    if "--child" in argv:
        _child_none_cost()
        return 0
    targets = Targets("session")
    lines = ["## session\n"]
    lines += _append_rows(targets)
    lines += _request_rows(targets, argv)
    lines += _compress_rows(targets)
    print("\n".join(lines))
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
