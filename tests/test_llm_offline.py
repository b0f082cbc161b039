"""The offline extractive summariser: the eleven sections of R-7.2 on every real transcript,
unattended sessions, iterative updates (R-6.6), temporal anchoring (R-7.3), pruned-skill
markers (R-13.2), focus topics, budgets and messy input."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from llm_helpers import load_transcript, transcript_files, transcript_params

from hermes_host.llm import OfflineSummarizer, SummaryJob
from hermes_host.llm.offline import CRON_GOAL, NO_USER_QUESTIONS, SECTIONS, parse_sections
from hermes_host.redact import REDACTED
from hermes_host.testing.secrets_corpus import secret_corpus
from hermes_host.tokens import count_text

TODAY = dt.date(2026, 12, 2)
ACTION_RE = re.compile(r"^(\d+)\. [A-Z_]+ .+ — .+ \[tool: [^\]]+\]")
NOT_REQUESTS = ("<system-reminder>", "<local-command-", "<command-name>", "Caveat:",
                "Base directory for this skill", "This session is being continued")


def summarize(messages: list[dict[str, Any]], **job: Any) -> str:
    return OfflineSummarizer().summarize(SummaryJob(prompt="", messages=messages, **job))


def assert_eleven_sections(text: str) -> dict[str, str]:
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings == list(SECTIONS)
    return parse_sections(text)


def first_request(messages: list[dict[str, Any]]) -> str | None:
    """Independent restatement of 'the first real user request'."""
    for m in messages:
        content = m.get("content")
        if m.get("role") != "user" or m.get("name") == "aider_console":
            continue
        text = content.strip() if isinstance(content, str) else ""
        slash_command = text.startswith("/") and "\n" not in text and len(text) < 100
        if text and not text.startswith(NOT_REQUESTS) and not slash_command:
            return text
    return None


def call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_turn(call_id: str, name: str, args: Any, result: str,
              text: str | None = None) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": text, "tool_calls": [call(call_id, name, args)]},
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": result},
    ]


def coding_session(round_: int) -> list[dict[str, Any]]:
    """A small, realistic coding session; round 1 ends with a failing test, round 2 fixes it."""
    if round_ == 1:
        return [
            {"role": "user", "content": "Fix the config loader in src/app/config.py. Do not "
             "change the public API. Why does load() crash on empty files?"},
            {"role": "assistant", "content": "An empty file parses to None, so load() crashes. "
             "I decided to return defaults instead because callers expect a mapping."},
            *tool_turn("c1", "read_file", {"path": "src/app/config.py"}, "line\n" * 120),
            *tool_turn("c2", "bash", {"command": "cd /repo && pytest -q tests/test_config.py"},
                       "F.\nTraceback (most recent call last):\n  File \"x.py\", line 3\n"
                       "TypeError: 'NoneType' object is not subscriptable\n"
                       "1 failed, 1 passed in 0.12s\n<returncode>1</returncode>"),
            *tool_turn("c3", "edit_file", {"file_path": "src/app/config.py",
                                           "old": "data = yaml.safe_load(f)",
                                           "new": "data = yaml.safe_load(f) or {}"}, "ok"),
        ]
    return [
        {"role": "user", "content": "Now run the tests again please."},
        *tool_turn("c4", "bash", {"command": "cd /repo && pytest -q tests/test_config.py"},
                   "..\n2 passed in 0.10s\n<returncode>0</returncode>"),
        *tool_turn("c5", "write_file", {"file_path": "CHANGELOG.md", "content": "fixed"}, "ok"),
        {"role": "assistant", "content": "Both tests pass now; I will use the same guard in "
         "load_env() instead of a try/except because it is clearer."},
    ]


# --------------------------------------------------------------------------------------------
# real transcripts


@pytest.mark.parametrize("path", transcript_params())
def test_eleven_sections_on_real_transcripts_r7_2(path: Path) -> None:
    messages = load_transcript(path)
    out = summarize(messages, budget_tokens=2000, today=TODAY)
    sections = assert_eleven_sections(out)
    request = first_request(messages)
    snapshot = sections["Historical Task Snapshot"]
    if request is not None:
        # verbatim, with markdown headings inside the request escaped (``\#``)
        head = re.sub(r"(?m)^#", r"\\#", request[:300].strip()).replace("\r\n", "\n")
        assert snapshot.replace("\r\n", "\n").startswith(head), "snapshot is not verbatim"
        assert "User asked" not in snapshot
    assert "Identifiers: `" in sections["Critical Context"]
    assert count_text(out) <= 2000
    assert out == summarize(messages, budget_tokens=2000, today=TODAY)  # deterministic
    actions = [ln for ln in sections["Completed Actions"].splitlines() if ACTION_RE.match(ln)]
    if any(m.get("tool_calls") for m in messages):
        assert actions, "tool calls were made but no action was listed"
        assert all(ln.endswith("(done before 2026-12-02)") for ln in actions)
        numbers = [int(ACTION_RE.match(ln).group(1)) for ln in actions]  # type: ignore[union-attr]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("budget", [600, 1200, 4000])
def test_budget_is_respected_on_the_largest_transcript(budget: int) -> None:
    largest = max(transcript_files(), key=lambda p: p.stat().st_size)
    out = summarize(load_transcript(largest), budget_tokens=budget)
    assert_eleven_sections(out)
    assert count_text(out) <= budget
    if budget == 600:
        assert re.search(r"^\d+–\d+\. \(\d+ earlier actions condensed", out, re.MULTILINE)


# --------------------------------------------------------------------------------------------
# synthetic sessions: exact expectations


def test_sections_are_filled_from_structure_r7_2() -> None:
    out = summarize(coding_session(1), budget_tokens=3000)
    s = assert_eleven_sections(out)
    assert s["Historical Task Snapshot"].startswith("Fix the config loader in src/app/config.py.")
    assert "Do not change the public API." in s["Constraints & Preferences"]
    actions = s["Completed Actions"].splitlines()
    assert actions[0].startswith("1. READ `src/app/config.py` — 120 lines")
    assert actions[0].endswith("[tool: read_file]")
    assert actions[1].startswith("2. RAN `cd /repo && pytest -q tests/test_config.py` — exit 1")
    assert "TypeError: 'NoneType' object is not subscriptable" in actions[1]
    assert actions[2].startswith("3. EDITED `src/app/config.py`")
    assert "Working directory: `/repo`" in s["Active State"]
    assert "Changed files: `src/app/config.py`" in s["Active State"]
    assert "1 failed, 1 passed" in s["Active State"]
    assert "TypeError: 'NoneType' object is not subscriptable" in s["Blocked"]
    assert "because callers expect a mapping" in s["Key Decisions"]
    assert s["Resolved Questions"].startswith("- Q: Why does load() crash on empty files?")
    assert "An empty file parses to None" in s["Resolved Questions"]
    assert "`src/app/config.py` (changed)" in s["Relevant Files"]
    assert "`TypeError`" in s["Critical Context"]
    assert s["Pruned Skills"] == "None."
    assert "done before" not in out and not re.search(r"\d{4}-\d{2}-\d{2}", out)


def test_unattended_session_uses_cron_wording_r7_2_r7_6() -> None:
    messages = [
        {"role": "system", "content": "You are a nightly maintenance agent."},
        {"role": "assistant", "content": "Rotating the nightly logs under /var/log/app."},
        *tool_turn("n1", "bash", {"command": "logrotate -f /etc/logrotate.d/app"}, ""),
        *tool_turn("n2", "bash", "du -sh /var/log/app", "12M\t/var/log/app"),
    ]
    s = assert_eleven_sections(summarize(messages))
    goal = s["Goal"]
    assert goal.splitlines()[0] == CRON_GOAL
    assert "Rotating the nightly logs" in goal
    assert "user" not in goal.lower().replace(CRON_GOAL.lower(), "")
    assert s["Resolved Questions"] == NO_USER_QUESTIONS
    assert "User asked" not in s["Historical Task Snapshot"]
    assert "2. RAN `du -sh /var/log/app` — output `12M\t/var/log/app`" in s["Completed Actions"] \
        or "2. RAN `du -sh /var/log/app`" in s["Completed Actions"]


def test_update_round_preserves_and_continues_numbering_r6_6() -> None:
    first = summarize(coding_session(1), budget_tokens=3000, today=TODAY)
    second = summarize(coding_session(2), previous_summary=first, budget_tokens=3000,
                       today=dt.date(2026, 12, 3))
    s1, s2 = parse_sections(first), assert_eleven_sections(second)
    prev_actions = [ln for ln in s1["Completed Actions"].splitlines() if ACTION_RE.match(ln)]
    assert len(prev_actions) == 3
    for line in prev_actions:  # PRESERVE, verbatim, including their original date
        assert line in s2["Completed Actions"]
    new = [ln for ln in s2["Completed Actions"].splitlines() if ACTION_RE.match(ln)]
    assert [int(ACTION_RE.match(ln).group(1)) for ln in new] == [1, 2, 3, 4, 5]  # type: ignore
    assert new[3].startswith("4. RAN `cd /repo && pytest -q tests/test_config.py` — exit 0")
    assert new[3].endswith("(done before 2026-12-03)")
    # information carries across rounds
    assert s2["Historical Task Snapshot"] == s1["Historical Task Snapshot"]
    assert "Do not change the public API." in s2["Constraints & Preferences"]
    assert "because callers expect a mapping" in s2["Key Decisions"]
    assert "I will use the same guard" in s2["Key Decisions"]
    assert "Why does load() crash" in s2["Resolved Questions"]
    assert "`src/app/config.py`" in s2["Relevant Files"] and "CHANGELOG.md" in s2["Relevant Files"]
    # the failing test was re-run successfully: no longer blocked
    assert "TypeError" in s1["Blocked"]
    assert s2["Blocked"] == "None."
    assert "2 passed" in s2["Active State"]
    assert s2["Goal"] == "Latest user request: Now run the tests again please."
    assert s1["Goal"] == "Fix the config loader in src/app/config.py."


def test_update_round_over_an_llm_written_summary_r6_6() -> None:
    """The previous summary may come from the LLM (looser format): nothing is lost."""
    previous = (
        "[CONTEXT SUMMARY]: ## Historical Task Snapshot\nBuild the billing API.\n\n"
        "## Completed Actions\n1. 2026-11-30 deployed api to staging\n- ran the migrations\n\n"
        "## Blocked\n- `psql: FATAL: role \"ci\" does not exist` — from RAN `psql -U ci`\n\n"
        "## Relevant Files\n- `api/app.py` (changed)\n"
    )
    new = tool_turn("p1", "bash", {"command": "pytest -q"}, "3 passed\n<returncode>0</returncode>")
    s = assert_eleven_sections(summarize(new, previous_summary=previous))
    lines = s["Completed Actions"].splitlines()
    assert lines[0] == "1. 2026-11-30 deployed api to staging"
    assert lines[1] == "2. ran the migrations"
    assert lines[2].startswith("3. RAN `pytest -q` — exit 0")
    assert s["Historical Task Snapshot"] == "Build the billing API."
    assert "psql: FATAL" in s["Blocked"]  # not resolved by an unrelated step
    assert "`api/app.py`" in s["Relevant Files"]


def test_update_round_on_a_real_transcript_keeps_numbering() -> None:
    messages = max(transcript_files(), key=lambda p: p.stat().st_size)
    msgs = load_transcript(messages)
    half = len(msgs) // 2
    first = summarize(msgs[:half], budget_tokens=2000)
    second = summarize(msgs[half:], previous_summary=first, budget_tokens=2000)
    assert_eleven_sections(second)

    def numbers(text: str) -> list[int]:
        body = parse_sections(text)["Completed Actions"]
        nums = [int(n) for n in re.findall(r"^(\d+)\.", body, re.MULTILINE)]
        for a, b in re.findall(r"^(\d+)–(\d+)\.", body, re.MULTILINE):
            nums += list(range(int(a), int(b) + 1))
        return sorted(set(nums))

    n1, n2 = numbers(first), numbers(second)
    assert n1 == list(range(1, len(n1) + 1))
    assert n2 == list(range(1, len(n2) + 1))  # every earlier number still accounted for
    assert len(n2) > len(n1)
    assert parse_sections(second)["Historical Task Snapshot"] == \
        parse_sections(first)["Historical Task Snapshot"]


def test_pruned_skill_markers_are_copied_verbatim_r13_2() -> None:
    marker_a = "[SKILL_PRUNED: deploy-k8s — 3,412 tokens; reload with /skill deploy-k8s]"
    marker_b = "[SKILL_PRUNED: pdf-tools (v2) body removed]"
    messages = [
        {"role": "user", "content": f"Deploy it.\n{marker_a}"},
        *tool_turn("s1", "bash", {"command": "kubectl apply -f k8s/"}, f"applied\n{marker_b}"),
    ]
    first = summarize(messages)
    assert parse_sections(first)["Pruned Skills"] == f"{marker_a}\n{marker_b}"
    again = summarize([{"role": "user", "content": "and now?"}], previous_summary=first)
    assert parse_sections(again)["Pruned Skills"] == f"{marker_a}\n{marker_b}"
    tiny = summarize(messages * 40, budget_tokens=300)
    assert marker_a in tiny and marker_b in tiny  # never trimmed


def test_focus_topic_comes_first_and_survives_the_budget() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Tidy the repository."}]
    for i in range(60):
        messages += tool_turn(f"f{i}", "bash", {"command": f"ruff check module_{i}.py"},
                              "All checks passed!")
    messages += tool_turn("db", "bash", {"command": "alembic upgrade head  # database"},
                          "INFO upgraded database schema to 0042")
    messages += [{"role": "assistant",
                  "content": "I chose ruff because it is fast. The database migration is "
                  "needed because the schema changed."}]
    for i in range(60, 120):
        messages += tool_turn(f"f{i}", "bash", {"command": f"ruff check module_{i}.py"},
                              "All checks passed!")
    plain = parse_sections(summarize(messages, budget_tokens=700))
    focused = parse_sections(summarize(messages, budget_tokens=700, focus_topic="database"))
    assert "alembic upgrade head" not in plain["Completed Actions"]
    assert "alembic upgrade head" in focused["Completed Actions"]
    assert focused["Key Decisions"].splitlines()[0].startswith("- The database migration")


def test_memory_context_is_embedded_with_its_source_r11_4() -> None:
    out = summarize(coding_session(1), memory_context="User prefers uv over pip.\n"
                    "DB_PASSWORD=Sup3rS3cret!")
    ctx = parse_sections(out)["Critical Context"]
    assert "Memory context (source: memory providers): User prefers uv over pip." in ctx
    assert "Sup3rS3cret!" not in out and REDACTED in ctx


def test_no_secret_reaches_the_summary_even_from_raw_messages_r7_1() -> None:
    """The job's messages should already be redacted; the summariser redacts anyway."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Set up the deployment."}]
    for i, (text, _) in enumerate(secret_corpus()):
        if i % 2:
            messages += tool_turn(f"k{i}", "bash", {"command": text}, text)
        else:
            messages.append({"role": "assistant", "content": text})
    out = summarize(messages, budget_tokens=6000)
    leaked = [secret for _, secret in secret_corpus() if secret in out]
    assert leaked == []
    assert "Credentials were present" in parse_sections(out)["Critical Context"]


