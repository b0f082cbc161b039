"""The eleven sections (R-7.2): the facts of the new messages merged with the previous
summary's sections (R-6.6: PRESERVE, ADD, continue numbering), one item per line, each with a
priority for the budget."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from hermes_host.llm.base import SUMMARY_SECTIONS, SummaryJob
from hermes_host.llm.offline.actions import _Action
from hermes_host.llm.offline.budget import _assemble, _Item, unescape_headings
from hermes_host.llm.offline.extract import _Facts, _sentences
from hermes_host.llm.offline.files import _bullets, _project_root, file_lines
from hermes_host.llm.offline.handover import HANDOVER_LABELS
from hermes_host.llm.offline.user_requests import (
    _NO_REQUEST_SNAPSHOT,
    CRON_GOAL,
    NO_USER_QUESTIONS,
    SKILL_MARKER_RE,
)
from hermes_host.messages import LEGACY_SUMMARY_PREFIX, SUMMARY_PREFIX, one_line
from hermes_host.redact import REDACTED, redact

if TYPE_CHECKING:
    from hermes_host.llm.offline import OfflineSummarizer

SECTIONS = SUMMARY_SECTIONS


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
        root = re.search(r"^- Project root: `([^`]+)`", self.previous.get("Active State", ""), re.M)
        self.previous_root = root.group(1) if root else None

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
        root = _project_root(self.facts.files, self.previous_root)
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
            # the carried snapshot is written with its headings escaped (``\\###``)
            snapshot = unescape_headings(self.fixed["Historical Task Snapshot"])
            snapshot = snapshot.split("\n[… ", 1)[0].strip()  # a truncated one's own text
            if latest.strip() == snapshot or (
                len(snapshot) >= 200 and latest.strip().startswith(snapshot)
            ):
                # the snapshot already quotes it in full: state the objective briefly
                goal = _objective(latest)
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
        # the open threads of a platform's continuation summary: this round's, else the
        # previous summary's until a newer one replaces them
        if facts.handover is not None:
            state += facts.handover.state_lines()
        else:
            state += [s for s in prev_state if s.startswith(HANDOVER_LABELS)]
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
        root = _project_root(self.facts.files, self.previous_root)
        lines = file_lines(self.facts, self.previous.get("Relevant Files", ""), root)
        for n, line in enumerate(lines):
            self.add("Relevant Files", line, 35 - min(n, 30) // 3, n)

    def critical_context(self) -> None:
        facts, job = self.facts, self.job
        ctx: list[tuple[str, int]] = []
        if job.memory_context and job.memory_context.strip():
            mem = redact(job.memory_context.strip())
            ctx.append((f"Memory context (source: memory providers): {one_line(mem, 1200)}", 75))
        if facts.redacted or any(REDACTED in s for s in self.previous.values()):
            ctx.append(("Credentials were present in the conversation; their values are "
                        f"{REDACTED} and must be re-read from the environment, not guessed.", 90))
        # MERGE, not re-list: the carried index lines are folded into this round's, each
        # name, URL, error or figure once, the ones the new turns use again first
        carried: dict[str, list[str]] = {"Identifiers": [], "URLs": [], "Error messages seen": [],
                                         "Figures": []}
        for line in _bullets(self.previous.get("Critical Context", "")):
            label, _, rest = line.partition(": ")
            if label in ("Identifiers", "Error messages seen"):
                carried[label] += re.findall(r"`([^`]+)`", rest)
            elif label in ("URLs", "Figures"):
                carried[label] += [v.strip() for v in rest.split(", ") if v.strip()]
            elif not line.startswith(("Credentials were present", "Memory context")):
                ctx.append((line, 30))
        carried_ids = carried["Identifiers"]
        errors = _dedupe([one_line(e, 120) for e, _ in facts.errors.most_common(4)]
                         + carried["Error messages seen"])[:6]
        if errors:
            ctx.append(("Error messages seen: " + "; ".join(f"`{e}`" for e in errors), 55))
        urls = _dedupe(sorted(facts.urls, key=lambda u: (-facts.urls[u], u))[:10]
                       + carried["URLs"])[:12]
        if urls:
            ctx.append(("URLs: " + ", ".join(urls), 28))
        idents = sorted(facts.identifiers, key=lambda s: (-facts.identifiers[s], s))
        idents = idents[: self.owner.max_identifiers]
        # liveness: a carried name the new turns use again comes first (it recurs across
        # rounds), then names the new turns used more than once in passing, then the carried
        # index in its order, and last the names a single tool output mentioned once — so
        # under budget a passing mention goes before a name the session kept coming back to
        carried_set = set(carried_ids)
        recurring = [s for s in idents if s in carried_set]
        repeated = [s for s in idents if s not in carried_set and facts.identifiers[s] > 1]
        passing = [s for s in idents if s not in carried_set and facts.identifiers[s] <= 1]
        idents = _dedupe(recurring + repeated + carried_ids + passing)
        if self.focus.active:
            idents.sort(key=lambda s: not self.focus(s))
        for start in range(0, len(idents), 10):
            part = idents[start:start + 10]
            # the first chunk is the index's core: kept before errors and URLs
            ctx.append(("Identifiers: " + ", ".join(f"`{s}`" for s in part),
                        70 if start == 0 else 30 - min(start // 10, 25)))
        figures = _dedupe(sorted(facts.figures, key=lambda s: (-facts.figures[s], s))[:15]
                          + carried["Figures"])[:15]
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


def _objective(request: str) -> str:
    """The first sentence of ``request`` that says something (a bare ``<pr_description>``
    tag line does not), tags dropped, on one line."""
    for sentence in _sentences(request):
        plain = re.sub(r"</?[\w-]+>", "", sentence).strip()
        if len(plain) >= 12:
            return one_line(plain, 300)
    return one_line(request, 300)


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
