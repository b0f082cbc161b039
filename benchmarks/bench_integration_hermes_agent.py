"""What ``context.engine: hermes_host`` costs a Hermes Agent turn, against Hermes' built-in
``ContextCompressor`` in the same run (issue 18).

Run in an environment with ``hermes-agent`` 0.19 and the integration installed (``nox -s
bench`` builds one: hermes-agent pins its own dependencies).  Prints one markdown section.

Two real ``AIAgent``s on one Hermes home talk to one loopback OpenAI-compatible server: one
with Hermes' built-in compressor, one with ``hermes_host`` (hermes-host's compressor, the
SQLite store under the Hermes home).  Their turns alternate, so machine noise hits both
alike.  Thresholds are high enough that neither compresses: the figure is the steady cost
every turn pays (storing the new messages, the fenced ``should_compress``, usage, the
``select_context`` check).  The time spent inside the integration's own code is measured
separately by wrapping its entry points, so it can be read without the noise of the rest of
the turn.  A third agent then compresses (a 2,500-token threshold) to show a compressing
session's turn and the compression pass itself.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _targets import Targets

TURNS = 40
WARMUP = 3
TARGET_RATIO = 1.5
TARGET_OWN_MS = 15.0
QUESTION = "question {n}: please look at part {n} of the report. " + "lorem ipsum dolor " * 60


def _write(home: Path, base_url: str, engine: str, threshold_tokens: int) -> None:
    (home / "config.yaml").write_text(
        "model:\n  default: gpt-fake-1\n  provider: custom\n"
        f"  base_url: {base_url}\n  context_length: 128000\n"
        f"context:\n  engine: {engine}\nplugins:\n  enabled: [hermes_host]\n",
        encoding="utf-8",
    )
    (home / "hermes-host").mkdir(exist_ok=True)
    (home / "hermes-host" / "config.yaml").write_text(
        "context: {engine: compressor}\nsummarizer: {provider: offline}\n"
        f"compression: {{threshold_tokens: {threshold_tokens}}}\nmemory: {{providers: []}}\n",
        encoding="utf-8",
    )


def _agent(home: Path, base_url: str, engine: str, threshold_tokens: int) -> Any:
    from hermes_cli.plugins import get_plugin_manager
    from run_agent import AIAgent

    _write(home, base_url, engine, threshold_tokens)
    get_plugin_manager().discover_and_load(force=True)
    return AIAgent(base_url=base_url, api_key="sk-bench", model="gpt-fake-1", quiet_mode=True,
                   enabled_toolsets=[], skip_context_files=True, skip_memory=True)


class Stopwatch:
    """Wall time spent inside the wrapped callables (not re-entrant: outermost call only)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._depth = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.total += time.perf_counter() - started

        return timed


def _instrument(engine: Any, watch: Stopwatch) -> None:
    import hermes_agent_hermes_host.plugin as plugin
    from hermes_cli.plugins import get_plugin_manager

    for name in ("sync", "update_from_response", "should_compress", "compress", "select",
                 "on_session_start"):
        setattr(engine, name, watch.wrap(getattr(engine, name)))
    manager = get_plugin_manager()
    for kind in ("_hooks", "_middleware"):
        for callbacks in getattr(manager, kind).values():
            for i, cb in enumerate(callbacks):
                if getattr(cb, "__module__", "") == plugin.__name__:
                    callbacks[i] = watch.wrap(cb)


def _turn(agent: Any, n: int, history: list[Any]) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    result = agent.run_conversation(QUESTION.format(n=n), conversation_history=history)
    return time.perf_counter() - started, result["messages"]


def main() -> int:
    # Hermes prints its status lines ("📦 Preflight compression…") on stdout, which is this
    # section's text: they go nowhere while the agents run.
    with contextlib.redirect_stdout(io.StringIO()):
        measured = measure()
    if measured is None:
        print("## Hermes Agent integration\n\nSkipped: hermes-agent is not installed in this "
              "environment (`nox -s bench` runs this script in one that has it).")
        return 0
    return report(*measured)


