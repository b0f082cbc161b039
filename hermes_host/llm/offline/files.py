"""*Relevant Files* (R-7.2): the files by use, each with what the session learnt of it, and
the project root the summary's paths are shortened below."""

from __future__ import annotations

import re
from collections import Counter

from hermes_host.llm.offline.extract import _Facts


def _bullets(body: str) -> list[str]:
    items = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.lower().startswith("none"):
            continue
        items.append(line[2:].strip() if line.startswith(("- ", "* ")) else line)
    return items


def file_lines(facts: _Facts, previous: str, root: str | None) -> list[str]:
    """The section's lines, changed files (this round or an earlier one) and then the most
    used first: each file with what the session did to it (``read``, ``edited`` …) and, for
    the first few, what it learnt of it — the names its edits added, the names it defines —
    merged with what the previous summary's section (``previous``) said (MERGE, not re-list:
    a file's note survives the re-summaries that drop the actions it came from)."""
    carried: list[str] = []
    carried_notes: dict[str, _FileNote] = {}
    for line in _bullets(previous):
        m = _FILE_LINE_RE.match(line)
        if not m:
            continue
        carried.append(m.group(1))
        carried_notes[m.group(1)] = _FileNote.parse(m.group(3) or "", bool(m.group(2)))
    prefix = root + "/" if root else None

    def norm(path: str) -> str:
        return path[len(prefix):] if prefix and path.startswith(prefix) else path

    notes: dict[str, _FileNote] = {norm(p): n for p, n in carried_notes.items()}
    for action in reversed(facts.actions):  # newest first
        m = _TARGET_PATH_RE.match(action.target)
        if action.verb not in _DONE_VERBS or not m:
            continue  # (a changed file is flagged from the changed list below)
        known = notes.setdefault(norm(m.group(1)), _FileNote())
        known.did_now(action.verb.lower())
        if action.verb in _NOTED_VERBS:
            known.add(action.outcome)
    out = []
    was_changed = {norm(p) for p, note in carried_notes.items() if note.changed}
    # a file an earlier round opened (read, edited …) is one the agent comes back to: it
    # outranks the paths this round only names (a listing, a grep hit)
    was_opened = {norm(p) for p, note in carried_notes.items() if note.did}
    ranked = _rank_files(facts, carried, root, was_changed, was_opened)
    for n, (path, flag) in enumerate(ranked[:60]):
        note = notes.get(path)
        if note is not None and note.changed and not flag:
            flag = " (changed)"
        # every file says what the session did to it (read, edited …); the most used also
        # what is known of them (the names it defines, the names its edits added)
        said = note.render(names=n < _NOTED_FILES) if note is not None else ""
        out.append(f"- `{path}`{flag}{' — ' + said if said else ''}")
    return out


_SOURCE_DIRS = frozenset({"src", "lib", "test", "tests", "spec", "assets", "priv", "docs", "app",
                          "pkg", "cmd", "internal", "packages", "include", "scripts"})


def _project_root(files: Counter[str], previous: str | None = None) -> str | None:
    """The directory holding at least half of the absolute paths seen (≥ 3 paths) below which
    the most of them are spelled as the session also spells them relatively; else
    ``previous`` (an earlier round's root), else the deepest one not inside a source folder
    (``lib``, ``src``, ``tests`` …)."""
    absolute = [p for p in files if p.startswith("/")]
    if len(absolute) < 3:  # too few to tell: an earlier round's root still holds
        return previous
    counts: Counter[str] = Counter()
    for path in absolute:
        parts = path.split("/")[1:-1]
        for depth in range(2, min(len(parts), 8) + 1):
            counts["/" + "/".join(parts[:depth])] += 1
    best = [d for d, n in counts.items() if n * 2 >= len(absolute)]
    if not best:
        return previous
    if previous in best:
        # a round whose paths all sit deeper (two reads in ``lib/x/live``) does not move an
        # earlier round's root into them: the summary keeps one spelling of each path
        best = [d for d in best if not d.startswith(previous + "/")]
    # the session's own relative spellings (``lib/x/y.ex``) say where its project root is:
    # shortening below a deeper directory would leave fragments (``y.ex``) that name
    # nothing the agent writes, and a path the summary cannot be matched against
    relative = {p[2:] if p.startswith("./") else p for p in files
                if not p.startswith(("/", "~", "../"))}

    def spelled(root: str) -> int:
        prefix = root + "/"
        return sum(1 for p in absolute if p.startswith(prefix) and p[len(prefix):] in relative)

    def inside_sources(root: str) -> bool:  # ``…/proj/lib/x``: a folder of the project
        return any(part in _SOURCE_DIRS for part in root.split("/")[3:])

    # then the root an earlier round chose (one spelling across rounds), then a directory
    # that is not itself inside a source folder, the deepest such
    return max(best, key=lambda d: (spelled(d), d == previous, not inside_sources(d),
                                    d.count("/"), d))


