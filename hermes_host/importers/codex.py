"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Current rollouts wrap every item: ``{"type": "response_item", "payload": {...}}``, next to
``session_meta``, ``turn_context``, ``event_msg`` and ``compacted`` records.  Older rollouts
put the item itself on the line (``{"type": "message", ...}``), after a first line with the
session's ``id`` / ``instructions``, with ``{"record_type": "state"}`` lines in between.

Items (OpenAI Responses API shapes):

* ``message`` with ``role`` user / assistant / developer / system and ``content`` parts
  (``input_text``, ``output_text``, ``input_image``) → a message; developer and system text
  before the conversation becomes the system prompt (with ``session_meta.instructions``);
* ``function_call`` {name, arguments, call_id} and ``custom_tool_call`` {name, input,
  call_id} and ``local_shell_call`` {call_id, action} → an assistant tool call;
* ``function_call_output`` / ``custom_tool_call_output`` {call_id, output} → a ``tool``
  message (a JSON ``{"output": ..., "metadata": {"exit_code": N}}`` output is unwrapped);
* skipped and counted: ``reasoning``, ``web_search_call``, ``event_msg`` (UI duplicates of
  the items), ``turn_context``, ``compacted`` and anything unknown.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from hermes_host.importers.base import (
    ImportResult,
    TranscriptBuilder,
    iter_json_records,
    read_text,
)
from hermes_host.transcripts import load_json

__all__ = ["FORMAT", "import_codex"]

FORMAT = "codex"

_WRAPPERS_SKIPPED = frozenset({"event_msg", "turn_context", "compacted"})


def _parts_text(content: Any, skipped: Counter[str]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text") or ""))
        elif kind == "input_image":
            texts.append("[image]")
            skipped["image (replaced by [image])"] += 1
        else:
            skipped[f"content part {kind}"] += 1
    return "\n".join(t for t in texts if t)


def _output_text(output: Any) -> str:
    """``function_call_output.output``: a string, often JSON ``{"output", "metadata"}``."""
    if isinstance(output, dict):
        value: Any = output
    elif isinstance(output, str):
        try:
            value = load_json(output)  # bounded depth: a hostile output stays plain text
        except ValueError:
            return output
    else:
        return "" if output is None else json.dumps(output, ensure_ascii=False)
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        text: str = value["output"]
        meta = value.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        if isinstance(code, int) and code != 0:
            text = f"[exit code {code}]\n{text}"
        return text
    return output if isinstance(output, str) else json.dumps(value, ensure_ascii=False)


def _item(builder: TranscriptBuilder, item: dict[str, Any], skipped: Counter[str]) -> None:
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):
        skipped[f"item whose type is a {type(kind).__name__}, not a string"] += 1
        return
    if kind == "message":
        role = item.get("role")
        text = _parts_text(item.get("content"), skipped)
        if role == "user":
            builder.user(text)
        elif role == "assistant":
            builder.assistant(text)
        elif role in ("developer", "system"):
            builder.system(text)
        else:
            skipped[f"message role {role}"] += 1
    elif kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        builder.tool_call(
            str(item.get("call_id") or item.get("id") or ""),
            str(item.get("name") or "tool"),
            arguments,
        )
    elif kind == "local_shell_call":
        builder.tool_call(
            str(item.get("call_id") or item.get("id") or ""), "local_shell", item.get("action")
        )
    elif kind in ("function_call_output", "custom_tool_call_output"):
        builder.tool_result(str(item.get("call_id") or ""), _output_text(item.get("output")))
    else:
        skipped[str(kind or "item without type")] += 1


def import_codex(path: Path) -> ImportResult:
    """Convert a Codex CLI rollout; see the module docstring."""
    skipped: Counter[str] = Counter()
    builder = TranscriptBuilder(skipped)
    records = 0
    for record in iter_json_records(path, read_text(path)):
        records += 1
        value = record.value
        kind = value.get("type")
        payload = value.get("payload")
        if kind is not None and not isinstance(kind, str):  # e.g. ["response_item"]
            skipped[f"record whose type is a {type(kind).__name__}, not a string"] += 1
            continue
        if kind == "response_item" and isinstance(payload, dict):
            _item(builder, payload, skipped)
        elif kind == "session_meta":
            meta = payload if isinstance(payload, dict) else {}
            instructions = meta.get("instructions")
            if isinstance(instructions, str):
                builder.system(instructions)
        elif kind in _WRAPPERS_SKIPPED:
            skipped[str(kind)] += 1
        elif kind is None and value.get("record_type") == "state":
            skipped["state"] += 1
        elif kind is None and "id" in value and "timestamp" in value:
            # The first line of an older rollout: the session's own metadata.
            instructions = value.get("instructions")
            if isinstance(instructions, str):
                builder.system(instructions)
        elif kind is not None and payload is None:
            _item(builder, value, skipped)  # an older rollout: the item on the line itself
        else:
            skipped[str(kind or "record without type")] += 1
    return ImportResult(
        source=path, format=FORMAT, messages=builder.finish(path), records=records,
        skipped=skipped,
    )
