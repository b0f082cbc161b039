"""The ``hint:`` lines of ``hermes-host eval``: why a run's recall is ``—`` (nothing to
measure), and what to do about it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hermes_host.evaluation.runs import EvalRun


def recall_hints(runs: Sequence[EvalRun], run_windows: Sequence[tuple[int, int]],
                 auto: Mapping[str, int]) -> list[str]:
    """One line per transcript whose recall is ``—`` for want of a compression (per
    transcript and engine set when it compressed but nothing was needed later).

    ``run_windows`` holds each run's (window, transcript tokens); ``auto`` the window the
    ``auto`` rule gives each transcript, by name, suggested when it is smaller."""
    hints: list[str] = []
    seen: set[tuple[str, str]] = set()
    for run, (window, tokens) in zip(runs, run_windows, strict=True):
        if run.recall is not None:
            continue
        if run.compressions == 0:
            key = (run.transcript, "")
            what = (f"{run.transcript}: no compression at a {window:,}-token window (the "
                    f"transcript holds {tokens:,} tokens), so its recall is — (nothing to "
                    "measure)")
            suggested = auto.get(run.transcript, window)
            if suggested < window:
                what += f"; try --context-length {suggested} or --context-length auto"
            else:
                what += ("; too few messages outside the protected head and tail, or too "
                         "few tokens, to compress at this window: a smaller --context-length "
                         "may, at the price of requests over budget")
        else:
            key = (run.transcript, run.engines)
            what = (f"{run.transcript} [{run.engines}]: {run.compressions} compression(s), but "
                    "no artifact seen before one was used again after it, so recall is — "
                    "(nothing was needed later)")
        if key not in seen:
            seen.add(key)
            hints.append(what)
    return hints
