"""The extractive pass: walks the middle once, by role, and collects the facts every
summary section is built from (requests, constraints, questions, actions, decisions, files,
identifiers, errors, working directory, test status)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hermes_host.llm.offline.actions import (
    _COMMAND_KEYS,
    _MAX_OUTCOME,
    _NEW_TEXT_KEYS,
    _PATH_KEYS,
    _Action,
    _describe_call,
    _describe_result,
    _parse_args,
    _scan_window,
    change_note,
    file_names,
    is_stand_in,
    names_noted_for,
    noted_lines,
    read_note,
)
from hermes_host.llm.offline.handover import FIXED_LABEL, Handover, read_handover
from hermes_host.llm.offline.user_requests import (
    _PLATFORM_NAMES,
    SKILL_MARKER_RE,
    request_text,
)
from hermes_host.messages import one_line, segments_of, text_of
from hermes_host.models import Message
from hermes_host.redact import REDACTED

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
    r"(?<![\w/.:…-])((?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.[A-Za-z0-9]{1,8}"
    r"|(?:[\w-]+/)*[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|ex|exs|heex|eex|rb|go|rs|c|h|cc|cpp|hpp|java"
    r"|kt|swift|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|sh|bash|sql|html|css|scss"
    r"|csv|lock|xml|pony|lua|php|pl|dockerfile|env|ipynb|proto|graphql|vue|svelte))(?![\w/])"
)
_URL_RE = re.compile(r"\bhttps?://[^\s\"'<>)\]`]+")
_SNAKE_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_ERRCLASS_RE = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Failure)\b")
# a commit hash or hex id — not a dash-separated group of a UUID (``79ed4dd9`` of
# ``79ed4dd9-9c66-46f4-af77-d38ce0621136``): a fragment names nothing an agent can use
_HEX_RE = re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
_UNIT_RE = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds|minutes|min|h|hours|KB|MB|GB|TB|kB|B|bytes|tokens"
    r"|lines|files|tests|%|px|rpm|req/s)\b"
)
_TEST_SUMMARY_RE = re.compile(
    r"(?im)^.*(?:\b\d+ (?:passed|failed|tests?|failures?|errors?)\b|^OK(?: \(.*\))?$"
    r"|^FAILED \(.*\)$|\btests? (?:passed|failed)\b).*$"
)
_TEST_CMD_RE = re.compile(r"(?i)\b(?:pytest|tox|nox|unittest|npm (?:run )?test|yarn test"
                          r"|mix test|cargo test|go test|make test|rspec|jest|vitest|ctest)\b")
_BACKGROUND_RE = re.compile(r"(?i)running in background with id:?\s*(\w+)")
_HEDGE_RE = re.compile(r"(?i)^(?:let me|now let me|let's|i'll now|i will now)\b")
_CURRENT_DIR_RE = re.compile(r"\(Current directory: ([^)\n]+)\)")
_CD_RE = re.compile(r"(?:^|&&|;|\n)\s*cd\s+([^\s;&|]+)")
_CLOSING_FENCE_RE = re.compile(r"```[a-zA-Z]*\n((?:(?!```).)*?)\n?```\s*$", re.DOTALL)
_APPLIED_EDIT_RE = re.compile(r"Applied edit to (\S+)")
_AIDER_COMMIT_RE = re.compile(r"Commit ([0-9a-f]{7,40}) (.+)")
_WORD_RE = re.compile(r"[A-Za-z][\w'-]*")


def _sentences(text: str) -> list[str]:
    """Sentences and lines of ``text`` (a period inside ``a.b`` does not end a sentence)."""
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s and s.strip()]


def _index_window(text: str) -> str:
    """The part of a tool output worth indexing for identifiers (its two ends)."""
    return text if len(text) <= 3000 else text[:2000] + "\n" + text[-1000:]



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
    handover: Handover | None = None
    """The open threads of the newest platform continuation summary in the middle."""



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
    plain = [w for w in _WORD_RE.findall(sentence) if w.isalpha()]
    return len(plain) >= 6



class _Extractor:
    def __init__(self, messages: list[Message], previous: str | None = None) -> None:
        self.messages = messages
        self._previous_lines = noted_lines(previous)
        self.facts = _Facts()
        self._results: dict[str, str] = {}
        self._pending_answer = 0  # 1-based index of the question awaiting an answer
        self._observations: set[int] = set()  # user messages that are tool observations
        self._scans: dict[str, _Scan] = {}  # text -> what _index found in it
        self._calls: dict[tuple[str, str], tuple[Any, str, str, str, str]] = {}
        self._outcomes: dict[tuple[str, str | None], tuple[str, bool, str | None, str]] = {}
        self._known: dict[str, set[str]] = {}  # path -> names seen in it (reads, writes)

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
        for segment in segments_of(m):
            handover = read_handover(segment)
            if handover is not None:
                self.facts.handover = handover
                self.facts.decisions.extend(f"{FIXED_LABEL}: {fix}" for fix in handover.fixes)
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
            m = _APPLIED_EDIT_RE.match(line)
            if m:
                path = m.group(1)
                self.facts.actions.append(_Action("EDITED", f"`{path}`", "aider", "edit applied",
                                                  True, path))
                self.facts.files[path] += 3
                self._changed(path)
                continue
            m = _AIDER_COMMIT_RE.match(line)
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
        m = _CLOSING_FENCE_RE.search(tail)
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
        raw_args = fn.get("arguments", call.get("arguments", ""))
        # a call or a result met again (the same command, the same output) is described once
        described = self._calls.get((name, raw_args)) if isinstance(raw_args, str) else None
        if described is None:
            args = _parse_args(raw_args)
            verb, target, key = _describe_call(name, args)
            described = (args, verb, target, key, change_note(verb, args))
            if isinstance(raw_args, str):
                self._calls[(name, raw_args)] = described
        args, verb, target, key, change = described
        result = self._results.get(str(call.get("id")))
        change = self._compared(verb, key, args, result, change)
        seen = self._outcomes.get((verb, result))
        if seen is None:
            seen = self._outcomes[(verb, result)] = (*_describe_result(verb, result),
                                                     read_note(verb, result))
        outcome, ok, error, read = seen
        note = change or read
        if note:
            outcome = f"{outcome}; {note}"
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

    def _compared(self, verb: str, path: str, args: Any, result: str | None,
                  change: str) -> str:
        """``change`` for a write of a file the session saw before: compared with the names
        it held (:func:`change_note`'s ``known``); and the names of each file read or
        written are remembered for the next write."""
        if verb == "READ" and result and not is_stand_in(result):
            self._known.setdefault(path, set()).update(file_names(result))
        elif verb in ("WROTE", "CREATED", "EDITED") and isinstance(args, dict):
            known = self._known.get(path) or names_noted_for(path, self._previous_lines)
            if known and verb != "EDITED":
                change = change_note(verb, args, known)
            new = next((args[k] for k in _NEW_TEXT_KEYS if isinstance(args.get(k), str)), "")
            if new:
                names = file_names(new)
                if verb == "EDITED":
                    self._known.setdefault(path, set()).update(names)
                else:
                    self._known[path] = names
        return change

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
        found = self._scans.get(text)
        if found is None:  # the same text met again (a repeated output) is scanned once
            found = self._scans[text] = _scan(text)
        paths, urls, errors, snakes, camels, hexes, units = found
        f = self.facts
        for p in paths:
            f.files[p] += weight
        for u in urls:
            f.urls[u] += 1
        for e in errors:
            f.identifiers[e] += weight
        for s in snakes:
            f.identifiers[s] += weight
        for c in camels:
            f.identifiers[c] += weight
        for h in hexes:
            f.identifiers[h] += 1
        for u in units:
            f.figures[u] += 1


_Scan = tuple[tuple[str, ...], ...]
_NOTHING: _Scan = ((),) * 7


def _scan(text: str) -> _Scan:
    """What :meth:`_Extractor._index` counts in ``text`` (paths, URLs, error classes, snake
    and camel identifiers, hex ids, figures), filtered but not yet weighted.  Tuples, and one
    shared value for a text with nothing in it: the extractor keeps a scan per distinct text,
    and on a 100,000-message middle lists would keep the garbage collector busy (issue 15)."""
    found = (
        tuple(p for p in _PATH_RE.findall(text)
              if len(p) <= 160 and not p.startswith(("http", "//"))),
        tuple(u.rstrip(".,;:") for u in _URL_RE.findall(text)) if "http" in text else (),
        tuple(_ERRCLASS_RE.findall(text)),
        tuple(s for s in _SNAKE_RE.findall(text) if 5 <= len(s) <= 60) if "_" in text else (),
        tuple(c for c in _CAMEL_RE.findall(text) if len(c) <= 60),
        tuple(_HEX_RE.findall(text)),
        tuple(_UNIT_RE.findall(text)),
    )
    return found if any(found) else _NOTHING