def test_messy_input_does_not_break_it() -> None:
    huge = "x" * 2_000_000 + "\nValueError: the very last line\n"
    messages: list[Any] = [
        "not a dict",
        {"role": "user", "content": [{"type": "text", "text": "Look at this image"},
                                     {"type": "image_url", "image_url": {"url": "data:..."}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            call("m1", "bash", "{not json"),
            {"id": "m2"},  # no function at all
            call("m3", "str_replace_editor", {"command": "view", "path": "/w/a.py"}),
            call("m4", "grep", {"pattern": "TODO", "path": "src"}),
            call("m5", "weird_tool", {"x": [1, 2], "y": {"z": None}}),
            "garbage call",
        ]},
        {"role": "tool", "tool_call_id": "m1", "content": huge},
        {"role": "tool", "tool_call_id": "m3", "content": None},
        {"role": "tool", "tool_call_id": "m4", "content": [{"type": "text", "text": "src/a:1"}]},
        {"role": "tool", "tool_call_id": "m5", "content": 42},
        {"role": "assistant"},
        {"role": "user", "content": None},
    ]
    out = summarize(messages, budget_tokens=1500, today=TODAY)
    s = assert_eleven_sections(out)
    assert s["Historical Task Snapshot"] == "Look at this image"
    acts = s["Completed Actions"]
    assert "1. RAN `{not json`" in acts and "ValueError: the very last line" in acts
    assert "READ `/w/a.py`" in acts and "SEARCHED `TODO` in `src`" in acts
    assert "WEIRD_TOOL (x=[1, 2]" in acts
    assert count_text(out) <= 1500


def test_non_zero_exit_without_an_error_line_is_blocked() -> None:
    messages = [{"role": "user", "content": "Build it."},
                *tool_turn("b1", "bash", {"command": "make dist"}, "<returncode>2</returncode>")]
    s = assert_eleven_sections(summarize(messages))
    assert s["Blocked"] == "- `exit 2` — from RAN `make dist` [tool: bash]"
    assert "1. RAN `make dist` — exit 2" in s["Completed Actions"]


def test_terminal_escape_codes_do_not_reach_error_lines() -> None:
    out = "\x1b[?2004lcat: /data/x.csv: No such file or directory\n\x1b[?2004h"
    messages = [{"role": "user", "content": "Read the data."},
                *tool_turn("e1", "execute_bash", {"command": "cat /data/x.csv"}, out)]
    s = assert_eleven_sections(summarize(messages))
    assert s["Blocked"].startswith("- `cat: /data/x.csv: No such file or directory` — from RAN")
    assert "\x1b" not in summarize(messages)


def test_front_end_commands_are_not_requests() -> None:
    messages = [
        {"role": "user", "content": "/clear"},
        {"role": "user", "content": "<system-reminder>\nhook output\n</system-reminder>"},
        {"role": "user", "content": "Port the CLI to click."},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "/ex"},
    ]
    s = assert_eleven_sections(summarize(messages))
    assert s["Historical Task Snapshot"] == "Port the CLI to click."
    assert s["Goal"] == "Port the CLI to click."


