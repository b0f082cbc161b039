"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is a record.  The conversation lives in ``type: user`` and ``type: assistant``
records whose ``message`` is an Anthropic Messages API message: ``content`` is a string or a
list of ``text`` / ``tool_use`` / ``tool_result`` / ``thinking`` / ``image`` blocks.

* ``tool_result`` blocks (inside user records) become OpenAI ``tool`` messages; a user
  record's text follows its results, as the model saw it.
* One assistant response is often written as several records (one per content block) that
  share ``message.id``; they are joined into one assistant message.
* Skipped and counted: ``isSidechain`` records (sub-agent conversations), ``isMeta`` records
  (caveats the CLI injects), ``summary`` / ``system`` / ``file-history-snapshot`` and other
  non-conversation records, ``thinking`` blocks, and images (replaced by ``[image]``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from hermes_host.importers.base import (
    ImportResult,
    Record,
    TranscriptBuilder,
    TranscriptImportError,
    iter_json_records,
    read_text,
)

__all__ = ["FORMAT", "import_claude_code"]

FORMAT = "claude-code"


def _block_text(block: Any) -> str:
    """Text of a tool_result's content (string, or a list of text/image blocks)."""
    if isinstance(block, str):
        return block
    if isinstance(block, list):
        parts = []
        for item in block:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text") or ""))
            elif isinstance(item, dict) and item.get("type") == "image":
                parts.append("[image]")
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return "" if block is None else str(block)


def _message(record: Record, path: Path) -> dict[str, Any]:
    message = record.value.get("message")
    if not isinstance(message, dict):
        raise TranscriptImportError(
            path, record.line,
            f"a {record.value.get('type')} record needs a 'message' object",
        )
    return message


def _user(builder: TranscriptBuilder, content: Any, skipped: Counter[str]) -> None:
    if isinstance(content, str):
        builder.user(content)
        return
    if not isinstance(content, list):
        skipped["user record without content"] += 1
        return
    texts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            text = _block_text(block.get("content"))
            if block.get("is_error"):
                text = f"[error] {text}"
            builder.tool_result(str(block.get("tool_use_id") or ""), text)
        elif kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image":
            texts.append("[image]")
            skipped["image (replaced by [image])"] += 1
        else:
            skipped[f"user block {kind}"] += 1
    builder.user("\n".join(t for t in texts if t))


def _assistant(
    builder: TranscriptBuilder, message: dict[str, Any], skipped: Counter[str]
) -> None:
    response_id = message.get("id") if isinstance(message.get("id"), str) else None
    content = message.get("content")
    if isinstance(content, str):
        builder.assistant(content, response_id)
        return
    if not isinstance(content, list):
        skipped["assistant record without content"] += 1
        return
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            builder.assistant(str(block.get("text") or ""), response_id)
        elif kind in ("tool_use", "server_tool_use"):
            builder.tool_call(
                str(block.get("id") or ""), str(block.get("name") or "tool"),
                block.get("input"), response_id,
            )
        else:
            skipped[f"assistant block {kind}"] += 1


def import_claude_code(path: Path) -> ImportResult:
    """Convert a Claude Code session log; see the module docstring."""
    skipped: Counter[str] = Counter()
    builder = TranscriptBuilder(skipped)
    records = 0
    for record in iter_json_records(path, read_text(path)):
        records += 1
        value = record.value
        kind = value.get("type")
        if kind not in ("user", "assistant"):
            skipped[str(kind or "record without type")] += 1
            continue
        if value.get("isSidechain"):
            skipped["sidechain"] += 1
            continue
        if value.get("isMeta"):
            skipped["meta"] += 1
            continue
        message = _message(record, path)
        if kind == "user":
            _user(builder, message.get("content"), skipped)
        else:
            _assistant(builder, message, skipped)
    return ImportResult(
        source=path, format=FORMAT, messages=builder.finish(path), records=records,
        skipped=skipped,
    )
