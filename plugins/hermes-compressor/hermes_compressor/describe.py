"""Informative one-line descriptions of tool results (R-6.1).

A pruned output must still tell the model *what happened*, not just that something was there:
``[terminal] ran `npm test` -> exit 0, 47 lines output`` beats ``[output removed]``, because
the model can decide from it whether to re-run the command.  One describer per tool kind
(terminal/bash, read/write/edit file, search, web, browser) and a generic ``[name] k=v`` one.
Every line passes through the redactor: arguments may carry credentials.  Arguments and the
excerpts quoted from outputs are redacted *before* they are flattened to one line and clipped:
``encryption_key: X`` is a YAML line only while it starts a line, and a clipped token may lose
the part that makes it recognisable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hermes_host.redact import redact, redact_value

__all__ = ["describe_result", "parse_arguments", "tool_kind"]

_EXIT_RE = re.compile(
    r"(?:exit[ _]code|exit status|returncode>?|return code)\D{0,3}(-?\d{1,3})", re.IGNORECASE
)

_KINDS: dict[str, tuple[str, ...]] = {
    "terminal": ("bash", "terminal", "shell", "execute_bash", "run_command", "exec", "cmd"),
    "read_file": ("read", "read_file", "view", "open", "cat", "notebookread"),
    "write_file": ("write", "write_file", "create", "create_file"),
    "edit_file": ("edit", "multiedit", "edit_file", "str_replace", "insert", "apply_patch"),
    "search": ("grep", "glob", "search", "find_file", "search_dir", "search_file", "ripgrep"),
    "web": ("webfetch", "websearch", "web_search", "web_fetch", "fetch", "http_get"),
}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict (``{}`` when they are not a JSON object)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nested deeper than the parser's recursion limit
        return {}
    return value if isinstance(value, dict) else {}


def tool_kind(name: str, args: dict[str, Any]) -> str:
    """The describer family of a tool by its name (and, for editor tools, its command)."""
    low = name.lower()
    if low.startswith("browser") or low.startswith("playwright"):
        return "browser"
    if low == "str_replace_editor" or low.endswith("_editor"):
        command = str(args.get("command", "")).lower()
        return {"view": "read_file", "create": "write_file"}.get(command, "edit_file")
    for kind, names in _KINDS.items():
        if low in names:
            return kind
    return "generic"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    # redacted before flattening (line structure) and with a margin past the cut
    text = " ".join(redact(text[: 4 * limit + 2048]).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _path(args: dict[str, Any]) -> str:
    for key in ("file_path", "path", "filename", "file", "notebook_path", "dir"):
        if args.get(key):
            return _short(args[key], 100)
    return "a file"


def _lines(content: str) -> int:
    return content.count("\n") + 1 if content else 0


def _terminal(name: str, args: dict[str, Any], content: str) -> str:
    command = args.get("command") or args.get("cmd") or args.get("script") or ""
    match = _EXIT_RE.search(content[-2000:]) or _EXIT_RE.search(content[:500])
    exit_part = f"exit {match.group(1)}, " if match else ""
    return f"[terminal] ran `{_short(command)}` -> {exit_part}{_lines(content)} lines output"


def _read(name: str, args: dict[str, Any], content: str) -> str:
    start = args.get("offset") or args.get("line_number") or args.get("view_range") or 1
    if isinstance(start, list) and start:
        start = start[0]
    return f"[read_file] read {_path(args)} from line {start} ({len(content):,} chars)"


def _write(name: str, args: dict[str, Any], content: str) -> str:
    body = args.get("content") or args.get("file_text") or ""
    size = f" ({len(body):,} chars)" if body else ""
    return f"[write_file] wrote {_path(args)}{size} -> {_short(content, 60) or 'ok'}"


def _edit(name: str, args: dict[str, Any], content: str) -> str:
    old = args.get("old_string") or args.get("old_str") or args.get("search") or ""
    what = f" replacing `{_short(old, 40)}`" if old else ""
    return f"[edit_file] edited {_path(args)}{what} -> {_short(content, 60) or 'ok'}"


def _search(name: str, args: dict[str, Any], content: str) -> str:
    pattern = args.get("pattern") or args.get("query") or args.get("file_name") or ""
    where = args.get("path") or args.get("dir") or ""
    where_part = f" in {_short(where, 60)}" if where else ""
    hits = len([line for line in content.splitlines() if line.strip()])
    return f"[search] {name} `{_short(pattern, 60)}`{where_part} -> {hits} result lines"


def _web(name: str, args: dict[str, Any], content: str) -> str:
    target = args.get("url") or args.get("query") or ""
    return f"[web] {name} {_short(target, 100)} -> {len(content):,} chars"


def _browser(name: str, args: dict[str, Any], content: str) -> str:
    detail = " ".join(f"{k}={_short(v, 40)}" for k, v in list(args.items())[:3])
    title = re.search(r"(?:title|url)[\"']?\s*[:=]\s*[\"']?([^\n\"']{1,80})", content, re.I)
    page = f" page {title.group(1).strip()!r}," if title else ""
    return f"[browser] {name} {detail} ->{page} {len(content):,} chars".replace("  ", " ")


def _generic(name: str, args: dict[str, Any], content: str) -> str:
    detail = " ".join(f"{k}={_short(v, 40)}" for k, v in list(args.items())[:4])
    sep = " " if detail else ""
    return f"[{name}]{sep}{detail} -> {len(content):,} chars, {_lines(content)} lines"


_DESCRIBERS: dict[str, Callable[[str, dict[str, Any], str], str]] = {
    "terminal": _terminal,
    "read_file": _read,
    "write_file": _write,
    "edit_file": _edit,
    "search": _search,
    "web": _web,
    "browser": _browser,
    "generic": _generic,
}


def describe_result(name: str | None, raw_args: Any, content: str) -> str:
    """One redacted line saying what a tool call did and what came back."""
    tool = name or "tool"
    args = redact_value(parse_arguments(raw_args))
    line = _DESCRIBERS[tool_kind(tool, args)](tool, args, content)
    return redact(line)
