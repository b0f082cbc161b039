"""One host of the many-hosts tests, as a real process with its own host id.

    python pg_worker.py turns URL SESSION COUNT TAG HOST GO_FILE
        append COUNT messages one turn at a time; every 8th turn try to compress the
        window in place (the lease decides who does); print one JSON line.
    python pg_worker.py hold URL SESSION TTL HOST
        take the session's lease for TTL seconds, print its holder, then wait to be killed.

HOST replaces the machine name in the lease holder, as if each process ran elsewhere (so a
dead holder cannot be proven dead by pid: only its TTL frees the lease).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any


def _as_host(name: str) -> None:
    socket.gethostname = lambda: name  # type: ignore[assignment]


def turns(url: str, session_id: str, count: int, tag: str, go: str) -> None:
    from hermes_host.store import Deferred, StoreError, open_store

    store = open_store(url, lease_ttl=30)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.005)
    out: dict[str, Any] = {"appended": [], "published": 0, "deferred": [], "stale": 0}
    for i in range(count):
        out["appended"] += store.append_messages(
            session_id, [{"role": "user", "content": f"{tag} message {i}"}])
        if i % 8 != 7:
            continue
        lease = store.acquire_lease(session_id)
        if isinstance(lease, Deferred):
            out["deferred"].append(lease.holder)
            continue
        try:
            marker = store.window_marker(session_id)
            seen = [r for r in store.all_messages(session_id, include_inactive=False)
                    if r.id <= marker.last_message_id]
            summary = {"role": "user", "content": f"summary by {tag} at {i}",
                       "_compressed_summary": True}
            window = [summary, *(r.message for r in seen[-2:])]
            store.publish_compression(lease, session_id, window, mode="in_place",
                                      snapshot=marker)
            out["published"] += 1
        except StoreError:  # the window moved between marker and read: compress next time
            out["stale"] += 1
        finally:
            store.release_lease(lease)
    store.close()
    print(json.dumps(out), flush=True)


def hold(url: str, session_id: str, ttl: float) -> None:
    from hermes_host.store import Lease, open_store

    store = open_store(url)
    lease = store.acquire_lease(session_id, ttl=ttl)
    assert isinstance(lease, Lease), lease
    print(json.dumps({"holder": lease.holder, "expires_at": lease.expires_at}), flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1] == "turns":
        _as_host(sys.argv[6])
        turns(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[7])
    elif sys.argv[1] == "hold":
        _as_host(sys.argv[5])
        hold(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(__doc__)
