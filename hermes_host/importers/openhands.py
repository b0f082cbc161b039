"""OpenHands (V0) event streams: a JSON array of events (a trajectory export), JSONL with one
event per line, or an evaluation output whose lines carry the events under ``history`` (the
first instance is converted).

An event is an *action* (``"action": "message" | "run" | "read" | "edit" | ...`` with
``args``) or an *observation* (``"observation": "run" | "read" | ...`` with ``content`` and
``cause``, the id of the action it answers).  ``source`` says who produced it: ``user``,
``agent`` or ``environment``.

* ``system`` action → the system prompt; ``message`` from the user → a user message; from
  the agent → an assistant message; ``finish`` → the agent's final assistant text;
* any other agent action → an assistant tool call named after
  ``tool_call_metadata.function_name`` (else the action), its id from
  ``tool_call_metadata.tool_call_id`` (else ``openhands_<event id>``), its arguments the
  action's ``args`` without bookkeeping, its ``thought`` as the assistant text before it;
  calls of one model response (``tool_call_metadata.model_response.id``) share a message;
* an observation answering a converted action (by ``cause`` or the tool call id) → a
  ``tool`` message; a non-zero exit code is noted on its first line;
* skipped and counted: environment events (``agent_state_changed``, ``recall``, ``null``
  observations, condensation) and observations whose action is unknown.

Agent-SDK (V1) streams (events with a ``kind``) are a different format: refused with a
message saying so.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from hermes_host.importers.base import (
    ImportResult,
    TranscriptBuilder,
    TranscriptImportError,
    iter_json_records,
    read_text,
)

__all__ = ["FORMAT", "import_openhands"]

FORMAT = "openhands"

_SKIPPED_ACTIONS = frozenset({
    "recall", "condensation", "condensation_request", "change_agent_state", "null",
})
_SKIPPED_OBSERVATIONS = frozenset({
    "agent_state_changed", "null", "recall", "condensation", "user_rejected",
})
_BOOKKEEPING_ARGS = frozenset({
    "thought", "confirmation_state", "security_risk", "hidden", "is_confirmed", "blocking",
    "wait_for_response", "image_urls",
})


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _event_key(value: Any) -> str | int | None:
    """An event ``id`` / ``cause`` usable as a key: a string or an integer (a list or an
    object there is malformed, and must not raise ``TypeError: unhashable``)."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _metadata(event: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(tool call id, function name, model response id) from ``tool_call_metadata``."""
    meta = event.get("tool_call_metadata")
    if not isinstance(meta, dict):
        return None, None, None
    response = meta.get("model_response")
    response_id = response.get("id") if isinstance(response, dict) else None
    return (
        _str(meta.get("tool_call_id")) or None,
        _str(meta.get("function_name")) or None,
        _str(response_id) or None,
    )


class _Converter:
    def __init__(self, skipped: Counter[str]) -> None:
        self.skipped = skipped
        self.builder = TranscriptBuilder(skipped)
        self.call_of_event: dict[str | int, str] = {}

    def action(self, event: dict[str, Any]) -> None:
        kind = _str(event.get("action"))
        args = _dict(event.get("args"))
        source = event.get("source")
        text = _str(args.get("content")) or _str(event.get("message"))
        call_id, function, response_id = _metadata(event)
        if kind == "system":
            self.builder.system(text)
        elif kind == "message":
            if source == "user":
                self.builder.user(text)
            else:
                self.builder.assistant(text, response_id)
        elif kind == "finish":
            final = _str(args.get("final_thought")) or _str(event.get("message"))
            self.builder.assistant(final or "(finished)", response_id)
        elif kind in _SKIPPED_ACTIONS or source == "environment":
            self.skipped[f"action {kind}"] += 1
        elif source == "user":
            self.skipped[f"user action {kind}"] += 1
        else:
            call_id = call_id or f"openhands_{event.get('id', len(self.call_of_event))}"
            self.builder.assistant(_str(args.get("thought")), response_id)
            arguments = {
                k: v for k, v in args.items() if k not in _BOOKKEEPING_ARGS and v is not None
            }
            self.builder.tool_call(call_id, function or kind, arguments, response_id)
            key = _event_key(event.get("id"))
            if key is not None:
                self.call_of_event[key] = call_id

    def observation(self, event: dict[str, Any]) -> None:
        kind = _str(event.get("observation"))
        if kind in _SKIPPED_OBSERVATIONS:
            self.skipped[f"observation {kind}"] += 1
            return
        cause = _event_key(event.get("cause"))
        call_id = self.call_of_event.get(cause) if cause is not None else None
        if call_id is None:
            call_id = _metadata(event)[0]
        if call_id is None:
            self.skipped[f"observation {kind} without its action"] += 1
            return
        content = _str(event.get("content")) or _str(event.get("message"))
        code = _dict(_dict(event.get("extras")).get("metadata")).get("exit_code")
        if isinstance(code, int) and code not in (0, -1):
            content = f"[exit code {code}]\n{content}"
        self.builder.tool_result(call_id, content)


def import_openhands(path: Path) -> ImportResult:
    """Convert an OpenHands event list; see the module docstring."""
    skipped: Counter[str] = Counter()
    converter = _Converter(skipped)
    records = 0
    instances = 0
    for record in iter_json_records(path, read_text(path), allow_array=True):
        records += 1
        value = record.value
        if isinstance(value.get("history"), list):
            # An evaluation output line: one instance, its events under "history".
            instances += 1
            if instances > 1:
                skipped["further instance (only the first is converted)"] += 1
                continue
            events = [e for e in value["history"] if isinstance(e, dict)]
        else:
            events = [value]
        for event in events:
            if isinstance(event.get("action"), str):
                converter.action(event)
            elif isinstance(event.get("observation"), str):
                converter.observation(event)
            elif isinstance(event.get("kind"), str):
                skipped[f"Agent-SDK (V1) event {event['kind']}"] += 1
            else:
                skipped["event without action or observation"] += 1
    if any(kind.startswith("Agent-SDK (V1)") for kind in skipped) and not any(
        m.get("role") in ("user", "assistant") for m in converter.builder.messages
    ):
        raise TranscriptImportError(
            path, None, "this is an OpenHands Agent-SDK (V1) event stream (events with a "
            "'kind'); only V0 events (with 'action' / 'observation') are supported"
        )
    return ImportResult(
        source=path, format=FORMAT, messages=converter.builder.finish(path),
        records=records, skipped=skipped,
    )