def test_empty_job_still_has_eleven_sections() -> None:
    s = assert_eleven_sections(summarize([]))
    assert s["Goal"].startswith(CRON_GOAL)
    assert s["Completed Actions"] == "None."


# --------------------------------------------------------------------------------------------
# what a continuing agent reads (issue 14): true sizes, real decisions, counts that add up


def test_a_pruned_output_is_described_by_what_it_stood_for() -> None:
    """``hermes-host demo`` showed "READ memory/markdown.py — 1 line (82 chars)" when 2,823
    characters were read: the summariser measured the prune step's one-line stand-in."""
    messages = [
        {"role": "user", "content": "Read the markdown provider."},
        *tool_turn("r1", "read_file", {"path": "memory/markdown.py"},
                   "[read_file] read memory/markdown.py from line 1 (2,823 chars)"),
        *tool_turn("r2", "bash", {"command": "pytest -q"},
                   "[terminal] ran `pytest -q` -> exit 1, 47 lines output"),
    ]
    actions = parse_sections(summarize(messages, budget_tokens=2000))["Completed Actions"]
    assert "2,823 chars" in actions and "(82 chars)" not in actions and "1 line" not in actions
    ran = next(ln for ln in actions.splitlines() if "RAN `pytest -q`" in ln)
    assert "exit 1, 47 lines output" in ran and "[terminal]" not in ran


