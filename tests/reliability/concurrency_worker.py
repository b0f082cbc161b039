"""One of the real processes of the concurrency test (issues 13 and 31, R-8.1, R-8.2, R-9.4,
R-10.1).

``python concurrency_worker.py STORE LOCKS INDEX SESSIONS SECONDS MIN_TURNS MODE OUT`` takes
turns on the sessions titled ``conc-0`` … ``conc-<SESSIONS-1>`` of the store ``STORE`` (a
SQLite file or a ``postgresql://`` URL) until ``SECONDS`` have passed and it took at least
``MIN_TURNS`` turns (so that a loaded machine still compresses every session): it picks one
at random, now and then resumes it afresh (``host.resume``), writes one turn (user, tool
call, tool result, answer — under a per-session ``flock`` in the folder ``LOCKS``, as
gateway workers take turns on a conversation) and ends the turn outside the lock, so that
its compression runs while other processes append.  Every message the store accepted is
acknowledged in ``OUT`` (one JSON line each), as is every compression report and every
exception that reached this caller; a ``StaleSessionError`` from ``add_message`` (a write
refused because another process rotated the conversation, which ``add_message`` must follow
instead) is reported as ``refused``.  The last line counts how often this process took the
window from the store because another one wrote (``followed``, ``followed_rotation``: to a
newer session) and how often the store refused an append because a rotation had just
committed, which ``add_message`` then followed (``stale_appends``): the races happened.

The engine (``NamingTail``) keeps the system prompt, one summary and the last user turn; its
summary names, by tag, every message it replaced, so the test can check that whatever left
the live window was summarised.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hermes_host import CompressRequest, CompressResult, hookimpl
from hermes_host.host import ContextHost
from hermes_host.session import sync as session_sync
from hermes_host.store import StaleSessionError
from tests.host_helpers import TailEngine, make_config

TAG = re.compile(r"\bp\d+s\d+\b")


class NamingTail(TailEngine):
    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        time.sleep(0.01)  # long enough for another process to write meanwhile
        result = self._tail(request)
        if result.outcome != "summarised":
            return result
        kept = {id(m) for m in result.messages}
        names = sorted({tag for m in request.messages[1:]
                        if id(m) not in kept and not m.get("_compressed_summary")
                        for tag in TAG.findall(str(m.get("content") or ""))})
        summary = dict(result.messages[1])
        summary["content"] = "SUMMARY OF " + " ".join(names)
        return result.model_copy(
            update={"messages": [result.messages[0], summary, *result.messages[2:]]})


def main(store: str, locks: Path, index: int, sessions: int, seconds: float, min_turns: int,
         mode: str, out: Path) -> None:
    rng = random.Random(index)
    log = open(out, "a", encoding="utf-8")

    def emit(**row: Any) -> None:
        log.write(json.dumps(row) + "\n")
        log.flush()

    engine = NamingTail(keep=1, threshold=900)
    seq = 0
    races = {"followed": 0, "followed_rotation": 0, "stale_appends": 0}
    real_follow = session_sync.follow

    def counting_follow(session: Any, marker: Any) -> None:
        races["followed"] += 1
        races["followed_rotation"] += marker.session_id != session.id
        real_follow(session, marker)

    session_sync.follow = counting_follow
    config = make_config("tail", model={"context_length": 4000, "max_output_tokens": 200},
                         compression={"mode": mode}, store={"lease_ttl_seconds": 30})
    with ContextHost.from_config(config, store=store, extra_plugins={"tail": engine}) as host:
        real_append = host.store.append_messages

        def counting_append(*args: Any, **kwargs: Any) -> list[int]:
            try:
                return real_append(*args, **kwargs)
            except StaleSessionError:
                races["stale_appends"] += 1
                raise

        host.store.append_messages = counting_append  # type: ignore[method-assign]
        live: dict[int, Any] = {}
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline or seq < min_turns:
            k = rng.randrange(sessions)
            try:
                if k not in live or rng.random() < 0.1:
                    live[k] = host.resume(f"conc-{k}")
                session = live[k]
                with open(locks / f"conc-{k}.lock", "w") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    try:
                        seq += 1
                        tag = f"p{index}s{seq}"
                        call = f"call_{tag}"
                        steps: list[dict[str, Any]] = [
                            {"role": "user", "content": f"question {tag} " + "lorem " * 30},
                            {"role": "assistant", "content": f"looking {tag}", "tool_calls": [
                                {"id": call, "type": "function",
                                 "function": {"name": "grep", "arguments": "{}"}}]},
                            {"role": "tool", "tool_call_id": call, "content": f"result {tag} "
                             + "dolor " * 30},
                            {"role": "assistant", "content": f"answer {tag} " + "amet " * 30},
                        ]
                        for n, message in enumerate(steps):
                            try:
                                session.add_message(message)
                            except StaleSessionError as exc:
                                # refused: add_message must follow a rotation, not give up
                                emit(refused=tag, session=k, step=n, error=str(exc))
                                live.pop(k, None)
                                break
                            emit(ack=tag, step=n, session=k)
                            if n in (0, 2):
                                session.build_request()
                    finally:
                        fcntl.flock(lock, fcntl.LOCK_UN)
                if k not in live:
                    continue
                outcome = session.end_turn()
                report = outcome.compression
                if report is not None:
                    # after a commit: the conversation's compression count it produced
                    emit(report=report.status, outcome=report.outcome, session=k,
                         conversation=session.conversation_id,
                         count_after=session.compression_count, message=report.message)
            except Exception as exc:  # anything reaching the caller is an anomaly
                live.pop(k, None)
                emit(error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-1500:])
    emit(done=index, turns=seq, **races)
    log.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], Path(a[1]), int(a[2]), int(a[3]), float(a[4]), int(a[5]), a[6], Path(a[7]))
    sys.stdout.flush()
    os._exit(0)
