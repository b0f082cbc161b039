"""The offline extractive summariser: the eleven sections of R-7.2 without any LLM.

It reads the *structure* of the middle — tool calls and their results, user requests,
assistant decisions — rather than prose, so it is deterministic (same job → same text), fast
(a 600 KB transcript in well under a second) and available with no key and no network.  It
is what ``provider: auto`` uses without ``ANTHROPIC_API_KEY`` and what the compressor can fall
back to.

What goes where (R-7.2):

* **Historical Task Snapshot** — the first real user request, verbatim (platform echoes,
  ``<system-reminder>`` injections, skill bodies and earlier summaries are not requests); on
  an update round the previous snapshot is kept.
* **Goal** — the latest user request; for sessions with no user turn (cron / agent) the fixed
  line :data:`CRON_GOAL` plus what the assistant set out to do.
* **Constraints & Preferences** — user sentences that state a rule (``must``, ``don't``,
  ``only``, ``never`` …), verbatim; nothing is invented.
* **Completed Actions** — ``N. ACTION target — outcome [tool: name]`` per tool call, with
  commands, paths, exit codes, errors and line counts; numbering continues the previous
  summary's; with ``job.today`` each is a dated past-tense fact.
* **Active State** — working directory, changed files, last test run, background processes.
* **Blocked** — exact error lines whose command/target has not succeeded since.
* **Key Decisions** — assistant sentences that decide something and say why.
* **Resolved Questions** — user questions and the first sentence of the answer; unattended
  sessions get :data:`NO_USER_QUESTIONS`.
* **Relevant Files**, **Critical Context** (an identifier index, memory context, a note when
  credentials were redacted), **Pruned Skills** (``[SKILL_PRUNED: …]`` markers verbatim).

``job.budget_tokens`` (measured with :func:`hermes_host.tokens.count_text`) is respected: each
section gets a share of what the fixed parts leave (a share a section does not need flows to
the others) and keeps its highest-priority items; the oldest actions are condensed into one
line that keeps the numbering.  Items mentioning ``job.focus_topic`` are listed first and are
kept first.  The fixed parts — the snapshot (capped at 30 % of the budget), the goal and the
pruned-skill markers — are always present, so only a budget smaller than they are is exceeded.

Every text is redacted again (input messages, memory context and the final summary): a secret
never reaches the summary even when a caller forgot to redact the job.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_host.llm.base import SUMMARY_SECTIONS, SummaryJob
from hermes_host.messages import (
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    is_summary,
    one_line,
    segments_of,
    text_of,
)
from hermes_host.models import Message
from hermes_host.redact import REDACTED, redact, redact_messages
from hermes_host.tokens import count_text

__all__ = [
    "CRON_GOAL",
    "NO_USER_QUESTIONS",
    "SECTIONS",
    "SKILL_MARKER_RE",
    "OfflineSummarizer",
    "first_user_request",
    "is_user_request",
    "latest_user_request",
    "parse_sections",
    "request_text",
]

SECTIONS = SUMMARY_SECTIONS

CRON_GOAL = "[Historical cron/agent objective inferred only from assistant and tool activity]"
NO_USER_QUESTIONS = "None. No user-authored questions exist."
SYNTHETIC_USER_MARKER = "Continue from the compressed conversation context above."

_NOT_REQUEST_PREFIXES = (
    "<system-reminder>",
    "<local-command-",
    "<command-name>",
    "Caveat: The messages below",
    "Base directory for this skill:",
    "This session is being continued from a previous conversation",
    "[Request interrupted",
    "<task-notification>",
    SYNTHETIC_USER_MARKER,
)
_PLATFORM_NAMES = frozenset({"aider_console"})
_NO_REQUEST_SNAPSHOT = "No user request in this span."

_SLASH_COMMAND_RE = re.compile(r"^/[a-z][\w:-]*(?:[ \t][^\n]{0,80})?$")
"""``/clear``, ``/ex``, ``/model opus``: front-end commands, not requests."""
SKILL_MARKER_RE = re.compile(r"\[SKILL_PRUNED:[^\]\n]*\]")
"""A ``[SKILL_PRUNED: …]`` marker the prune step leaves where a skill body was."""
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION_RE = re.compile(
    r"(?i)\b(?:decid\w*|because|instead|will use|i'll use|we'll use|going to use|chose|choose"
    r"|opt(?:ed)? (?:for|to)|rather than|root cause|the fix is|the issue is|so that|approach)\b"
)
_REASON_RE = re.compile(
    r"(?i)\b(?:because|since|so that|instead|rather than|root cause|the fix is|the issue is"
    r"|to avoid|which (?:means|avoids|keeps)|as it|otherwise)\b"
)
_DECISION_FILLER_RE = re.compile(
    r"(?i)^(?:(?:now |first,? |next,? |then,? )?(?:i'll|i will|we'll|we will|let me|let's)"
    r" (?:use|run|call|try|do|start with|go with)\b|i'm going to use\b)"
)
_CONSTRAINT_RE = re.compile(
    r"(?i)\b(?:must(?:n't| not)?|do not|don't|never|always|only|without|should(?:n't| not)?"
    r"|make sure|ensure|avoid|prefer|no more than|at most|at least|required?)\b"
)
_PATH_RE = re.compile(
    r"(?<![\w/.:-])((?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.[A-Za-z0-9]{1,8}"
    r"|(?:[\w-]+/)*[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|ex|exs|heex|eex|rb|go|rs|c|h|cc|cpp|hpp|java"
    r"|kt|swift|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|sh|bash|sql|html|css|scss"
    r"|csv|lock|xml|pony|lua|php|pl|dockerfile|env|ipynb|proto|graphql|vue|svelte))(?![\w/])"
)
_URL_RE = re.compile(r"\bhttps?://[^\s\"'<>)\]`]+")
_SNAKE_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_ERRCLASS_RE = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Failure)\b")
_HEX_RE = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
_UNIT_RE = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds|minutes|min|h|hours|KB|MB|GB|TB|kB|B|bytes|tokens"
    r"|lines|files|tests|%|px|rpm|req/s)\b"
)
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
_TEST_SUMMARY_RE = re.compile(
    r"(?im)^.*(?:\b\d+ (?:passed|failed|tests?|failures?|errors?)\b|^OK(?: \(.*\))?$"
    r"|^FAILED \(.*\)$|\btests? (?:passed|failed)\b).*$"
)
_TEST_CMD_RE = re.compile(r"(?i)\b(?:pytest|tox|nox|unittest|npm (?:run )?test|yarn test"
                          r"|mix test|cargo test|go test|make test|rspec|jest|vitest|ctest)\b")
_BACKGROUND_RE = re.compile(r"(?i)running in background with id:?\s*(\w+)")
_HEDGE_RE = re.compile(r"(?i)^(?:let me|now let me|let's|i'll now|i will now)\b")
_ANSI_RE = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-_])")
_CURRENT_DIR_RE = re.compile(r"\(Current directory: ([^)\n]+)\)")
_CD_RE = re.compile(r"(?:^|&&|;|\n)\s*cd\s+([^\s;&|]+)")

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


def _sentences(text: str) -> list[str]:
    """Sentences and lines of ``text`` (a period inside ``a.b`` does not end a sentence)."""
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s and s.strip()]


def _scan_window(text: str) -> str:
    """Head and tail of a huge text: errors and summaries live at the ends."""
    if len(text) <= _SCAN_HEAD + _SCAN_TAIL:
        return text
    return text[:_SCAN_HEAD] + "\n" + text[-_SCAN_TAIL:]


def _index_window(text: str) -> str:
    """The part of a tool output worth indexing for identifiers (its two ends)."""
    return text if len(text) <= 3000 else text[:2000] + "\n" + text[-1000:]


def _is_request_text(text: str) -> bool:
    return (bool(text) and not text.startswith(_NOT_REQUEST_PREFIXES)
            and not _SLASH_COMMAND_RE.match(text))


def request_text(message: Message) -> str | None:
    """What a human (or the task giver) wrote in ``message``, verbatim, or ``None`` for a
    platform injection.  A message merged from several user messages
    (:func:`~hermes_host.messages.normalize_alternation`) is read segment by segment, so a
    request glued after a continuation notice or a command echo is still a request."""
    if message.get("role") != "user" or message.get("name") in _PLATFORM_NAMES:
        return None
    if is_summary(message):
        return None
    parts = [t.strip() for t in segments_of(message)]
    kept = [t for t in parts if _is_request_text(t)]
    return "\n\n".join(kept) if kept else None


def is_user_request(message: Message) -> bool:
    """True for a message a human (or the task giver) wrote, not a platform injection."""
    return request_text(message) is not None


def first_user_request(messages: Iterable[Message]) -> str | None:
    """The first real user request, verbatim (``None`` when the session has none)."""
    for message in messages:
        text = request_text(message)
        if text is not None:
            return text
    return None


def latest_user_request(messages: Sequence[Message]) -> str | None:
    """The newest real user request, verbatim (``None`` when the session has none)."""
    for message in reversed(messages):
        text = request_text(message)
        if text is not None:
            return text
    return None


def parse_sections(summary: str) -> dict[str, str]:
    """Split a summary into ``{section name: body}`` by its ``## `` headings."""
    text = summary.strip()
    for prefix in (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
    out: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^#{1,3}\s+(.+?)\s*$", line)
        if m and m.group(1).strip() in SECTIONS:
            if current is not None:
                out[current] = "\n".join(lines).strip()
            current, lines = m.group(1).strip(), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        out[current] = "\n".join(lines).strip()
    return out


def _bullets(body: str) -> list[str]:
    items = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.lower().startswith("none"):
            continue
        items.append(line[2:].strip() if line.startswith(("- ", "* ")) else line)
    return items


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


@dataclass
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


@dataclass
class _Facts:
    """Everything extracted from the new messages."""

    user_requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    actions: list[_Action] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    first_assistant: str | None = None
    files: Counter[str] = field(default_factory=Counter)
    changed: list[str] = field(default_factory=list)
    cwd: str | None = None
    last_test: str | None = None
    background: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    identifiers: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    urls: Counter[str] = field(default_factory=Counter)
    figures: Counter[str] = field(default_factory=Counter)
    redacted: bool = False


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
    n_lines = stripped.count("\n") + 1 if stripped else 0
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
        parts.append(f"{_plural(n_lines, 'line')} ({len(text):,} chars)")
    elif not stripped:
        parts.append("no output")
    elif n_lines == 1 and len(stripped) <= 80 and not error:
        parts.append(f"output `{stripped}`")
    elif n_lines == 1:
        parts.append(f"1-line output ({len(stripped):,} chars)")
    else:
        parts.append(f"{_plural(n_lines, 'line')} output")
    return ", ".join(parts), ok, error


def _is_decision(sentence: str) -> bool:
    """A sentence that decides something: a decision word, and either a reason or a
    substantive choice — "I'll use grep, read_file." is a plan to call tools, not a
    decision (it has no reason, and what follows the verb is only tool names)."""
    if not _DECISION_RE.search(sentence):
        return False
    if _REASON_RE.search(sentence):
        return True
    if _HEDGE_RE.match(sentence) or _DECISION_FILLER_RE.match(sentence):
        return False
    plain = [w for w in re.findall(r"[A-Za-z][\w'-]*", sentence) if w.isalpha()]
    return len(plain) >= 6


_PRUNED_LINE_RE = re.compile(r"^\[[\w .:-]{1,40}\] \S.{8,400}$")
"""A one-line stand-in the prune step left for an old tool output (``[read_file] read a.py
from line 1 (3,400 chars)``): it already describes the original, so it is the outcome."""


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


class _Extractor:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.facts = _Facts()
        self._results: dict[str, str] = {}
        self._pending_answer = 0  # 1-based index of the question awaiting an answer
        self._observations: set[int] = set()  # user messages that are tool observations

    def run(self) -> _Facts:
        for m in self.messages:
            if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                self._results.setdefault(m["tool_call_id"], text_of(m))
        msgs = self.messages
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            text = text_of(m)
            if REDACTED in text:
                self.facts.redacted = True
            self.facts.skills.extend(SKILL_MARKER_RE.findall(text))
            if role == "user":
                if i in self._observations:
                    self._index(_index_window(text), weight=1)
                else:
                    self._user(m, text)
            elif role == "assistant":
                nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                if self._assistant(m, text, nxt):
                    self._observations.add(i + 1)
            elif role == "tool":
                self._index(_index_window(text), weight=1)
        return self.facts

    # -- per role ------------------------------------------------------------------------

    def _user(self, m: Message, text: str) -> None:
        if m.get("name") in _PLATFORM_NAMES:
            self._aider_console(text)
            return
        found = request_text(m)
        if found is None:
            self._index(_scan_window(text), weight=1)
            return
        request = found
        self.facts.user_requests.append(request)
        self._index(_scan_window(request), weight=2)
        asked = 0
        for s in _sentences(request[:4000]):
            if 8 <= len(s) <= 300 and _CONSTRAINT_RE.search(s):
                self.facts.constraints.append(s)
            if s.endswith("?") and 6 <= len(s) <= 300:
                self.facts.questions.append(s)
                asked += 1
        self._pending_answer = len(self.facts.questions) if asked else 0

    def _aider_console(self, text: str) -> None:
        for line in text.splitlines():
            line = line.strip()
            m = re.match(r"Applied edit to (\S+)", line)
            if m:
                path = m.group(1)
                self.facts.actions.append(_Action("EDITED", f"`{path}`", "aider", "edit applied",
                                                  True, path))
                self.facts.files[path] += 3
                self._changed(path)
                continue
            m = re.match(r"Commit ([0-9a-f]{7,40}) (.+)", line)
            if m:
                self.facts.actions.append(_Action("COMMITTED", m.group(1), "aider",
                                                  one_line(m.group(2), _MAX_OUTCOME), True,
                                                  f"commit:{m.group(1)}"))
                self.facts.identifiers[m.group(1)] += 2

    def _assistant(self, m: Message, text: str, nxt: Message | None) -> bool:
        """Returns True when ``nxt`` is the observation of a text-embedded command."""
        stripped = text.strip()
        if stripped:
            window = stripped[:6000]
            sentences = _sentences(window)
            if self.facts.first_assistant is None and sentences:
                self.facts.first_assistant = one_line(sentences[0], 240)
            self._index(window, weight=2)
            for s in sentences:
                if 20 <= len(s) <= 320 and _is_decision(s):
                    self.facts.decisions.append(s)
            # answer to the user's questions: first sentence of the next assistant text
            if self.facts.questions and self._pending_answer:
                q = self.facts.questions[self._pending_answer - 1]
                answer = one_line(sentences[0], 200) if sentences else one_line(window, 200)
                self.facts.questions[self._pending_answer - 1] = f"Q: {q} → A: {answer}"
                self._pending_answer = 0
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls:
            for call in calls:
                self._tool_call(call)
            return False
        if stripped and nxt is not None and nxt.get("role") == "user" \
                and nxt.get("name") not in _PLATFORM_NAMES:
            return self._text_action(stripped, nxt)
        return False

    def _text_action(self, text: str, nxt: Message) -> bool:
        """SWE-agent style: the command is the assistant's closing fenced block and the next
        ``user`` message is the environment's observation (not a user request)."""
        tail = text[-2000:]
        m = re.search(r"```[a-zA-Z]*\n((?:(?!```).)*?)\n?```\s*$", tail, re.DOTALL)
        if not m:
            return False
        command = m.group(1).strip()
        if not command:
            return False
        verb, target, key = _describe_call("bash", {"command": command})
        observation = text_of(nxt)
        outcome, ok, error = _describe_result(verb, observation)
        self._record(_Action(verb, target, "bash", outcome, ok, key, error))
        cwd = _CURRENT_DIR_RE.findall(observation[-400:])
        if cwd:
            self.facts.cwd = cwd[-1].strip()
        return True

    def _tool_call(self, call: Any) -> None:
        if not isinstance(call, dict):
            return
        raw_fn = call.get("function")
        fn: dict[str, Any] = raw_fn if isinstance(raw_fn, dict) else {}
        name = str(fn.get("name") or call.get("name") or "tool")
        args = _parse_args(fn.get("arguments", call.get("arguments", "")))
        verb, target, key = _describe_call(name, args)
        result = self._results.get(str(call.get("id")))
        outcome, ok, error = _describe_result(verb, result)
        self._record(_Action(verb, target, name, outcome, ok, key, error))
        if isinstance(args, dict):
            for k in _PATH_KEYS:
                if isinstance(args.get(k), str):
                    self.facts.files[args[k]] += 3
                    if verb in ("EDITED", "WROTE", "CREATED", "DELETED"):
                        self._changed(args[k])
            for k in ("cwd", "workdir", "working_dir", "directory"):
                if isinstance(args.get(k), str):
                    self.facts.cwd = args[k]
            command = next((str(args[k]) for k in _COMMAND_KEYS if isinstance(args.get(k), str)),
                           "")
            values = " ".join(str(v) for v in args.values() if isinstance(v, (str, int, float)))
            self._index(values[:3000], weight=2)
        else:
            command = args
            self._index(command[:3000], weight=2)
        cds = _CD_RE.findall(command)
        if cds:
            self.facts.cwd = cds[-1]
        if result is not None:
            bg = _BACKGROUND_RE.search(result)
            if bg:
                self.facts.background.append(f"{bg.group(1)} (`{one_line(command, 80)}`)")
            if _TEST_CMD_RE.search(command):
                summary = [ln.strip() for ln in _TEST_SUMMARY_RE.findall(_scan_window(result))]
                status = one_line(summary[-1], 160) if summary else outcome
                self.facts.last_test = f"`{one_line(command.splitlines()[0], 100)}` — {status}"

    def _record(self, action: _Action) -> None:
        self.facts.actions.append(action)
        if action.error:
            self.facts.errors[action.error] += 1

    def _changed(self, path: str) -> None:
        if path not in self.facts.changed:
            self.facts.changed.append(path)

    def _index(self, text: str, *, weight: int) -> None:
        if not text:
            return
        f = self.facts
        for p in _PATH_RE.findall(text):
            if len(p) <= 160 and not p.startswith(("http", "//")):
                f.files[p] += weight
        for u in _URL_RE.findall(text):
            f.urls[u.rstrip(".,;:")] += 1
        for e in _ERRCLASS_RE.findall(text):
            f.identifiers[e] += weight
        for s in _SNAKE_RE.findall(text):
            if 5 <= len(s) <= 60:
                f.identifiers[s] += weight
        for c in _CAMEL_RE.findall(text):
            if len(c) <= 60:
                f.identifiers[c] += weight
        for h in _HEX_RE.findall(text):
            f.identifiers[h] += 1
        for u in _UNIT_RE.findall(text):
            f.figures[u] += 1


# --------------------------------------------------------------------------------------------
# assembly with a token budget


@dataclass
class _Item:
    section: str
    text: str
    priority: int  # higher survives longer
    order: int  # position within the section
    focus: bool = False
    cost: int = 0


class OfflineSummarizer:
    """Deterministic, extractive, no network (``name="offline"``, ``calls_llm=False``)."""

    name = "offline"
    calls_llm = False

    def __init__(self, *, max_actions: int = 400, max_identifiers: int = 80) -> None:
        self.max_actions = max_actions
        self.max_identifiers = max_identifiers

    def summarize(self, job: SummaryJob) -> str:
        # The job's messages are redacted by contract; redacting again costs ~0.1 s on the
        # largest transcript and keeps a bare secret out of the identifier index.
        messages = redact_messages([m for m in (job.messages or []) if isinstance(m, dict)])
        facts = _Extractor(messages).run()
        composer = _Composer(self, job, facts)
        # Defence in depth: the job's messages should already be redacted.
        return redact(composer.compose())


class _Composer:
    """Turns extracted facts (+ the previous summary) into section items, then assembles."""

    def __init__(self, owner: OfflineSummarizer, job: SummaryJob, facts: _Facts) -> None:
        self.owner = owner
        self.job = job
        self.facts = facts
        self.previous = parse_sections(job.previous_summary) if job.previous_summary else {}
        self.today = job.today.isoformat() if job.today is not None else None
        self.focus = _FocusMatcher(job.focus_topic)
        self.items: list[_Item] = []
        self.fixed: dict[str, str] = {}
        prev_goal = self.previous.get("Goal", "")
        prev_unattended = CRON_GOAL in prev_goal or (
            self.previous.get("Resolved Questions", "").strip() == NO_USER_QUESTIONS
        )
        self.unattended = not facts.user_requests and (not self.previous or prev_unattended)

    def add(self, section: str, text: str, priority: int, order: int) -> None:
        self.items.append(_Item(section, text, priority, order, self.focus(text)))

    def compose(self) -> str:
        self.snapshot_and_goal()
        self.constraints()
        self.actions()
        self.active_state()
        self.blocked()
        self.decisions()
        self.questions()
        self.files()
        self.critical_context()
        skills = _dedupe(SKILL_MARKER_RE.findall(self.previous.get("Pruned Skills", ""))
                         + self.facts.skills)
        self.fixed["Pruned Skills"] = "\n".join(skills) if skills else "None."
        root = _project_root(self.facts.files)
        if root:
            prefix = root + "/"
            for item in self.items:
                if item.section in _SHORTENED:
                    item.text = item.text.replace(prefix, "")
            self.add("Active State", f"- Project root: `{root}` (relative paths in this "
                     "summary are below it)", 90, -1)
        return _assemble(self.fixed, self.items, self.job.budget_tokens, self.focus.active)

    # -- sections ------------------------------------------------------------------------

    def snapshot_and_goal(self) -> None:
        facts, previous = self.facts, self.previous
        prev_snapshot = previous.get("Historical Task Snapshot", "").strip()
        prev_goal = previous.get("Goal", "").strip()
        snapshot_cap = max(400, int(self.job.budget_tokens * 4 * 0.30))
        if prev_snapshot and not (
            facts.user_requests and prev_snapshot.startswith(_NO_REQUEST_SNAPSHOT)
        ):
            self.fixed["Historical Task Snapshot"] = prev_snapshot
        elif facts.user_requests:
            self.fixed["Historical Task Snapshot"] = _truncate_verbatim(
                facts.user_requests[0], snapshot_cap)
        else:
            self.fixed["Historical Task Snapshot"] = _NO_REQUEST_SNAPSHOT + " " + (
                f"The agent's first stated step: {facts.first_assistant}"
                if facts.first_assistant else "Only tool activity was recorded."
            )
        if self.unattended:
            goal = CRON_GOAL
            objective = facts.first_assistant or _first_line(prev_goal.replace(CRON_GOAL, ""))
            if objective:
                goal += f"\nInferred objective: {objective}"
        elif facts.user_requests:
            latest = facts.user_requests[-1]
            if latest.strip() == self.fixed["Historical Task Snapshot"].strip():
                # the snapshot already quotes it in full: state the objective briefly
                goal = one_line((_sentences(latest) or [latest])[0], 300)
            else:
                goal = "Latest user request: " + _truncate_verbatim(latest, 600)
        else:
            goal = prev_goal or "Continue the task in the snapshot above."
        self.fixed["Goal"] = goal

    def constraints(self) -> None:
        carried = _bullets(self.previous.get("Constraints & Preferences", ""))
        for n, c in enumerate(_dedupe(carried + self.facts.constraints)):
            self.add("Constraints & Preferences", f"- {one_line(c, 300)}", 60, n)

    def actions(self) -> None:
        """Previous actions verbatim (PRESERVE), then the new ones, numbering continued."""
        lines: list[str] = []
        last = 0
        for raw in self.previous.get("Completed Actions", "").splitlines():
            line = raw.strip()
            if not line or line.lower().startswith("none"):
                continue
            rng = re.match(r"^(\d+)\s*[–-]\s*(\d+)[.)]\s", line)  # a condensed range
            num = re.match(r"^(\d+)[.)]\s+(.*\S)", line)
            if rng:
                last = max(last, int(rng.group(2)))
                lines.append(line)
            elif num:
                last = max(last, int(num.group(1)))
                lines.append(f"{int(num.group(1))}. {num.group(2)}")
            else:  # an un-numbered bullet from an LLM-written summary: number it
                last += 1
                lines.append(f"{last}. {line[2:] if line.startswith(('- ', '* ')) else line}")
        next_n = last + 1
        new_actions = self.facts.actions[-self.owner.max_actions:]
        skipped = len(self.facts.actions) - len(new_actions)
        if skipped:
            lines.append(f"{next_n}–{next_n + skipped - 1}. (earlier actions of this span "
                         f"condensed: {skipped} tool calls)")
            next_n += skipped
        for action in new_actions:
            lines.append(action.render(next_n, self.today))
            next_n += 1
        for idx, line in enumerate(lines):
            # recent actions matter more than old ones
            self.add("Completed Actions", line, 40 + int(30 * (idx + 1) / len(lines)), idx)

    def active_state(self) -> None:
        facts = self.facts
        prev_state = _bullets(self.previous.get("Active State", ""))
        state: list[str] = []
        if facts.cwd:
            state.append(f"Working directory: `{facts.cwd}`")
        else:
            state += [s for s in prev_state if s.startswith("Working directory")]
        changed = _dedupe(_prev_list(prev_state, "Changed files") + facts.changed)
        if changed:
            state.append("Changed files: " + ", ".join(f"`{p}`" for p in changed[-30:]))
        if facts.last_test:
            state.append(f"Last test run: {facts.last_test}")
        else:
            state += [s for s in prev_state if s.startswith("Last test run")]
        if facts.background:
            state.append("Background processes: " + "; ".join(_dedupe(facts.background)[-5:]))
        if facts.actions:
            last = facts.actions[-1]
            state.append(f"Last action: {last.verb} {last.target} — {last.outcome}")
        for n, s in enumerate(state):
            self.add("Active State", f"- {s}", 85, n)

    def blocked(self) -> None:
        """Exact errors whose step has not succeeded since; resolved ones are dropped."""
        latest_by_key: dict[str, _Action] = {}
        for action in self.facts.actions:
            latest_by_key[action.key] = action
        resolved_targets = {a.target for a in self.facts.actions if a.ok}
        blocked = [line for line in _bullets(self.previous.get("Blocked", ""))
                   if not any(t in line for t in resolved_targets if len(t) > 4)]
        for action in latest_by_key.values():
            if action.ok or action.outcome == "no result recorded":
                continue
            what = action.error or action.outcome.split(",")[0]  # e.g. "exit 2"
            blocked.append(f"`{what}` — from {action.verb} {action.target} "
                           f"[tool: {action.tool}]")
        for n, b in enumerate(_dedupe(blocked)[-12:]):
            self.add("Blocked", f"- {b}", 80, n)

    def decisions(self) -> None:
        carried = _bullets(self.previous.get("Key Decisions", ""))
        for n, d in enumerate(_dedupe(carried + self.facts.decisions)[-40:]):
            self.add("Key Decisions", f"- {one_line(d, 320)}", 50, n)

    def questions(self) -> None:
        carried = [q for q in _bullets(self.previous.get("Resolved Questions", ""))
                   if q != NO_USER_QUESTIONS]
        new = [q if q.startswith("Q: ") else f"Q: {q} → A: (no answer recorded)"
               for q in self.facts.questions]
        if self.unattended:
            self.fixed["Resolved Questions"] = NO_USER_QUESTIONS
        for n, q in enumerate(_dedupe(carried + new)[-20:]):
            self.add("Resolved Questions", f"- {one_line(q, 420)}", 45, n)

    def files(self) -> None:
        carried = [re.sub(r"^`([^`]+)`.*$", r"\1", f)
                   for f in _bullets(self.previous.get("Relevant Files", ""))]
        root = _project_root(self.facts.files)
        for n, (path, note) in enumerate(_rank_files(self.facts, carried, root)[:60]):
            self.add("Relevant Files", f"- `{path}`{note}", 35 - min(n, 30) // 3, n)

    def critical_context(self) -> None:
        facts, job = self.facts, self.job
        ctx: list[tuple[str, int]] = []
        if job.memory_context and job.memory_context.strip():
            mem = redact(job.memory_context.strip())
            ctx.append((f"Memory context (source: memory providers): {one_line(mem, 1200)}", 75))
        if facts.redacted or any(REDACTED in s for s in self.previous.values()):
            ctx.append(("Credentials were present in the conversation; their values are "
                        f"{REDACTED} and must be re-read from the environment, not guessed.", 90))
        for line in _bullets(self.previous.get("Critical Context", "")):
            if not line.startswith(("Credentials were present", "Memory context")):
                ctx.append((line, 30))
        errors = [one_line(e, 120) for e, _ in facts.errors.most_common(4)]
        if errors:
            ctx.append(("Error messages seen: " + "; ".join(f"`{e}`" for e in errors), 55))
        if facts.urls:
            urls = sorted(facts.urls, key=lambda u: (-facts.urls[u], u))[:10]
            ctx.append(("URLs: " + ", ".join(urls), 28))
        idents = sorted(facts.identifiers, key=lambda s: (-facts.identifiers[s], s))
        idents = idents[: self.owner.max_identifiers]
        if self.focus.active:
            idents.sort(key=lambda s: not self.focus(s))
        for start in range(0, len(idents), 10):
            part = idents[start:start + 10]
            # the first chunk is the index's core: kept before errors and URLs
            ctx.append(("Identifiers: " + ", ".join(f"`{s}`" for s in part),
                        70 if start == 0 else 26 - min(start // 10, 20)))
        figures = sorted(facts.figures, key=lambda s: (-facts.figures[s], s))[:15]
        if figures:
            ctx.append(("Figures: " + ", ".join(figures), 22))
        for n, (line, prio) in enumerate(_dedupe_pairs(ctx)):
            self.add("Critical Context", f"- {line}", prio, n)


# --------------------------------------------------------------------------------------------
# small helpers


class _FocusMatcher:
    def __init__(self, topic: str | None) -> None:
        words = [w.lower() for w in re.findall(r"[\w.-]{3,}", topic or "")]
        self.active = bool(words)
        self._re = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) \
            if words else None

    def __call__(self, text: str) -> bool:
        return bool(self._re and self._re.search(text))


def _truncate_verbatim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[… {len(text) - limit:,} more characters of this request]"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("inferred objective:"):
            return line.split(":", 1)[1].strip()
        if line:
            return line
    return ""


def _dedupe(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for v in values:
        key = " ".join(v.split()).lower()
        if key and key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _dedupe_pairs(values: list[tuple[str, int]]) -> list[tuple[str, int]]:
    seen: set[str] = set()
    out = []
    for text, prio in values:
        if text not in seen:
            seen.add(text)
            out.append((text, prio))
    return out


def _prev_list(state: list[str], label: str) -> list[str]:
    for s in state:
        if s.startswith(label + ":"):
            return re.findall(r"`([^`]+)`", s)
    return []


_SHORTENED = frozenset({"Completed Actions", "Active State", "Blocked", "Relevant Files",
                        "Key Decisions"})


def _project_root(files: Counter[str]) -> str | None:
    """The deepest directory holding at least half of the absolute paths seen (≥ 3 paths)."""
    absolute = [p for p in files if p.startswith("/")]
    if len(absolute) < 3:
        return None
    counts: Counter[str] = Counter()
    for path in absolute:
        parts = path.split("/")[1:-1]
        for depth in range(2, min(len(parts), 8) + 1):
            counts["/" + "/".join(parts[:depth])] += 1
    best = [d for d, n in counts.items() if n * 2 >= len(absolute)]
    if not best:
        return None
    return max(best, key=lambda d: (d.count("/"), d))


def _rank_files(facts: _Facts, previous: list[str], root: str | None) -> list[tuple[str, str]]:
    """Paths by mentions (changed files first); absolute and root-relative spellings of one
    file are merged so it is listed once."""
    prefix = root + "/" if root else None

    def norm(path: str) -> str:
        return path[len(prefix):] if prefix and path.startswith(prefix) else path

    scores: Counter[str] = Counter()
    for path, n in facts.files.items():
        scores[norm(path)] += n
    for path in previous:
        scores[norm(path)] += 2
    changed = {norm(p) for p in facts.changed}
    ranked = sorted(scores, key=lambda p: (-(scores[p] + (10 if p in changed else 0)), p))
    return [(p, " (changed)" if p in changed else "") for p in ranked]


_HEADER_COST = 6  # "## Heading\n" + blank line, roughly

# Share of the budget left after the fixed sections; unused share flows to the others.
_SHARES = {
    "Constraints & Preferences": 0.06,
    "Completed Actions": 0.36,
    "Active State": 0.08,
    "Blocked": 0.07,
    "Key Decisions": 0.11,
    "Resolved Questions": 0.05,
    "Relevant Files": 0.09,
    "Critical Context": 0.18,
}


def _allocate(needs: dict[str, int], available: int) -> dict[str, int]:
    """Give each section its share; what a section does not need flows to the hungry ones."""
    alloc = {s: 0 for s in needs}
    hungry = {s for s, n in needs.items() if n > 0}
    remaining = max(0, available)
    while hungry and remaining > 0:
        total_share = sum(_SHARES[s] for s in hungry)
        given = 0
        satisfied = set()
        for s in sorted(hungry):
            grant = int(remaining * _SHARES[s] / total_share)
            room = needs[s] - alloc[s]
            if grant >= room:
                grant = room
                satisfied.add(s)
            alloc[s] += grant
            given += grant
        remaining -= given
        hungry -= satisfied
        if not satisfied:
            break
    return alloc


def _select(items: list[_Item], budget: int) -> tuple[list[_Item], list[_Item]]:
    """Keep the best items of one section within ``budget``: focus first, then priority."""
    kept: list[_Item] = []
    dropped: list[_Item] = []
    spent = 0
    contiguous = bool(items) and items[0].section == "Completed Actions"
    for item in sorted(items, key=lambda i: (not i.focus, -i.priority, -i.order)):
        if spent + item.cost <= budget and not (contiguous and dropped and not item.focus):
            kept.append(item)
            spent += item.cost
        else:
            dropped.append(item)
    return kept, dropped


_HEADING_LINE_RE = re.compile(r"^(?=#)", re.MULTILINE)


def _escape_headings(text: str) -> str:
    """``## Overview`` inside a quoted request would split the summary into a twelfth
    section; the markdown escape ``\\#`` renders the same text without being a heading."""
    return _HEADING_LINE_RE.sub("\\\\", text)


_RANGE_LINE_RE = re.compile(r"^\s*(\d+)\s*[–-]\s*(\d+)[.)]\s")
_RANGE_COUNTS_RE = re.compile(r"(\d+) ([A-Z_]+)\b")


_BACKTICKED_RE = re.compile(r"`([^`\n]{2,120})`")
_TARGET_VERBS = ("EDITED", "WROTE", "CREATED", "DELETED", "REVERTED", "READ")


def _condensed_targets(dropped: Sequence[_Item], max_chars: int) -> str:
    """The files the dropped actions changed or read (newest first, changed before read),
    and those an earlier condensed line kept: what a continuing agent looks for first."""
    changed: list[str] = []
    read: list[str] = []
    for item in sorted(dropped, key=lambda i: -_first_number(i.text)):
        m = re.match(r"^\s*\d+\.\s+([A-Z_]+)\s+`([^`\n]+)`", item.text)
        if m and m.group(1) in _TARGET_VERBS:
            (read if m.group(1) == "READ" else changed).append(m.group(2))
        elif _RANGE_LINE_RE.match(item.text) and "touched " in item.text:
            changed.extend(_BACKTICKED_RE.findall(item.text.split("touched ", 1)[1]))
    out: list[str] = []
    used = 0
    for target in dict.fromkeys(changed + read):
        cost = len(target) + 4
        if used + cost > max_chars:
            break
        out.append(f"`{target}`")
        used += cost
    return ", ".join(out)


def _first_number(text: str) -> int:
    m = re.match(r"^\s*(\d+)", text)
    return int(m.group(1)) if m else 0


def _condense_actions(dropped: Sequence[_Item], *, max_chars: int = 0) -> str | None:
    """One line standing for dropped actions: their number range, how many they were and
    what they did — earlier condensed lines count with every action they stood for, so the
    counts always add up (``1–14. (14 earlier actions condensed …: 9 READ, 5 RAN)``) — and,
    within ``max_chars``, the files they touched."""
    low: int | None = None
    high = 0
    total = 0
    verbs: Counter[str] = Counter()
    for item in dropped:
        rng = _RANGE_LINE_RE.match(item.text)
        num = re.match(r"^\s*(\d+)\.\s+([A-Z_]+)?", item.text)
        if rng:
            a, b = int(rng.group(1)), int(rng.group(2))
            size = b - a + 1
            digest = item.text.split(":", 1)[1].split("; touched ", 1)[0] if ":" in item.text \
                else ""
            counted = {v: int(n) for n, v in _RANGE_COUNTS_RE.findall(digest)}
            verbs.update(counted)
            if size > sum(counted.values()):
                verbs["other"] += size - sum(counted.values())
        elif num:
            a = b = int(num.group(1))
            size = 1
            verbs[num.group(2) or "other"] += 1
        else:
            continue
        low = a if low is None else min(low, a)
        high = max(high, b)
        total += size
    if low is None:
        return None
    digest = ", ".join(f"{n} {v}" for v, n in verbs.most_common() if v != "other")
    if verbs.get("other"):
        digest = f"{digest}, {verbs['other']} other" if digest else f"{verbs['other']} other"
    action_word = "action" if total == 1 else "actions"
    targets = _condensed_targets(dropped, max_chars) if max_chars > 0 else ""
    touched = f"; touched {targets}" if targets else ""
    return (f"{low}–{high}. ({total} earlier {action_word} condensed to fit the summary "
            f"budget{': ' + digest if digest else ''}{touched})")


def _assemble(fixed: dict[str, str], items: list[_Item], budget: int, focus: bool) -> str:
    fixed = {k: _escape_headings(v) for k, v in fixed.items()}
    for item in items:
        item.text = _escape_headings(item.text)
        item.cost = count_text(item.text) + 1
    fixed_cost = sum(count_text(v) + _HEADER_COST for v in fixed.values()) + \
        _HEADER_COST * (len(SECTIONS) - len(fixed))
    by_section: dict[str, list[_Item]] = {s: [] for s in SECTIONS}
    for item in items:
        by_section[item.section].append(item)
    needs = {s: sum(i.cost for i in by_section[s]) for s in _SHARES}
    if fixed_cost + sum(needs.values()) > budget:
        # room for the "condensed" line of Completed Actions and the targets it keeps
        reserve = max(24, min(160, (budget - fixed_cost) // 10))
        alloc = _allocate(needs, budget - fixed_cost - reserve)
        for section in _SHARES:
            kept, dropped = _select(by_section[section], alloc[section])
            by_section[section] = kept
            if section == "Completed Actions" and dropped:
                condensed = _condense_actions(dropped, max_chars=reserve * 3)
                if condensed:
                    by_section[section].append(_Item(section, condensed, 100, -1))
    out: list[str] = []
    for section in SECTIONS:
        out.append(f"## {section}")
        section_items = by_section[section]
        if focus and section != "Completed Actions":  # numbering stays in order
            section_items.sort(key=lambda i: (not i.focus, i.order))
        else:
            section_items.sort(key=lambda i: i.order)
        if section in fixed:
            out.append(fixed[section])
        if section_items:
            out.extend(i.text for i in section_items)
        elif section not in fixed:
            out.append("None.")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
