"""What ``/status`` shows: the session's window, model, guards, last compression decision,
``select_context`` stamps and engine problems, as plain lines (SPEC R-12.1)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from hermes_host.fence import HookHealth
from hermes_host.host import Session, TurnOutcome
from hermes_host.messages import one_line
from hermes_host.store import Session as StoredSession
from hermes_host.store import StoreError
from hermes_host.store.conversations import find_conversation

__all__ = ["status_lines"]


def status_lines(
    session: Session, row: StoredSession, *, provider: str, last_outcome: TurnOutcome | None
) -> list[str]:
    """The ``/status`` report of ``session``; ``row`` is its stored row (stored counts, usage)
    and ``last_outcome`` what the last turn decided."""
    status = session.status()  # what the session knows; the row adds stored counts
    # what the trigger decides on: the provider's prompt tokens when reported
    # since the window last changed, else the host's count
    used, length = status["prompt_tokens"] or status["window_tokens"], status["context_length"]
    counted = (f"provider-reported; the host counts {status['window_tokens']:,}"
               if status["prompt_tokens"] else "host-counted")
    lines = [
        f"session: {session.id}" + (f" “{session.title}”" if session.title else "")
        + f" (lineage of {len(status['lineage'])})",
        f"model: {status['model']} (provider {provider}, tokenizer "
        f"{status['tokenizer']['encoding'] or 'estimate'})",
        f"context: {used:,} / {length:,} tokens ({used / length:.0%}, {counted}); "
        f"request budget {status['request_budget']:,} (context less the reply's "
        "max_output_tokens)",
    ]
    if status["window_warning"]:
        lines.append(f"⚠ {status['window_warning']}")
    decision = last_outcome.decision if last_outcome else None
    if decision is not None and last_outcome is not None:
        lines.append(
            "last compression decision: "
            + ("compress" if decision.compress else f"no ({decision.reason or 'declined'})")
            + (f", threshold {decision.threshold_tokens:,} tokens"
               if decision.threshold_tokens else "")
            + f" [{last_outcome.decided_by}]"
        )
    if session.last_prompt_tokens:
        lines.append(f"last prompt (provider-reported): {session.last_prompt_tokens:,} "
                     "tokens")
    lines.append(f"messages: {row.active_count} in the window, {row.message_count} stored")
    lines.append(f"compressions: {status['compression_count']}")
    try:  # the whole conversation: a rotation starts a new session row at 0 (issue 29)
        whole = find_conversation(session.host.store, session.conversation_id)
        used_in, used_out, spread = whole.input_tokens, whole.output_tokens, len(whole.sessions)
    except StoreError:
        used_in, used_out, spread = row.input_tokens, row.output_tokens, 1
    lines.append("tokens this conversation (provider-reported"
                 + (f", {spread} sessions" if spread > 1 else "")
                 + f"): in {used_in:,} · out {used_out:,}")
    guards = status["guards"]
    if status["summarizer_cooldown"] is not None and guards["cooldown_until"] is not None:
        held = ("the offline summariser compresses meanwhile"
                if status["blocked"] is None or not status["blocked"].startswith("cooldown")
                else "automatic compression suppressed")
        lines.append(f"cooldown: no LLM summariser call until "
                     f"{_clock(guards['cooldown_until'])}; {held} (/compress overrides)")
    if guards["ineffective_count"] or guards["fallback_streak"]:
        lines.append(f"guards: {guards['ineffective_count']} ineffective, "
                     f"{guards['fallback_streak']} fallback in a row")
    chain = status["engines"]["select_context"]
    if session.last_select:
        lines.append("select_context (last request):")
        lines.extend(f"  {_describe_select(entry)}" for entry in session.last_select)
    else:
        lines.append("select_context: no engine changed the last request"
                     + (f" (configured: {', '.join(chain)})" if chain else ""))
    problems = status["engine_problems"]
    if problems:
        lines.append("engine problems (since the chat started):")
        for problem in problems:
            health = HookHealth(**{k: v for k, v in problem.items() if k != "problems"})
            lines.append(f"  {health.describe()}")
    else:
        lines.append("engine problems: none")
    return lines


def _describe_select(entry: Mapping[str, Any]) -> str:
    """One line for a ``select_context`` stamp: engine, its scalar decision fields, and the
    token effect — the decision dicts engines return can be long."""
    engine = entry.get("engine", "?")
    decision = entry.get("decision")
    if not isinstance(decision, Mapping):
        return f"{engine}: {entry.get('error') or entry.get('provenance')}"
    fields = [
        f"{k}={one_line(str(v), 40)}" for k, v in decision.items()
        if k not in ("engine", "tokens_before", "tokens_after")
        and isinstance(v, str | int | float | bool) and v != ""
    ][:7]
    before, after = decision.get("tokens_before"), decision.get("tokens_after")
    if isinstance(before, int) and isinstance(after, int):
        fields.append(f"tokens {before:,} → {after:,}")
    return f"{engine}: " + (", ".join(fields) or "adopted")


def _clock(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")
