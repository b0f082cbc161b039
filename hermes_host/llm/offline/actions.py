"""Completed Actions (R-7.2): one ``ACTION target — outcome`` line per tool call, read from the
call's arguments and its result (exit codes, exact error lines, sizes)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hermes_host.messages import one_line

_EXIT_RES = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r"(?i)\bexit(?:ed)?(?: with)?(?: status| code)?[:= ]\s*(-?\d+)\b"),
    re.compile(r"(?i)\breturn ?code[:= ]\s*(-?\d+)\b"),
    re.compile(r"(?i)\[process exited with code (-?\d+)\]"),
)
_ERROR_LINE_RE = re.compile(
    r"\s*(?:(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Failure)\b|(?:error|fatal|ERROR|FATAL)"
    r"(?:\[\w+\])?:|Error:|FAILED\b|E {2,}\w|\*\* \(\w|panic:|Segmentation fault)"
)
_ERROR_SUBSTRINGS = ("command not found", "No such file or directory")
_ANSI_RE = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-_])")

_COMMAND_KEYS = ("command", "cmd", "script", "bash_command", "code", "input")
_PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file",
              "absolute_path", "relative_path")
_EDITOR_SUBCOMMANDS = {"view": "READ", "create": "CREATED", "str_replace": "EDITED",
                       "insert": "EDITED", "undo_edit": "REVERTED", "write": "WROTE"}

# caps: keep the extractive pass linear and the output readable
_MAX_TARGET = 140
_MAX_OUTCOME = 160
_SCAN_HEAD = 3000
_SCAN_TAIL = 3000


def _scan_window(text: str) -> str:
    """Head and tail of a huge text: errors and summaries live at the ends."""
    if len(text) <= _SCAN_HEAD + _SCAN_TAIL:
        return text
    return text[:_SCAN_HEAD] + "\n" + text[-_SCAN_TAIL:]


_OMITTED_RE = re.compile(
    r"\n\[… (\d[\d,]*) more lines \((\d[\d,]*) chars\) of this output not shown"
    r"(?: …\]|; the definitions among them:\n.*?\n…\])\n",
    re.DOTALL,
)
_OUTLINE_LINES = 40
_OUTLINE_SCAN = 120_000


def bounded_output(text: str) -> str:
    """A tool output as the offline summariser needs it: whole when short, else its two ends
    (what :func:`_scan_window` reads) around one block saying how much is left out — with
    the definition lines among what is left out (a long file's outline: what an agent comes
    back to it for) — so the sizes an action reports stay true (:func:`output_size`)."""
    if len(text) <= _SCAN_HEAD + _SCAN_TAIL + 200:
        return text
    head, tail = text[:_SCAN_HEAD], text[-_SCAN_TAIL:]
    middle = text[_SCAN_HEAD:-_SCAN_TAIL]
    said = (f"\n[… {middle.count(chr(10)):,} more lines ({len(middle):,} chars) of this "
            "output not shown")
    outline = _outline(middle[:_OUTLINE_SCAN])
    if outline:
        block = f"{said}; the definitions among them:\n" + "\n".join(outline) + "\n…]\n"
    else:
        block = f"{said} …]\n"
    return head + block + tail


def _outline(text: str) -> list[str]:
    lines: list[str] = []
    for m in _DEFINES_RE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        stop = text.find("\n", m.end())
        line = one_line(text[start:stop if stop >= 0 else len(text)], 160)
        if line and line not in ("…]", "…") and (not lines or lines[-1] != line):
            lines.append(line)
        if len(lines) >= _OUTLINE_LINES:
            break
    return lines


def output_size(text: str) -> tuple[int, int]:
    """(lines, characters) of a tool output, counting what :func:`bounded_output` left out."""
    lines = text.count("\n") + 1
    chars = len(text)
    for m in _OMITTED_RE.finditer(text):
        block = m.group(0)
        lines += int(m.group(1).replace(",", "")) - block.count("\n")
        chars += int(m.group(2).replace(",", "")) - len(block)
    return lines, chars


def _parse_args(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return str(raw) if raw is not None else ""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return raw
    return value if isinstance(value, dict) else raw


def _exit_code(text: str) -> int | None:
    for pattern in _EXIT_RES:
        m = pattern.search(text)
        if m:
            try:
                return int(m.group(1))
            except ValueError:
                continue
    return None


def _error_line(text: str) -> str | None:
    """The most telling error line of a tool output (a traceback's last line wins)."""
    window = _scan_window(text)
    lines = []
    for line in window.splitlines():
        if _ERROR_LINE_RE.match(line) or any(s in line for s in _ERROR_SUBSTRINGS):
            line = line.strip()
            if line and not line.lower().startswith(("error: 0", "errors: 0")):
                lines.append(line)
    if not lines:
        return None
    if "Traceback (most recent call last)" in window:
        return one_line(lines[-1], _MAX_OUTCOME)
    return one_line(lines[0], _MAX_OUTCOME)


@dataclass(slots=True)  # one per action of the middle: no __dict__ each
class _Action:
    verb: str
    target: str
    tool: str
    outcome: str
    ok: bool
    key: str
    error: str | None = None
    text: str = ""

    def render(self, n: int, today: str | None) -> str:
        line = f"{n}. {self.verb} {self.target} — {self.outcome} [tool: {self.tool}]"
        return line + (f" (done before {today})" if today else "")



def _command_key(command: str) -> str:
    """``cd repo && mix test --seed 0`` and ``mix test`` are the same step for Blocked."""
    cmd = re.sub(r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*)+", "", command)
    cmd = re.sub(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)+", "", cmd)
    return " ".join(cmd.split()[:2])


def _describe_call(name: str, args: dict[str, Any] | str) -> tuple[str, str, str]:
    """(VERB, target, key) for one tool call."""
    lname = name.lower()
    if isinstance(args, str):
        target = f"`{one_line(args, _MAX_TARGET)}`" if args.strip() else "(no arguments)"
        verb = "RAN" if any(w in lname for w in ("bash", "shell", "terminal", "exec")) else \
            name.upper()
        return verb, target, args.strip()[:200]
    path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
    command = next((str(args[k]) for k in _COMMAND_KEYS if isinstance(args.get(k), str)), None)
    if command is not None and path is not None and command in _EDITOR_SUBCOMMANDS:
        return _EDITOR_SUBCOMMANDS[command], f"`{path}`", path
    if command is not None and not (path and "editor" in lname):
        first = command.strip().splitlines()[0] if command.strip() else command
        more = " …" if command.strip().count("\n") else ""
        return "RAN", f"`{one_line(first, _MAX_TARGET)}`{more}", _command_key(first)
    for key in ("query", "pattern", "q", "search", "regex"):
        if isinstance(args.get(key), str):
            where = args.get("path") or args.get("glob") or ""
            target = f"`{one_line(args[key], 80)}`" + (f" in `{where}`" if where else "")
            return "SEARCHED", target, f"{key}:{args[key]}"
    if path is not None:
        if any(w in lname for w in ("read", "view", "cat", "open", "get")):
            verb = "READ"
        elif any(w in lname for w in ("write", "create", "save")):
            verb = "WROTE"
        elif any(w in lname for w in ("edit", "replace", "patch", "update", "apply")):
            verb = "EDITED"
        elif any(w in lname for w in ("delete", "remove")):
            verb = "DELETED"
        else:
            verb = name.upper()
        return verb, f"`{path}`", path
    for key in ("url", "uri"):
        if isinstance(args.get(key), str):
            return "FETCHED" if "fetch" in lname else "OPENED", args[key], args[key]
    shown = ", ".join(
        f"{k}={one_line(json.dumps(v, ensure_ascii=False, default=str), 40)}"
        for k, v in list(args.items())[:4]
    )
    return name.upper(), f"({one_line(shown, _MAX_TARGET)})" if shown else "()", \
        f"{name}:{shown}"


def _describe_result(verb: str, result: str | None) -> tuple[str, bool, str | None]:
    """(outcome text, ok, exact error line) from a tool result."""
    if result is None:
        return "no result recorded", False, None
    text = _ANSI_RE.sub("", result) if "\x1b" in result else result
    stripped = text.strip()
    n_lines, n_chars = output_size(stripped) if stripped else (0, 0)
    code = _exit_code(text)
    if n_lines == 1 and _PRUNED_LINE_RE.match(stripped):
        # sizes and exit codes of the original, not of its one-line stand-in
        described = stripped.split("] ", 1)[1]
        if " -> " in described:
            described = described.split(" -> ", 1)[1]
        else:
            described = re.sub(r"^read \S+ (?=from line)", "", described)
        return one_line(described, _MAX_OUTCOME), code in (None, 0), None
    error = _error_line(text)
    parts: list[str] = []
    ok = True
    if code is not None:
        parts.append(f"exit {code}")
        ok = code == 0
    if code not in (None, 0) or (code is None and error and n_lines <= 60):
        if error:
            parts.append(f"error: {error}")
        ok = False
    elif code is None and error and n_lines > 60 and verb == "RAN":
        parts.append(f"output mentions: {error}")
    if verb in ("READ", "OPENED", "FETCHED"):
        parts.append(f"{_plural(n_lines, 'line')} ({n_chars:,} chars)")
    elif not stripped:
        parts.append("no output")
    elif verb in _CHANGE_VERBS and ok:
        # "The file … has been updated successfully." says only that it worked
        parts.append("applied")
    elif n_lines == 1 and len(stripped) <= _MAX_OUTCOME - 20 and not error:
        parts.append(f"output `{stripped}`")
    elif n_lines == 1:
        parts.append(f"1-line output ({len(stripped):,} chars)")
    else:
        parts.append(f"{_plural(n_lines, 'line')} output")
    return ", ".join(parts), ok, error



_CHANGE_VERBS = frozenset({"EDITED", "WROTE", "CREATED"})
_PRUNED_LINE_RE = re.compile(r"^\[[\w .:-]{1,40}\] \S.{8,400}$")
"""A one-line stand-in the prune step left for an old tool output (``[read_file] read a.py
from line 1 (3,400 chars)``): it already describes the original, so it is the outcome."""
_STAND_IN_MAX = 4096  # a stand-in is at most ~450 characters, with room for white space


def is_stand_in(result: str) -> bool:
    """True for a prune step's one-line stand-in (:data:`_PRUNED_LINE_RE`).  A long output
    cannot be one, so it is never copied to be stripped (reads of whole files are common)."""
    return len(result) <= _STAND_IN_MAX and _PRUNED_LINE_RE.match(result.strip()) is not None


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


_NAME_RE = re.compile(r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"
                      r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)\b")
_DEFINES_RE = re.compile(
    # an optional line-number gutter first: ``cat -n`` (``  12\t``), a read tool's (``12→``)
    r"(?m)^\s*(?:\d+(?:→|\t|: |\| )\s*)?(?:export\s+|pub\s+|async\s+|static\s+)*"
    r"(?:def|defp|defmodule|defmacro|class|"
    r"function|fn|func|interface|struct|trait|enum|type|module|impl)\s+([A-Za-z_][\w.]*)"
)
_NEW_TEXT_KEYS = ("new_string", "new_str", "content", "file_text", "new_content", "text",
                  "patch", "diff")
_OLD_TEXT_KEYS = ("old_string", "old_str")
_MAX_NAMES = 6


def _names(text: str, limit: int = _MAX_NAMES) -> list[str]:
    return list(dict.fromkeys(_NAME_RE.findall(text)))[:limit]


def file_names(text: str) -> set[str]:
    """The names a file's text holds (identifiers and the names it defines, dotted module
    names included): what a whole-file write is compared with (:func:`change_note`)."""
    window = text[:_KNOWN_SCAN]
    return set(_NAME_RE.findall(window)) | set(_DEFINES_RE.findall(window))


_KNOWN_SCAN = 60_000


def change_note(verb: str, args: dict[str, Any] | str, known: set[str] | None = None) -> str:
    """What an edit changed, in names (issue 14: files touched *with what changed*): the
    identifiers of the new text, those the old text lacked first (``new `a`, `b`; around
    `c```) — an edit's tool result ("The file … has been updated") says nothing of it.
    A write has no old text: ``known`` (the names the session saw in the file before, by
    :func:`file_names` of an earlier read or write) stands for it, so rewriting a file
    the session had read "adds" what is new in it, not the definitions it already had."""
    if not isinstance(args, dict) or verb not in ("EDITED", "WROTE", "CREATED"):
        return ""
    new = next((args[k] for k in _NEW_TEXT_KEYS if isinstance(args.get(k), str)), "")
    if not new:
        return ""
    old = next((args[k] for k in _OLD_TEXT_KEYS if isinstance(args.get(k), str)), "")
    defined = _DEFINES_RE.findall(new[:20_000])
    names = _names(new[:20_000], 40)
    old_names = set(_NAME_RE.findall(old[:20_000]))
    if not old and known:
        old_names = known
    added = [n for n in dict.fromkeys([*defined, *names]) if n not in old_names]
    kept = [n for n in names if n in old_names and n not in added]
    parts = []
    if added:
        parts.append("adds " + ", ".join(f"`{n}`" for n in added[:_MAX_NAMES]))
    if kept:
        parts.append("around " + ", ".join(f"`{n}`" for n in kept[:3]))
    return "; ".join(parts)


def read_note(verb: str, result: str | None) -> str:
    """The names a read file defines (``defines `load`, `Session```): what an agent comes
    back to a file for, where a line count alone says nothing."""
    if verb != "READ" or not result or is_stand_in(result):
        return ""
    defined = list(dict.fromkeys(_DEFINES_RE.findall(result[:60_000])))[:_MAX_NAMES + 2]
    return "defines " + ", ".join(f"`{n}`" for n in defined) if defined else ""


_NOTED_LINE_RE = re.compile(r"`([^`\n]+/[^`\n]+|[^`\n/]+\.\w{1,8})` [^\n]*")
_BACKTICKED_RE = re.compile(r"`([^`\n]+)`")


def noted_lines(previous: str | None) -> list[tuple[str, set[str]]]:
    """(path, the names its line gives) for each line of ``previous`` that names a file
    with something about it (``READ `a.py` — …; defines `load```)."""
    out: list[tuple[str, set[str]]] = []
    for m in _NOTED_LINE_RE.finditer(previous or ""):
        names = set(_BACKTICKED_RE.findall(m.group(0)[len(m.group(1)) + 2:]))
        if names:
            out.append((m.group(1), names))
    return out


def names_noted_for(path: str, lines: list[tuple[str, set[str]]]) -> set[str]:
    """The names :func:`noted_lines` of the previous summary give for ``path`` (what an
    earlier round read or wrote in it); the summary spells paths below its project root."""
    names: set[str] = set()
    for shown, line_names in lines:
        if path == shown or path.endswith("/" + shown):
            names |= line_names
    return names
