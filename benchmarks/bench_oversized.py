"""One oversized message through ``ContextHost``/``Session`` (issue 31): time and peak memory of
each step, this tree against the commit before the fix, in the same run.

Run: ``python benchmarks/bench_oversized.py [--base DIR] [--quick] [--check]``.  Prints one
markdown section; every figure is measured in this run, on a real SQLite store.

Each case runs in a fresh child process (so ``ru_maxrss`` is that case's own peak): a session
with the default model window (200,000 tokens), the real compressor and the offline
summariser; 12 short exchanges, then the one big user message (``add_user``) — or, for the
``args`` case, one ``write_file`` tool call whose JSON arguments carry the text
(``add_assistant`` with the call, then its short result) — then 25 short exchanges, then
``build_request``, a forced ``compress`` and ``end_turn``.  Peak memory is
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after the last step less its value just before
the message was added (the text itself was already allocated then).  "in the store" is the
time ``add_user`` spent in ``store.append_messages`` (SQLite writing the row and indexing it
for full-text and substring search; timed by wrapping the method): ``add_user`` less that is
the host's own cost.  The base commit (``BASE_COMMIT``, before issue 31's fix) is
``git archive``d, or given with ``--base DIR``, and imported by its children through
``PYTHONPATH``.  ``--quick`` runs the 20 MB case only.

Targets (issue 31): with one 20 MB message the forced compression commits; the host's own
cost of ``add_user`` (beyond the store's) ≤ 1 s; ``build_request`` ≤ 0.5 s and ``compress``
≤ 2 s; peak memory ≤ 10× the message; ``count_text`` of 10 MB of one repeated character
≤ 0.5 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _targets import Targets
from _trees import base_tree

BASE_COMMIT = "22b540e"
CASES = (("prose", 20), ("prose", 50), ("same", 10), ("args", 20))
TARGET_HOST_ADD_S = 1.0
TARGET_BUILD_S = 0.5
TARGET_COMPRESS_S = 2.0
TARGET_MEMORY_RATIO = 10.0
TARGET_COUNT_S = 0.5


def _text(kind: str, mb: float) -> str:
    n = int(mb * 1024 * 1024)
    if kind == "same":
        return "a" * n
    if kind == "args":
        return json.dumps({"path": "big.txt", "content": _text("prose", mb)})
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]
    block = " ".join(f"{words[i % 8]}{i * 7919 % 1000}" for i in range(150_000))
    return (block * (n // len(block) + 1))[:n]


def _child(kind: str, mb: float) -> None:
    """One case in this process; prints one JSON line."""
    import resource

    from hermes_host.config import HermesConfig
    from hermes_host.host import ContextHost

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    text = _text(kind, mb)
    tmp = Path(tempfile.mkdtemp())
    config = HermesConfig.model_validate({"memory": {"providers": []},
                                          "summarizer": {"provider": "offline"}})
    out: dict[str, object] = {}
    with ContextHost.from_config(config, store=tmp / "state.db") as host:
        session = host.open_session("big", "You are a helper.")
        for i in range(12):
            session.add_user(f"question {i}: " + "what about this? " * 20)
            session.add_assistant(f"answer {i}: " + "it is so. " * 20)
        before = rss()
        append = host.store.append_messages
        in_store: list[float] = []

        def timed_append(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return append(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                in_store.append(time.perf_counter() - started)

        host.store.append_messages = timed_append  # type: ignore[method-assign]

        def step(name: str, fn: object) -> object:
            started = time.perf_counter()
            value = fn()  # type: ignore[operator]
            out[name + "_s"] = time.perf_counter() - started
            return value

        if kind == "args":
            session.add_user("write the file")
            call = {"id": "call_big", "type": "function",
                    "function": {"name": "write_file", "arguments": text}}
            step("add_user", lambda: session.add_assistant(None, [call]))
            session.add_tool_result("call_big", "wrote it")
        else:
            step("add_user", lambda: session.add_user(text))
        out["store_s"] = sum(in_store)
        host.store.append_messages = append  # type: ignore[method-assign]
        session.add_assistant("read it")
        for i in range(25):
            session.add_user(f"after {i}: " + "and then? " * 20)
            session.add_assistant(f"reply {i}: " + "then this. " * 20)
        step("build_request", session.build_request)
        report = step("compress", lambda: session.compress(force=True))
        out["compress"] = f"{report.status}/{report.outcome}"  # type: ignore[attr-defined]
        step("end_turn", session.end_turn)
        out["peak_mb"] = rss() - before
        out["peak_rss_mb"] = rss()
        rows = [r.message for sid in host.store.lineage(session.id)
                for r in host.store.all_messages(sid)]
        out["stored_whole"] = [m.get("content") for m in rows].count(text) + [
            c["function"]["arguments"] for m in rows for c in m.get("tool_calls") or []
        ].count(text)
    print(json.dumps(out))


def _child_count() -> None:
    from hermes_host.tokens import count_text

    count_text("warm the encoder up (loading it is not what is measured)")
    text = "a" * 10_000_000
    started = time.perf_counter()
    count_text(text)
    print(json.dumps({"count_s": time.perf_counter() - started}))


def _run(tree: Path, *args: str, timeout: float = 1800) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=Path(__file__).parent)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _seconds(result: dict[str, object], key: str) -> str:
    value = result.get(key)
    return f"{value:.2f}" if isinstance(value, float) else "–"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1], float(argv[2]))
        return 0
    if argv[:1] == ["--child-count"]:
        _child_count()
        return 0
    targets = Targets("oversized messages")
    here = Path(__file__).resolve().parents[1]
    cases = CASES[:1] if "--quick" in argv else CASES
    lines = [
        "## oversized messages\n",
        "One big user message through `ContextHost`/`Session` (default 200,000-token window, "
        "compressor, offline summariser), each case in a fresh process; this tree against "
        f"the commit before issue 31's fix ({BASE_COMMIT}), same run. Seconds; peak memory "
        "is the growth of the process's peak RSS from just before the message was added "
        "(in brackets: the peak itself). In brackets after `add_user`: the part of it spent "
        "in the store's `append_messages` (SQLite writing and indexing the row); for the "
        "tool-call arguments, `add_user` is the `add_assistant` that carries the call.\n",
        "| message | tree | add_user (in the store) | build_request | compress | end_turn "
        "| compression | peak memory | stored whole |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        base, source = base_tree(Path(tmp), argv, BASE_COMMIT)
        results: dict[tuple[str, float, str], dict[str, object]] = {}
        for kind, mb in cases:
            label = f"{mb:g} MB " + {"prose": "of text", "same": "of one character",
                                     "args": "of tool-call arguments"}[kind]
            trees = [("this tree", here)] + ([(BASE_COMMIT, base)] if base is not None else [])
            for name, tree in trees:
                result = _run(tree, "--child", kind, str(mb))
                results[(kind, mb, name)] = result
                if "error" in result:
                    lines.append(f"| {label} | {name} | failed: {result['error']} |||||||")
                    continue
                lines.append(
                    f"| {label} | {name} | {_seconds(result, 'add_user_s')} "
                    f"({_seconds(result, 'store_s')}) | {_seconds(result, 'build_request_s')} "
                    f"| {_seconds(result, 'compress_s')} | {_seconds(result, 'end_turn_s')} "
                    f"| {result['compress']} | {float(result['peak_mb']):,.0f} MB "  # type: ignore[arg-type]
                    f"({float(result['peak_rss_mb']):,.0f} MB) | {result['stored_whole']} |"
                )
        counts = {name: _run(tree, "--child-count")
                  for name, tree in [("this tree", here)] + (
                      [(BASE_COMMIT, base)] if base is not None else [])}
    lines.append("")
    measured = ", ".join(f"{name} {_seconds(r, 'count_s')} s" for name, r in counts.items())
    lines.append(f"`count_text` of 10 MB of one repeated character: {measured}. "
                 f"The base commit's tree: {source}.")
    ours = results.get(("prose", 20, "this tree"), {})
    if "error" not in ours and ours:
        add, store = float(ours["add_user_s"]), float(ours["store_s"])  # type: ignore[arg-type]
        checks = [
            targets.check("20 MB: the forced compression commits",
                          float(str(ours["compress"]).startswith("committed")), ">=", 1,
                          fmt="{:.0f}"),
            targets.check("20 MB: host's own `add_user` cost (beyond the store's)",
                          max(0.0, add - store), "<=", TARGET_HOST_ADD_S, fmt="{:.2f} s"),
            targets.check("20 MB: `build_request`", float(ours["build_request_s"]),  # type: ignore[arg-type]
                          "<=", TARGET_BUILD_S, fmt="{:.2f} s"),
            targets.check("20 MB: `compress`", float(ours["compress_s"]),  # type: ignore[arg-type]
                          "<=", TARGET_COMPRESS_S, fmt="{:.2f} s"),
            targets.check("20 MB: peak memory / message size", float(ours["peak_mb"]) / 20,  # type: ignore[arg-type]
                          "<=", TARGET_MEMORY_RATIO, fmt="{:.1f}×"),
        ]
        count = counts["this tree"].get("count_s")
        if isinstance(count, float):
            checks.append(targets.check("`count_text`, 10 MB of one character", count, "<=",
                                        TARGET_COUNT_S, fmt="{:.2f} s"))
        lines += ["", "| target | value | |", "|---|---:|---|"]
        lines += [f"| {c.name} | {c.shown_value} | {c.target_text} |" for c in checks]
    print("\n".join(lines))
    return targets.finish(argv)


if __name__ == "__main__":
    sys.exit(main())