_TARGET_PATH_RE = re.compile(r"`([^`]+)`$")
_FILE_LINE_RE = re.compile(r"^`([^`]+)`( \(changed\))?(?: — (.*))?$")
_NOTED_VERBS = frozenset({"EDITED", "WROTE", "CREATED", "READ"})
_DONE_VERBS = _NOTED_VERBS | {"DELETED", "REVERTED"}
_DONE_WORDS = frozenset(v.lower() for v in _DONE_VERBS)
_NOTE_PARTS = (("adds ", "adds"), ("defines ", "defines"))
_NOTE_NAMES = 4
_NOTED_FILES = 6


class _FileNote:
    """What a file's *Relevant Files* line says of it: what the session did to it (``edited,
    read``: newest first, each once), the names its edits added and the names it defines
    (newest first, a few each)."""

    def __init__(self) -> None:
        self.did: list[str] = []
        self._fresh: list[str] = []  # what this round's actions did, newest first
        self.adds: list[str] = []
        self.defines: list[str] = []
        self.changed = False

    @classmethod
    def parse(cls, text: str, changed: bool) -> _FileNote:
        note = cls()
        note.changed = changed
        for part in text.split("; "):
            words = part.split(", ")
            if words and all(w in _DONE_WORDS for w in words):
                note.did = words
                continue
            for head, kind in _NOTE_PARTS:
                if part.startswith(head):
                    getattr(note, kind).extend(re.findall(r"`([^`]+)`", part))
        return note

    def add(self, outcome: str) -> None:
        """Fold in one action's outcome (met newest first: what it adds goes behind what a
        newer action added)."""
        for part in outcome.split("; "):
            for head, kind in _NOTE_PARTS:
                if part.startswith(head):
                    names = getattr(self, kind)
                    names.extend(n for n in re.findall(r"`([^`]+)`", part) if n not in names)

    def did_now(self, word: str) -> None:
        """An action of this round did ``word`` (met newest first, so before what a previous
        summary said was done)."""
        if word not in self._fresh:
            self._fresh.append(word)
        self.did = self._fresh + [w for w in self.did if w not in self._fresh]

    def render(self, *, names: bool = True) -> str:
        parts = [", ".join(self.did)] if self.did else []
        if not names:
            return "; ".join(parts)
        adds = _distinct(self.adds)[:_NOTE_NAMES]
        defines = [n for n in _distinct(self.defines) if n not in adds][:_NOTE_NAMES]
        if adds:
            parts.append("adds " + ", ".join(f"`{n}`" for n in adds))
        if defines:
            parts.append("defines " + ", ".join(f"`{n}`" for n in defines))
        return "; ".join(parts)


def _distinct(names: list[str]) -> list[str]:
    """``names`` once each, without the parts of a dotted name also listed (``Web`` and
    ``ReviewTest`` beside ``Web.ReviewTest``)."""
    unique = list(dict.fromkeys(names))
    parts = {p for n in unique if "." in n for p in n.split(".")}
    return [n for n in unique if "." in n or n not in parts]


def _rank_files(
    facts: _Facts,
    previous: list[str],
    root: str | None,
    was_changed: set[str] | frozenset[str] = frozenset(),
    was_opened: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """Paths by mentions (files changed this round or, per the previous summary, earlier
    first); absolute and root-relative spellings of one file are merged so it is listed
    once."""
    prefix = root + "/" if root else None

    def norm(path: str) -> str:
        return path[len(prefix):] if prefix and path.startswith(prefix) else path

    scores: Counter[str] = Counter()
    for path, n in facts.files.items():
        scores[norm(path)] += n
    for path in previous:
        scores[norm(path)] += 2
    changed = {norm(p) for p in facts.changed}
    ranked = sorted(scores, key=lambda p: (
        -(scores[p] + (10 if p in changed else 5 if p in was_changed
                       else 4 if p in was_opened else 0)), p))
    return [(p, " (changed)" if p in changed else "") for p in ranked]
