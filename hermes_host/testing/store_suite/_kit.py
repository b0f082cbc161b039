"""Shared pieces of the store contract suite: realistic windows, the ``store`` fixture, and
a worker script for the multi-process tests.

Run as a script (``python -m hermes_host.testing.store_suite._kit compress URL SESSION
GO_FILE HOLD MODE``) it is one real process competing for a session's compression lease: it
prints ``ready``, waits for ``GO_FILE`` to appear (so every competitor tries at the same
moment), tries to acquire the lease, holds it ``HOLD`` seconds as a compression would,
publishes, and prints one JSON line describing what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_host.models import Message
from hermes_host.store import StateStore
from hermes_host.testing.stores import StoreFactory

__all__ = ["compressed_window", "conversation", "race", "store"]


@pytest.fixture
def store(store_factory: StoreFactory) -> Iterator[StateStore]:
    """A fresh, empty store of the backend under test, closed afterwards."""
    yield store_factory()


def conversation(turns: int, *, tag: str = "") -> list[Message]:
    """A realistic window: system prompt, then user / assistant-with-tool-call / tool /
    assistant turns, each with distinctive searchable words."""
    messages: list[Message] = [{"role": "system", "content": f"You are a coding agent {tag}."}]
    for i in range(turns):
        call_id = f"call_{tag}_{i}"
        messages += [
            {"role": "user", "content": f"turn {i} {tag}: please fix the flaky parser test"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "terminal", "arguments": '{"cmd": "pytest -x"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "content": f"toolonlyoutput{i} 3 passed in 0.1s",
                "tool_call_id": call_id,
                "name": "terminal",
            },
            {"role": "assistant", "content": f"Fixed step {i} {tag}; the tests pass now."},
        ]
    return messages


def compressed_window(tag: str, tail: int = 3) -> list[Message]:
    """What a compressor would publish: system, one summary block, a short tail."""
    window: list[Message] = [
        {"role": "system", "content": f"You are a coding agent {tag}."},
        {
            "role": "user",
            "content": f"[CONTEXT COMPACTION] summary {tag}: fixed the parser tests",
            "_compressed_summary": True,
        },
    ]
    for i in range(tail):
        window += [
            {"role": "assistant", "content": f"tail answer {i} {tag}"},
            {"role": "user", "content": f"tail question {i} {tag}"},
        ]
    return window


def race(url: str, session_ids: list[str], go: Path, hold: float, mode: str) -> list[Any]:
    """One real process per session id, all trying to compress at the same moment."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "hermes_host.testing.store_suite._kit", "compress", url,
             sid, str(go), str(hold), mode],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for sid in session_ids
    ]
    try:
        for proc in procs:  # every competitor is up and waiting before anyone starts
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line == "ready", (line, proc.stderr.read() if proc.stderr else "")
        go.write_text("go")
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _compress_worker(url: str, session_id: str, go_file: str, hold: float, mode: str) -> None:
    from hermes_host.store import Deferred, open_store

    store = open_store(url)
    print("ready", flush=True)
    deadline = time.time() + 60
    while not os.path.exists(go_file):
        if time.time() > deadline:
            print(json.dumps({"result": "timeout"}), flush=True)
            return
        time.sleep(0.002)
    outcome: dict[str, Any] = {"pid": os.getpid()}
    lease = store.acquire_lease(session_id, ttl=60)
    outcome["t_attempt"] = time.time()
    if isinstance(lease, Deferred):
        outcome.update(result="deferred", holder=lease.holder, message=lease.message)
    else:
        outcome.update(result="published", holder=lease.holder, t_acquired=time.time())
        time.sleep(hold)
        published = store.publish_compression(
            lease, session_id, compressed_window(session_id), mode=mode  # type: ignore[arg-type]
        )
        outcome.update(new_session=published.session_id, t_published=time.time())
        store.release_lease(lease)
    store.close()
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "compress":
        _compress_worker(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6])
    else:
        sys.exit("usage: _kit compress URL SESSION GO_FILE HOLD rotate|in_place")
