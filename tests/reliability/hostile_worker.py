"""One cell of the hostile-engine matrix, in its own process (an ``os._exit`` or a GIL
holder must not take the test runner down with it).

``python hostile_worker.py CASE[,CASE…] ISOLATION DIR`` runs, per case, ``TURNS`` turns
against a fresh host with a :class:`rel_hostile_engines.Hostile` engine and prints one JSON line
per case (cases run one after the other in this process): the latency of every
fenced step minus its timeout, the provenance records seen, and the checks that failed
(empty when the original window and the store survived every turn).  With ``ISOLATION``
``process`` it first checks that ``engines.hostile.fence.isolation: process`` is accepted
and honoured (the hook runs in another process) and prints ``{"skip": reason}`` otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from rel_hostile_engines import MARK, Hostile
from reliability_figures import scaled

from hermes_host.host import ContextHost
from hermes_host.messages import check_invariants, sanitize_for_wire, validate_messages
from tests.host_helpers import make_config

TIMEOUT = 0.5
TURNS = scaled(2, 3)


def _host(case: str, isolation: str, store: Path) -> ContextHost:
    engines: dict[str, Any] = {}
    if isolation != "thread":  # thread is the default; the key may not exist yet
        engines = {"hostile": {"fence": {"isolation": isolation}}}
    config = make_config(
        "hostile",
        hooks={"timeouts": {"select_context": TIMEOUT, "should_compress": TIMEOUT,
                            "compress": TIMEOUT},
               "breaker": {"failures": 1000, "cooldown_seconds": 1}},
        compression={"context_timeout_seconds": 30},
        engines=engines,
    )
    return ContextHost.from_config(config, store=store, extra_plugins={"hostile": Hostile(case)})


def _probe(isolation: str, store: Path) -> str | None:
    """Why the process mode cannot be tested yet, or ``None``."""
    try:
        host = _host("probe", isolation, store)
    except Exception as exc:
        return f"engines.<name>.fence.isolation: {isolation} is not accepted yet ({exc})"
    try:
        session = host.open_session("probe", "sys")
        session.add_user("hello")
        session.build_request()
        entry = next((e for e in session.last_select if e["engine"] == "hostile"), {})
        pid = (entry.get("decision") or {}).get("pid")
        if pid == os.getpid():
            return (f"engines.<name>.fence.isolation: {isolation} is accepted but not honoured "
                    "yet: the hook ran in the host process")
        if pid is None:
            return f"the probe engine's select_context was not adopted in {isolation} mode: {entry}"
    finally:
        host.close()
    return None


def _cold_replacement(host: ContextHost, decided_by: str) -> bool:
    """Whether the benign ``should_compress`` last timed out, so the host decided: waiting
    for a worker process to start after the hook before killed its worker, or a worker
    process scheduled too late on a loaded machine to answer within the 0.5 s timeout (the
    fence doing its job; the behaviours under test are in select_context and compress)."""
    return decided_by == "host" and any(
        row["hook"] == "should_compress" and "timed out" in (row.get("last_error") or "")
        for row in host.engine_health() if row.get("plugin") == "hostile"
    )


def main(case: str, isolation: str, directory: Path) -> dict[str, Any]:
    directory.mkdir(parents=True, exist_ok=True)
    store = directory / "state.db"
    host = _host(case, isolation, store)
    failed: list[str] = []
    over: list[float] = []
    provenance: list[str] = []
    turns = 1 if case == "gil" else TURNS
    session = host.open_session("hostile", "You are terse.")
    written: list[dict[str, Any]] = []

    def add(message: dict[str, Any]) -> None:
        session.add_message(message)
        written.append(message)

    for n in range(turns):
        add({"role": "user", "content": f"question {n}"})
        t0 = time.monotonic()
        request = session.build_request()
        over.append(time.monotonic() - t0 - TIMEOUT)
        entries = [e for e in session.last_select if e["engine"] == "hostile"]
        provenance += [f"select_context:{e['provenance']}" for e in entries]
        if not entries:
            failed.append(f"turn {n}: no provenance record for select_context")
        if request != sanitize_for_wire(session.window()):
            failed.append(f"turn {n}: the request is not the original window")
        if MARK in json.dumps(request):
            failed.append(f"turn {n}: hostile text reached the request")
        add({"role": "assistant", "content": f"answer {n}"})
        t0 = time.monotonic()
        outcome = session.end_turn()
        over.append(time.monotonic() - t0 - TIMEOUT)
        report = outcome.compression
        if report is None and _cold_replacement(host, outcome.decided_by):
            # the hook before killed its worker; its replacement was still starting when
            # should_compress came (seconds on a loaded CI machine): the fence's timeout, so
            # the host decided instead.  Not the hostile behaviour under test; recorded.
            provenance.append("should_compress:cold_replacement")
        elif report is None:
            failed.append(f"turn {n}: no compression report (the decision was {outcome.decision},"
                          f" decided by {outcome.decided_by})")
        else:
            provenance.append(f"compress:{report.status}/{report.outcome}")
            if report.status == "committed":
                window = host.store.active_messages(session.id)
                if check_invariants(window) or MARK in json.dumps(window):
                    failed.append(f"turn {n}: the committed window is not what was returned")
                returned = getattr(host.plugins.engines["hostile"], "returned", None)
                if returned is not None and [m for m in window if m.get("role") != "system"] \
                        != [m for m in returned if m.get("role") != "system"]:
                    failed.append(f"turn {n}: the committed window changed after return")
                written = [m for m in window if m.get("role") != "system"]
            elif report.status == "rejected" and not report.message:
                failed.append(f"turn {n}: a rejected compression without a message")
        stored = [m for m in host.store.active_messages(session.id) if m.get("role") != "system"]
        if stored != written:
            failed.append(f"turn {n}: the stored window differs from what was written")
        try:
            validate_messages(session.window())
        except Exception as exc:
            failed.append(f"turn {n}: the window no longer validates: {exc}")
    problems = [row for row in host.engine_health() if row.get("problems")]
    host.close()
    return {"case": case, "isolation": isolation, "turns": turns, "failed": failed,
            "worst_over_timeout": round(max(over), 3), "provenance": provenance,
            "problems_rows": len(problems)}


if __name__ == "__main__":
    cases, mode, where = sys.argv[1].split(","), sys.argv[2], Path(sys.argv[3])
    reason = _probe(mode, where / "probe.db") if mode != "thread" else None
    for name in cases:
        began = time.monotonic()
        result = {"case": name, "skip": reason} if reason else main(name, mode, where / name)
        result["seconds"] = round(time.monotonic() - began, 2)
        print(json.dumps(result), flush=True)
    os._exit(0)  # do not wait for hung engine threads (the point of the test is the turns)
