"""Turn the figures of a reliability run into the tables of ``docs/reliability.md``.

``python tests/reliability/render_figures.py FIGURES.jsonl [FIGURES2.jsonl …] DOC`` replaces
what lies between ``<!-- figures:start -->`` and ``<!-- figures:end -->`` in ``DOC`` (``nox -s
reliability`` calls it after the full-size run; the lines come from
``tests/reliability_figures.record``).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def _table(head: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return "–" if v is None else str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by[row["part"]].append(row)
    sizes = sorted({r["size"] for r in rows}) or ["none"]
    out = [f"Measured in one run at size `{', '.join(sizes)}` on the shared 2-core machine."]

    kills = by["sigkill"]
    out += ["", "### SIGKILL trials", "", _table(
        ["workload", "trials", "acknowledged messages", "lost", "duplicated",
         "compressions", "kills during a compaction"],
        [[r["workload"], r["trials"], r["acked"], r["lost"], r["duplicated"],
          r["compressions"], r["killed_mid_compaction"]] for r in kills]
        + [["**total**", sum(r["trials"] for r in kills),
            sum(r["acked"] or 0 for r in kills), sum(r["lost"] for r in kills),
            sum(r["duplicated"] for r in kills), "", ""]])]
    if by["disk_full"]:
        out += ["", "### Disk full during publish", "", _table(
            ["how", "publish mode", "lost", "the error the caller gets"],
            [[r["how"], r["mode"], r["lost"], r["error"]] for r in by["disk_full"]])]
    if by["concurrency"]:
        out += ["", "### Processes sharing sessions", "", _table(
            ["publish mode", "processes × sessions × seconds", "turns", "messages",
             "compactions", "deferred", "double compactions", "lost", "errors to a caller"],
            [[r["mode"], f"{r['processes']} × {r['sessions']} × {r['seconds']}", r["turns"],
              r["messages"], r["committed"], r["deferred"], r["doubled"], r["lost"],
              r["errors"]] for r in by["concurrency"]])]
    if by["fuzz"]:
        out += ["", "### Fuzzing", "", _table(
            ["target", "examples", "crashes", "outcomes"],
            [[r["target"], r["examples"], r["crashes"],
              ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))]
             for r in by["fuzz"]])]
    if by["hostile"]:
        cells = {(r["case"], r["isolation"]): r for r in by["hostile"]}
        cases = list(dict.fromkeys(r["case"] for r in by["hostile"]))

        def show(r: dict[str, Any] | None) -> str:
            if r is None:
                return "skipped (not available yet)"
            if r.get("died") is not None:
                verdict = f"host process died (exit {r['died']})"
            else:
                verdict = f"{r['worst_over_timeout']:+.3f} s"
                if r["failed"]:
                    verdict += f", {r['failed']} failed checks"
            return verdict + (" — known failure (xfail)" if r.get("known") else "")

        out += ["", "### Hostile engines: worst step latency over its timeout", "", _table(
            ["case", "thread isolation", "process isolation"],
            [[c, show(cells.get((c, "thread"))), show(cells.get((c, "process")))]
             for c in cases])]
        for mode in ("thread", "process"):
            ok = [r["worst_over_timeout"] for r in by["hostile"] if r["isolation"] == mode
                  and not r.get("known") and r.get("died") is None]
            if ok:
                out.append(f"\nWorst over the timeout, {mode} isolation, cells expected to "
                           f"hold: **{max(ok):+.3f} s**.")
    if by["secrets"]:
        out += ["", "### Secrets end to end", "", _table(
            ["surface", "documented forms", "cases (forms + generated)", "distinct secrets",
             "leaks"],
            [[r["surface"], r["forms"], r["cases"], r["secrets"], r["leaks"]]
             for r in by["secrets"]])]
    if by["summariser"]:
        out += ["", "### Summariser fault sequences", "", _table(
            ["provider", "sequence", "summariser calls", "turns", "turns blocked by a guard",
             "retries during a cooldown"],
            [[r["provider"], r["sequence"], r["summariser_calls"], r["turns"],
              r["blocked_turns"], r["retried_in_cooldown"]] for r in by["summariser"]])]
    return "\n".join(out)


def main(argv: list[str]) -> None:
    *sources, doc_path = argv
    rows = [json.loads(line) for src in sources if Path(src).exists()
            for line in Path(src).read_text(encoding="utf-8").splitlines() if line.strip()]
    doc = Path(doc_path)
    text = doc.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    doc.write_text(f"{before}{START}\n{render(rows)}\n{END}{after}", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