def test_a_list_of_tools_is_not_a_decision() -> None:
    messages = [
        {"role": "user", "content": "Find where the store is opened."},
        {"role": "assistant", "content": "I'll use grep, read_file. We decided to open the "
         "store read-only for browsing because a 0444 file must stay untouched."},
    ]
    decisions = parse_sections(summarize(messages, budget_tokens=2000))["Key Decisions"]
    assert "I'll use grep" not in decisions
    assert "because a 0444 file must stay untouched" in decisions


def test_condensed_actions_count_every_action_they_stand_for() -> None:
    """"1–14. (4 earlier actions condensed…: 2 READ, 1 SEARCHED)": an earlier condensed line
    was counted as one action.  The counts now add up to the range, and the files survive."""
    previous = (
        "## Historical Task Snapshot\nFix the parser.\n\n## Completed Actions\n"
        "1–10. (10 earlier actions condensed to fit the summary budget: 6 READ, 4 RAN)\n"
        + "\n".join(f"{n}. EDITED `src/mod{n}.py` — ok [tool: edit]" for n in range(11, 15))
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go on with the parser."}]
    for n in range(40):
        messages += tool_turn(f"c{n}", "bash", {"command": f"pytest -q tests/t{n}.py"},
                              f"{n} passed\n<returncode>0</returncode>")
    actions = parse_sections(
        summarize(messages, previous_summary=previous, budget_tokens=700)
    )["Completed Actions"]
    line = next(ln for ln in actions.splitlines() if re.match(r"^\d+–\d+\. \(", ln))
    m = re.match(r"^(\d+)–(\d+)\. \((\d+) earlier actions condensed[^:]*: ([^;)]*)", line)
    assert m, line
    low, high, total = int(m.group(1)), int(m.group(2)), int(m.group(3))
    assert low == 1 and total == high - low + 1
    counts = [int(n) for n in re.findall(r"(\d+) [A-Za-z_]+", m.group(4))]
    assert sum(counts) == total
    assert "`src/mod11.py`" in line  # what was changed is still named


def test_a_request_after_a_no_request_snapshot_becomes_the_snapshot() -> None:
    """The first compression of a session whose request sat in the protected head wrote
    "No user request in this span"; later rounds kept that placeholder for good."""
    previous = "## Historical Task Snapshot\nNo user request in this span. Only tool activity."
    out = parse_sections(summarize(
        [{"role": "user", "content": "Work on bead spotter-4te."}],
        previous_summary=previous, budget_tokens=2000,
    ))
    assert out["Historical Task Snapshot"] == "Work on bead spotter-4te."
    assert out["Goal"].count("Work on bead spotter-4te.") <= 1


def _spotter(name: str) -> list[Any]:
    path = next((p for p in transcript_files() if p.name == f"{name}.jsonl"), None)
    if path is None:
        pytest.skip(f"transcript {name} not present")
    return load_transcript(path)


def test_update_rounds_merge_the_index_each_name_once_issue_14() -> None:
    """Issue 14 (deliverable 2: merge, do not re-condense): over ten update rounds of a real
    long session the Critical Context index lists every identifier, URL and error once —
    the carried index lines used to be copied verbatim beside the new ones, so one name
    (``session_live``) filled several lines and the budget pushed real facts out."""
    msgs = _spotter("claudecode-spotter-8463c716")
    step = len(msgs) // 10
    summary: str | None = None
    for start in range(0, step * 10, step):
        summary = summarize(msgs[start:start + step], previous_summary=summary,
                            budget_tokens=3000)
    assert summary is not None
    body = parse_sections(summary)["Critical Context"]
    names = [n for line in body.splitlines() if line.startswith("- Identifiers: ")
             for n in re.findall(r"`([^`]+)`", line)]
    assert len(names) >= 20
    assert len(names) == len({n.lower() for n in names})
    for label in ("URLs", "Figures", "Error messages seen"):
        assert sum(line.startswith(f"- {label}: ") for line in body.splitlines()) <= 1


def test_an_edit_says_what_it_changed_issue_14() -> None:
    """Issue 14 (files touched *with what changed*): an edit's action line names what the
    new text adds, read from the call's arguments — the tool's own result ("The file … has
    been updated") is the same for every edit."""
    msgs = _spotter("claudecode-spotter-258c7280")
    edits = [
        json.loads(call["function"]["arguments"])
        for m in msgs for call in (m.get("tool_calls") or [])
        if call.get("function", {}).get("name") == "Edit"
    ]
    assert edits
    actions = parse_sections(summarize(msgs, budget_tokens=200_000))["Completed Actions"]
    edited = [line for line in actions.splitlines() if " EDITED " in f" {line}"]
    with_note = [line for line in edited if "; adds `" in line or "; around `" in line]
    assert len(with_note) >= len(edited) // 2
    # the names shown come from the edit's new text
    from hermes_host.llm.offline.actions import change_note
    note = next(n for e in edits if (n := change_note("EDITED", e)))
    shown = re.findall(r"`([^`]+)`", note)
    assert any(all(s in e.get("new_string", "") for s in shown) for e in edits)


def _ten_rounds(name: str) -> tuple[list[dict[str, Any]], list[str], list[set[str]]]:
    """Ten update rounds over a real session at a 3,000-token budget: the messages, each
    round's summary and each round's artifacts (as the recall metric extracts them)."""
    from hermes_host.evaluation.artifacts import extract_artifacts, message_text

    msgs = _spotter(name)
    step = len(msgs) // 10
    summary: str | None = None
    summaries: list[str] = []
    rounds: list[set[str]] = []
    for start in range(0, step * 10, step):
        chunk = msgs[start:start + step]
        rounds.append(set().union(*(extract_artifacts(message_text(m)) for m in chunk)))
        summary = summarize(chunk, previous_summary=summary, budget_tokens=3000)
        summaries.append(summary)
    return msgs, summaries, rounds


def test_paths_keep_the_sessions_own_spelling_across_rounds_issue_14() -> None:
    """Issue 14 (recall after the 10th compression): the project root paths are shortened
    below is the one the session's relative spellings use (``lib/spotter/…``), and it stays
    the same from round to round — a root picked afresh each round (``…/lib``, ``…/test``)
    left fragments such as ``spotter_web/live/x_test.exs`` that name nothing the agent writes."""
    from hermes_host.evaluation.artifacts import message_text

    msgs, summaries, _ = _ten_rounds("claudecode-spotter-258c7280")
    roots = {m.group(1) for s in summaries
             if (m := re.search(r"Project root: `([^`]+)`", s))}
    assert len(roots) == 1
    (root,) = roots
    assert not re.search(r"/(lib|test|src|priv|config)(/|$)", root)
    text = "\n".join(message_text(m) for m in msgs)
    listed = [re.sub(r"^- `([^`]+)`.*$", r"\1", line)
              for line in parse_sections(summaries[-1])["Relevant Files"].splitlines()]
    assert len(listed) >= 10
    # a listed path the session spelled relatively, or one below the root it spelled in
    # full (``config/config.exs``, read as ``<root>/config/config.exs``), names a file
    fragments = [p for p in listed if not p.startswith("/")
                 and not re.search(r"(?<![\w/.-])" + re.escape(p) + r"(?!\w)", text)
                 and f"{root}/{p}" not in text]
    assert fragments == []


def test_names_the_session_keeps_using_survive_ten_rounds_issue_14() -> None:
    """Issue 14 (iterative updates keep what is still live): a name of the first round that
    the session uses again in at least three later rounds is still in the summary after the
    tenth — carried names the new turns use again rank before names one tool output
    mentioned once."""
    _, summaries, rounds = _ten_rounds("claudecode-spotter-258c7280")
    recurring = {a for a in rounds[0] if sum(a in r for r in rounds[1:]) >= 3}
    assert len(recurring) >= 30
    kept = {a for a in recurring if a in summaries[-1]}
    assert len(kept) >= 0.6 * len(recurring)