def measure() -> tuple[Any, ...] | None:
    try:
        import run_agent  # noqa: F401
    except ImportError:
        return None
    from hermes_host.testing.fake_openai import FakeOpenAI, chat_responder

    work = Path(tempfile.mkdtemp(prefix="bench-hermes-agent-"))
    os.environ["HERMES_HOME"] = str(work / "steady")
    (work / "steady").mkdir()
    for name in ("HERMES_HOST_HOME", "HERMES_HOST_CONFIG"):
        os.environ.pop(name, None)
    with FakeOpenAI(responder=chat_responder) as fake:
        builtin = _agent(work / "steady", fake.base_url, "compressor", 100_000)
        hosted = _agent(work / "steady", fake.base_url, "hermes_host", 100_000)
        assert type(hosted.context_compressor).__name__ == "HermesHostEngine"
        watch = Stopwatch()
        _instrument(hosted.context_compressor, watch)
        times: dict[str, list[float]] = {"builtin": [], "hosted": []}
        own: list[float] = []
        histories: dict[str, list[Any]] = {"builtin": [], "hosted": []}
        for n in range(TURNS + WARMUP):
            for key, agent in (("builtin", builtin), ("hosted", hosted)):
                before = watch.total
                elapsed, histories[key] = _turn(agent, n, histories[key])
                if n >= WARMUP:
                    times[key].append(elapsed)
                    if key == "hosted":
                        own.append(watch.total - before)
        assert builtin.context_compressor.compression_count == 0
        assert hosted.context_compressor.compression_count == 0

        os.environ["HERMES_HOME"] = str(work / "compressing")
        (work / "compressing").mkdir()
        compressing = _agent(work / "compressing", fake.base_url, "hermes_host", 2_500)
        engine = compressing.context_compressor
        ctimes, history, passes = [], [], []
        for n in range(TURNS):
            elapsed, history = _turn(compressing, n, history)
            ctimes.append(elapsed)
            report = engine.last_report
            if report and report["status"] == "committed" and (
                not passes or passes[-1] is not report
            ):
                passes.append(report)
        compressions = engine.compression_count
        stored = sum(len(engine.host.store.all_messages(s)) for s in engine.session.lineage)
    return times, own, ctimes, passes, compressions, stored


def report(times: dict[str, list[float]], own: list[float], ctimes: list[float],
           passes: list[dict[str, Any]], compressions: int, stored: int) -> int:
    b_med = statistics.median(times["builtin"]) * 1000
    h_med = statistics.median(times["hosted"]) * 1000
    own_med = statistics.median(own) * 1000
    own_p95 = statistics.quantiles(own, n=20)[-1] * 1000
    ratio = h_med / b_med
    c_med = statistics.median(ctimes) * 1000
    pass_ms = statistics.median([p["duration"] for p in passes]) * 1000 if passes else 0.0

    targets = Targets("hermes-agent integration")
    r = targets.check("turn time, hermes_host ÷ built-in compressor (median)", ratio, "<=",
                      TARGET_RATIO, fmt="{:.2f}×")
    o = targets.check("time inside the integration per turn (median)", own_med, "<=",
                      TARGET_OWN_MS, fmt="{:.1f} ms")
    print("## Hermes Agent integration\n")
    print(f"Real `AIAgent` turns (hermes-agent 0.19) on a loopback OpenAI-compatible server, "
          f"{TURNS} measured turns each after {WARMUP} warm-up turns, the two engines' turns "
          "alternating; no compression in the first two rows.\n")
    print("| engine | median ms per turn | target |")
    print("|---|---:|---|")
    print(f"| Hermes' built-in `ContextCompressor` | {b_med:.1f} | |")
    print(f"| `hermes_host` (hermes-host store + compressor) | {h_med:.1f} | |")
    print(f"| ratio hermes_host ÷ built-in | {ratio:.2f}× | {r.target_text} |")
    print(f"| inside the integration (hooks, store writes, decisions) | {own_med:.1f} "
          f"(p95 {own_p95:.1f}) | {o.target_text} |")
    print(f"| `hermes_host`, compressing session (2,500-token threshold) | {c_med:.1f} | |")
    print()
    print(f"The compressing session ran {compressions} compressions in {TURNS} turns (one "
          f"hermes-host pass: median {pass_ms:.1f} ms with the offline summariser) and its "
          f"store holds {stored} rows: every message once, plus the summaries.")
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
