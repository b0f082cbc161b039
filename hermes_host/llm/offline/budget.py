"""Assembly within ``job.budget_tokens``: each section gets a share of what the fixed parts
leave, keeps its highest-priority items, and the oldest actions are condensed into one line
that keeps the numbering."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from hermes_host.llm.base import SUMMARY_SECTIONS as SECTIONS
from hermes_host.tokens import count_text


@dataclass
class _Item:
    section: str
    text: str
    priority: int  # higher survives longer
    order: int  # position within the section
    focus: bool = False
    cost: int = 0



_HEADER_COST = 6  # "## Heading\n" + blank line, roughly

# Share of the budget left after the fixed sections; unused share flows to the others.
_SHARES = {
    "Constraints & Preferences": 0.06,
    "Completed Actions": 0.22,
    "Active State": 0.08,
    "Blocked": 0.07,
    "Key Decisions": 0.11,
    "Resolved Questions": 0.05,
    "Relevant Files": 0.17,
    "Critical Context": 0.24,
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
_ESCAPED_HEADING_RE = re.compile(r"^\\(?=#)", re.MULTILINE)


def escape_headings(text: str) -> str:
    """``## Overview`` inside a quoted request would split the summary into a twelfth
    section; the markdown escape ``\\#`` renders the same text without being a heading."""
    return _HEADING_LINE_RE.sub("\\\\", text)


def unescape_headings(text: str) -> str:
    """``text`` as it was before :func:`escape_headings`."""
    return _ESCAPED_HEADING_RE.sub("", text) if "\\#" in text else text


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
    fixed = {k: escape_headings(v) for k, v in fixed.items()}
    for item in items:
        item.text = escape_headings(item.text)
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
