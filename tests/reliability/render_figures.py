"""Turn the figures of a reliability run into the tables of ``docs/reliability.md``.

``python tests/reliability/render_figures.py FIGURES.jsonl [FIGURES2.jsonl …] DOC`` replaces
what lies between ``<!-- figures:start -->`` and ``<!-- figures:end -->`` in ``DOC`` (``nox -s
reliability`` calls it after the full-size run; the lines come from
``tests/reliability_figures.record``).

``python tests/reliability/render_figures.py --section PART FIGURES.jsonl … DOC`` (``PART``:
``concurrency``, ``fuzz`` or ``sigkill``) replaces only that section (its ``### `` heading up
to the next one) inside the figures, from a run of that part alone (the long counting run of
issue 31), and leaves the others as they were measured.
"""

from __future__ import annotations

import json
import sys
import time
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




def sigkill(kills: list[dict[str, Any]]) -> list[str]:
    """The section of the SIGKILL trials: a row per workload, and the totals."""
    return ["### SIGKILL trials", "", _table(
        ["workload", "trials", "acknowledged messages", "lost", "duplicated",
         "compressions", "kills during a compaction"],
        [[r["workload"], r["trials"], r["acked"], r["lost"], r["duplicated"],
          r["compressions"], r["killed_mid_compaction"]] for r in kills]
        + [["**total**", sum(r["trials"] for r in kills),
            sum(r["acked"] or 0 for r in kills), sum(r["lost"] for r in kills),
            sum(r["duplicated"] for r in kills), "", ""]])]


def concurrency(rows: list[dict[str, Any]]) -> list[str]:
    """The section of ``test_rel_concurrency``: a row per store × workers × publish mode,
    then totals per store and overall (issue 31 counts acknowledged messages)."""
    anomalies = ("lost", "duplicated", "split", "refused", "doubled", "errors")

    def total(label: str, group: list[dict[str, Any]]) -> list[Any]:
        return [f"**{label}**", "", "", sum(r["turns"] for r in group),
                f"**{sum(r['messages'] for r in group)}**",
                sum(r["committed"] for r in group), sum(r["deferred"] for r in group), "",
                *[sum(r.get(k) or 0 for r in group) for k in anomalies]]

    def races(r: dict[str, Any]) -> str | None:
        if r.get("followed") is None:
            return None
        return f"{r['followed']} / {r['followed_rotation']} / {r['stale_appends']}"

    table = [[r.get("store", "sqlite"), r["mode"],
              f"{r['processes']} × {r['sessions']} × {r['seconds']:g}", r["turns"],
              r["messages"], r["committed"], r["deferred"], races(r),
              *[r.get(k) for k in anomalies]]
             for r in rows]
    stores = list(dict.fromkeys(r.get("store", "sqlite") for r in rows))
    if len(stores) > 1:
        table += [total(f"{s} total", [r for r in rows if r.get("store", "sqlite") == s])
                  for s in stores]
    table.append(total("total", rows))
    first = time.gmtime(min(r["at"] for r in rows))
    when = f"{first.tm_mday} {time.strftime('%B %Y', first)}"
    sizes = ", ".join(sorted({str(r["size"]) for r in rows}))
    return ["### Processes sharing sessions", "",
            f"Measured on {when} at size `{sizes}` (seconds per cell in the third column). "
            "*lost*: an acknowledged message not stored, or gone from the window with no "
            "summary naming it; *duplicated*: stored more than once, or stored but never "
            "acknowledged; *split pairs*: a tool call and its result kept, moved or archived "
            "apart; *refused*: a `StaleSessionError` from `add_message`; *errors*: any other "
            "exception that reached a caller. *Races* shows that they ran: how often a "
            "process took its window from the store because another one wrote / of those, "
            "to a newer session (a rotation) / appends the store refused because a rotation "
            "had just committed, which `add_message` followed.", "", _table(
                ["store", "publish mode", "workers × sessions × seconds", "turns",
                 "acknowledged messages", "compactions", "deferred", "races", "lost",
                 "duplicated", "split pairs", "refused", "double compactions", "errors"],
                table)]


def fuzz(rows: list[dict[str, Any]]) -> list[str]:
    """The section of the fuzz targets: examples, crashes and outcomes per target."""
    return ["### Fuzzing", "", _table(
        ["target", "examples", "crashes", "outcomes"],
        [[r["target"], r["examples"], r["crashes"],
          ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))] for r in rows])]


SECTIONS = {"concurrency": ("### Processes sharing sessions", concurrency),
            "fuzz": ("### Fuzzing", fuzz),
            "sigkill": ("### SIGKILL trials", sigkill)}
"""The sections ``--section`` can replace on their own: part → (heading, renderer)."""


def replace_section(block: str, heading: str, text: str) -> str:
    """``block`` (the figures) with the section under ``heading`` replaced by ``text``
    (appended when it has none)."""
    if heading not in block:
        return block.rstrip("\n") + "\n\n" + text + "\n"
    before, rest = block.split(heading, 1)
    cut = rest.find("\n### ")
    after = "" if cut < 0 else rest[cut:]
    return before + text + ("\n" + after if after else "\n")


def render(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by[row["part"]].append(row)
    sizes = sorted({r["size"] for r in rows}) or ["none"]
    out = [f"Measured in one run at size `{', '.join(sizes)}` on the shared 2-core machine."]

    out += ["", *sigkill(by["sigkill"])]
    if by["disk_full"]:
        out += ["", "### Disk full during publish", "", _table(
            ["how", "publish mode", "lost", "the error the caller gets"],
            [[r["how"], r["mode"], r["lost"], r["error"]] for r in by["disk_full"]])]
    if by["concurrency"]:
        out += ["", *concurrency(by["concurrency"])]
    if by["fuzz"]:
        out += ["", *fuzz(by["fuzz"])]
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
    section = None
    if argv[:1] == ["--section"]:
        section, argv = argv[1], argv[2:]
        if section not in SECTIONS:
            raise SystemExit(f"--section {section}: expected one of {', '.join(SECTIONS)}")
    *sources, doc_path = argv
    rows = [json.loads(line) for src in sources if Path(src).exists()
            for line in Path(src).read_text(encoding="utf-8").splitlines() if line.strip()]
    doc = Path(doc_path)
    text = doc.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    block, after = rest.split(END, 1)
    if section is None:
        block = render(rows)
    else:
        mine = [r for r in rows if r["part"] == section]
        if not mine:
            raise SystemExit(f"no {section} figures in {', '.join(sources)}")
        heading, renderer = SECTIONS[section]
        block = replace_section(block.strip("\n"), heading,
                                "\n".join(renderer(mine))).rstrip("\n")
    doc.write_text(f"{before}{START}\n{block}\n{END}{after}", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
