"""``hermes-host browse``: how long a conversation page of a 10,000-message lineage takes
(issue 29, target: ≤ 300 ms p50).

Run: ``python benchmarks/bench_browse.py [--messages 10000] [--repeat 15]``.  Prints one
markdown section.

The lineage is built on the user's path: the shared real transcripts' messages, concatenated
(tool call ids made unique per pass) until ``--messages``, replayed through
:class:`~hermes_host.host.ContextHost` (``replay_transcript``: default compressor, offline
summariser, a 16K window) into a fresh SQLite store, so it holds every request manifest and
compaction receipt a live agent's store would (hundreds of rotations).  Pages are then
fetched through the real Starlette app (``TestClient``: routing, the store read, the view,
redaction, the Jinja2 render, the response) from a store opened read-only, as ``browse`` opens
it: the first, a middle and the last page of the transcript in model view, the full view,
a request page, the conversations page and a search.  Each URL is fetched once to warm up,
then ``--repeat`` times; p50 and p95 of the wall time (the target), and p50 of the process's
CPU time (the page's own cost, whatever else the machine is running: on a shared machine the
wall time can be twice it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _targets import Targets
from starlette.testclient import TestClient

from hermes_host.browse.app import create_app
from hermes_host.browse.views import PAGE_SIZE
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.replay import replay_transcript
from hermes_host.store import open_store
from hermes_host.store.conversations import find_conversation
from hermes_host.transcripts import load_transcript

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(
    os.environ.get("HERMES_HOST_TRANSCRIPTS", ROOT.parent / "shared" / "data" / "transcripts")
)
PAGE_P50_TARGET_MS = 300.0
WINDOW = 16_000


def long_transcript(path: Path, messages: int) -> int:
    """Write a transcript of about ``messages`` real messages to ``path``; returns the count."""
    out: list[dict[str, Any]] = []
    rounds = 0
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    while len(out) < messages:
        for source in files:
            for line in source.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                m = json.loads(line)
                if m.get("role") == "system":
                    continue
                for call in m.get("tool_calls") or []:
                    if isinstance(call, dict) and "id" in call:
                        call["id"] = f"{call['id']}_{rounds}"
                if m.get("tool_call_id"):
                    m["tool_call_id"] = f"{m['tool_call_id']}_{rounds}"
                out.append(m)
        rounds += 1
    out = out[:messages]
    while out and (out[-1]["role"] != "assistant" or out[-1].get("tool_calls")):
        out.pop()  # end on a whole turn
    path.write_text("".join(json.dumps(m) + "\n" for m in out), encoding="utf-8")
    return len(out)


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float, float, int]:
    """``(p50 ms, p95 ms, p50 CPU ms, bytes)`` of fetching ``url`` (the CPU time of this
    process, where the app runs: what the page costs whatever else the machine runs)."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append(1000 * (time.perf_counter() - start))
        cpu.append(1000 * (time.process_time() - start_cpu))
        assert response.status_code == 200
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))], \
        statistics.median(cpu), len(response.content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    targets = Targets("browse")
    print("## browse\n")
    if not any(TRANSCRIPTS.glob("*.jsonl")):
        print(f"No transcripts found at `{TRANSCRIPTS}` (set HERMES_HOST_TRANSCRIPTS).")
        return targets.finish()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "long.jsonl"
        count = long_transcript(source, args.messages)
        config = HermesConfig.model_validate({
            "model": {"context_length": WINDOW}, "summarizer": {"provider": "offline"},
            "memory": {"providers": []},
        })
        store_path = Path(tmp) / "state.db"
        start = time.perf_counter()
        with ContextHost.from_config(config, store=store_path) as host:
            result = replay_transcript(host, load_transcript(source), title="long")
        built = time.perf_counter() - start
        store = open_store(store_path, read_only=True)
        try:
            ref = find_conversation(store, "long")
            ids = [s.id for s in ref.sessions]
            stored = sum(len(store.all_messages(sid)) for sid in ids)
            requests = len(store.list_requests(ids))  # type: ignore[attr-defined]
            receipts = store.list_receipts(ids)  # type: ignore[attr-defined]
            committed = sum(1 for r in receipts if r.status == "committed")
            pages = -(-stored // PAGE_SIZE)
            client = TestClient(create_app(store), base_url="http://127.0.0.1")
            urls = [
                ("conversation, model view, first page", f"/c/{ref.id}?view=model"),
                ("conversation, model view, middle page",
                 f"/c/{ref.id}?view=model&page={pages // 2}"),
                ("conversation, model view, last page", f"/c/{ref.id}?view=model&page={pages}"),
                ("conversation, full transcript, middle page",
                 f"/c/{ref.id}?page={pages // 2}"),
                ("one request (the last)", f"/c/{ref.id}/r/{requests}"),
                ("conversations", "/"),
                ("search", "/search?q=dataset"),
            ]
            print(
                f"A {count:,}-message transcript made of the shared real transcripts, replayed "
                f"through `ContextHost` at a {WINDOW // 1000}K window ({built:.0f} s): one "
                f"conversation of {len(ids):,} sessions, {stored:,} stored messages "
                f"(summaries included), {requests:,} request manifests, {committed:,} "
                f"committed compactions of {len(receipts):,} attempts "
                f"({result.steps:,} steps). Pages fetched through the real app "
                f"(Starlette `TestClient`, store opened read-only), {PAGE_SIZE} messages a "
                f"page, {args.repeat} times each after one warm-up.\n"
            )
            print("| page | p50 ms | p95 ms | CPU p50 ms | KB | target |")
            print("|---|---:|---:|---:|---:|---|")
            for name, url in urls:
                p50, p95, cpu, size = timed(client, url, args.repeat)
                if name.startswith("conversation,"):
                    check = targets.check(f"{name} p50", p50, "<=", PAGE_P50_TARGET_MS,
                                          "{:.0f} ms", "{:.0f} ms")
                    print(f"| {name} | {check.shown_value}{check.marker} | {p95:.0f} | "
                          f"{cpu:.0f} | {size / 1024:.0f} | {check.spec} |")
                else:
                    print(f"| {name} | {p50:.0f} ms | {p95:.0f} | {cpu:.0f} | "
                          f"{size / 1024:.0f} | |")
        finally:
            store.close()
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs.")
    return targets.finish()


if __name__ == "__main__":
    sys.exit(main())
