"""The offline summary says what the session learnt, without repeating itself (issue 14):
files with what changed across rounds, what a read file defines, a successful edit as
"applied" rather than its one-line echo, and a Goal that does not quote the snapshot again.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from llm_helpers import load_transcript, transcript_files

from hermes_host.llm import OfflineSummarizer, SummaryJob
from hermes_host.llm.offline import parse_sections
from hermes_host.llm.offline.actions import read_note


def summarize(messages: list[dict[str, Any]], **job: Any) -> str:
    job.setdefault("budget_tokens", 3000)
    return OfflineSummarizer().summarize(SummaryJob(prompt="", messages=messages, **job))


def _call(i: int, name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"Step {i}.", "tool_calls": [{
            "id": f"c{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": result},
    ]


UPDATED = "The file /repo/src/app/config.py has been updated successfully."


def test_a_files_note_survives_the_round_that_drops_its_action() -> None:
    first = [{"role": "user", "content": "Add a loader to config.py"},
             *_call(1, "Edit", {"file_path": "src/app/config.py", "old_string": "x = 1",
                                "new_string": "def load_settings(path):\n    return x"},
                    UPDATED)]
    s1 = summarize(first)
    files1 = parse_sections(s1)["Relevant Files"]
    assert "`src/app/config.py` (changed) — edited; adds `load_settings`" in files1
    # a later round knows nothing of the edit but the previous summary
    later = [{"role": "user", "content": "Now read the README"},
             *_call(2, "Read", {"file_path": "README.md"}, "# Demo\nUsage: run it")]
    s2 = summarize(later, previous_summary=s1)
    files2 = parse_sections(s2)["Relevant Files"]
    # what was done to it is carried too, and README.md, read this round, says so
    assert "`src/app/config.py` (changed) — edited; adds `load_settings`" in files2
    assert "`README.md` — read" in files2
    # a file read this round after a previous round edited it: newest first, each once
    third = [{"role": "user", "content": "Check config.py again"},
             *_call(3, "Read", {"file_path": "src/app/config.py"}, "def load_settings(p): ...")]
    files3 = parse_sections(summarize(third, previous_summary=s2))["Relevant Files"]
    assert "`src/app/config.py` (changed) — read, edited; adds `load_settings`" in files3


def test_a_successful_edit_is_applied_not_its_echo() -> None:
    msgs = [{"role": "user", "content": "Edit config"},
            *_call(1, "Edit", {"file_path": "src/app/config.py", "old_string": "a",
                               "new_string": "b"}, UPDATED)]
    actions = parse_sections(summarize(msgs))["Completed Actions"]
    assert "EDITED `src/app/config.py` — applied" in actions
    assert "1-line output" not in actions and "has been updated" not in actions


def test_what_a_read_file_defines_is_read_through_a_line_number_gutter() -> None:
    numbered = "     1→defmodule Spotter.Renderer do\n     2→  def render(lines) do\n" \
               "     3→  end\n    4\tdefp strip_ansi(text)\n"
    assert read_note("READ", numbered) == \
        "defines `Spotter.Renderer`, `render`, `strip_ansi`"


def test_the_goal_does_not_quote_the_snapshot_again() -> None:
    """A task whose markdown headings the summary escapes is still the snapshot's request:
    the Goal states the objective briefly instead of a second verbatim copy."""
    task = ("<pr_description>\nConsider the following PR description:\n"
            "astroid breaks pylint when a package lacks __init__.py\n### Steps to reproduce\n"
            + "Run pylint on the source tree and watch it fail.\n" * 6 + "</pr_description>")
    first = [{"role": "user", "content": task},
             *_call(1, "bash", {"command": "ls"}, "setup.py\nastroid")]
    s1 = summarize(first)
    again = [{"role": "user", "content": task},
             *_call(2, "bash", {"command": "pytest -q"}, "3 passed")]
    s2 = summarize(again, previous_summary=s1)
    sections = parse_sections(s2)
    assert "\\### Steps to reproduce" in sections["Historical Task Snapshot"]
    goal = sections["Goal"]
    assert goal == "Consider the following PR description:"
    assert s2.count("Run pylint on the source tree") == 6  # the snapshot's copy only


def test_a_long_output_keeps_its_ends_its_outline_and_its_true_size() -> None:
    from hermes_host.llm.offline.actions import bounded_output, output_size

    lines = [f"    {n}→  def handler_{n}(event) do" if n % 100 == 0 else f"    {n}→  x = {n}"
             for n in range(1, 3001)]
    original = "\n".join(lines)
    bounded = bounded_output(original)
    assert len(bounded) < len(original) // 4
    assert bounded.startswith(original[:2000]) and bounded.endswith(original[-2000:])
    assert "def handler_1500(event)" in bounded  # from the left-out middle
    assert output_size(bounded) == (original.count("\n") + 1, len(original))
    plain = "\n".join(f"row {n}" for n in range(4000))
    assert output_size(bounded_output(plain)) == (4000, len(plain))
    assert bounded_output("short") == "short"


def test_a_file_an_earlier_round_changed_outranks_files_only_named_since() -> None:
    first = [{"role": "user", "content": "Fix the loader"},
             *_call(1, "Edit", {"file_path": "src/app/config.py", "old_string": "a",
                                "new_string": "b"}, UPDATED)]
    s1 = summarize(first)
    # the next round only lists other files, several times each
    listing = "\n".join(f"src/app/mod{i}.py" for i in range(8))
    later = [{"role": "user", "content": "What else is there?"},
             *_call(2, "Bash", {"command": "ls src/app"}, listing),
             *_call(3, "Bash", {"command": "ls -R src/app"}, listing)]
    lines = parse_sections(summarize(later, previous_summary=s1))["Relevant Files"].splitlines()
    assert lines[0].startswith("- `src/app/config.py` (changed) — edited")
    assert any("`src/app/mod0.py`" in ln for ln in lines[1:])


def test_the_tail_of_a_clipped_path_is_not_a_file() -> None:
    msgs = [{"role": "user", "content": "Look at the parser"},
            *_call(1, "Bash", {"command": "grep -rn parse lib"},
                   "lib/spotter/transcripts/jsonl_par…ser.ex:12: def parse\n"
                   "lib/spotter/transcripts/session.ex:3: use Ash")]
    files = parse_sections(summarize(msgs))["Relevant Files"]
    assert "`lib/spotter/transcripts/session.ex`" in files
    assert "`ser.ex`" not in files


def test_a_rewrite_adds_what_the_file_did_not_hold_before_issue_14() -> None:
    """A whole-file write has no old text: the names the session saw in the file before —
    this round's read of it, or the previous summary's lines about it — stand for it, so
    the write "adds" its new definitions, not the ones the file already had."""
    path = "/repo/lib/app/render.ex"
    old = ("     1→defmodule App.Render do\n     2→  def render(lines) do\n     3→  end\n"
           "     4→  defp strip_ansi(text) do\n     5→  end\nend")
    new = ("defmodule App.Render do\n  def render(lines) do\n  end\n"
           "  defp strip_ansi(text), do: text\n  def render_enriched(lines) do\n  end\n"
           "  defp relativize_in_text(text), do: text\nend\n")
    first = [{"role": "user", "content": "Enrich the renderer"},
             *_call(1, "Read", {"file_path": path}, old)]
    rewrite = _call(2, "Write", {"file_path": path, "content": new},
                    f"The file {path} has been updated successfully.")

    def adds(summary: str) -> list[str]:
        line = next(ln for ln in parse_sections(summary)["Completed Actions"].splitlines()
                    if "WROTE" in ln)
        return re.findall(r"`([^`]+)`", line.split("; adds ", 1)[1].split(";")[0])

    # the read in the same round
    assert adds(summarize([*first, *rewrite])) == ["render_enriched", "relativize_in_text"]
    # the read in an earlier round: the previous summary says what the file defined
    s1 = summarize(first)
    assert "defines `App.Render`, `render`, `strip_ansi`" in s1
    later = [{"role": "user", "content": "go on"}, *rewrite]
    assert adds(summarize(later, previous_summary=s1)) == ["render_enriched",
                                                           "relativize_in_text"]
    # a file the session never saw: everything it defines is new
    assert adds(summarize(later))[:3] == ["App.Render", "render", "strip_ansi"]


def test_a_file_an_earlier_round_opened_outranks_paths_only_listed_since() -> None:
    """Issue 14: on claudecode-spotter-fa812bfe at 32K the test files the agent had read
    (and later edited) left *Relevant Files* for paths a later round's listings only named.
    A file the previous summary says was read ranks above paths this round only lists."""
    first = [{"role": "user", "content": "Look at the live view tests"},
             *_call(1, "Read", {"file_path": "test/web/live/session_live_test.exs"},
                    "     1→defmodule Web.SessionLiveTest do\n     2→  use ExUnit.Case\nend")]
    s1 = summarize(first)
    listing = "\n".join(f"assets/vendor/theme_{i}.css" for i in range(12))
    later = [{"role": "user", "content": "Find the stylesheets"},
             *_call(2, "Glob", {"pattern": "assets/**/*.css"}, listing),
             *_call(3, "Glob", {"pattern": "assets/vendor/*.css"}, listing)]
    lines = parse_sections(summarize(later, previous_summary=s1))["Relevant Files"].splitlines()
    at = next(i for i, ln in enumerate(lines) if "`test/web/live/session_live_test.exs`" in ln)
    listed = [i for i, ln in enumerate(lines) if "theme_" in ln]
    assert listed and at < min(listed), lines
    assert lines[at].endswith("— read; defines `Web.SessionLiveTest`")


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def test_the_index_holds_no_fragment_of_a_uuid_issue_14() -> None:
    """Issue 14: on claudecode-spotter-8463c716 a third of the *Critical Context* index
    was dash-separated groups of the UUIDs in the transcript fixtures the agent read
    (``79ed4dd9``, ``d38ce0621136``) — names of nothing, taking the place of real ones. A
    group of a UUID is not a hex id; a commit hash still is."""
    path = next((p for p in transcript_files()
                 if p.name == "claudecode-spotter-8463c716.jsonl"), None)
    if path is None:
        pytest.skip("transcript claudecode-spotter-8463c716 not present")
    msgs = load_transcript(path)[:60]
    text = "\n".join(json.dumps(m) for m in msgs)
    groups = {g for u in _UUID.findall(text) for g in u.split("-") if len(g) >= 7}
    assert len(groups) > 20  # the fixtures the agent read are full of UUIDs
    summary = summarize(msgs, budget_tokens=6000)
    index = parse_sections(summary)["Critical Context"]
    assert "Identifiers: " in index
    assert not groups & set(re.findall(r"`([^`]+)`", index))
    # a commit hash a tool printed is still an identifier
    commit = [{"role": "user", "content": "Commit it"},
              *_call(1, "Bash", {"command": "git commit -am fix"},
                     "[main 04fff71] fix the parser\n 1 file changed")]
    assert "`04fff71`" in summarize(commit)


def test_a_round_of_deeper_paths_keeps_the_earlier_root_issue_14() -> None:
    """Issue 14: on claudecode-spotter-fa812bfe at 32K the 9th and 10th rounds read only
    two LiveView modules (and the assistant named them bare), and the project root moved into
    ``lib/spotter_web/live``: the files changed were then spelled ``pane_list_live.ex``
    beside the earlier rounds' ``lib/spotter_web/live/pane_list_live.ex``. An earlier
    round's root holds while it still holds the paths."""
    root = "/home/USER/projects/spotter-worktrees/spotter-a0y"
    live = f"{root}/lib/spotter_web/live"
    reads = [{"role": "user", "content": "Compile and check the modified files"},
             *_call(1, "Read", {"file_path": f"{live}/pane_list_live.ex"},
                    "     1→defmodule SpotterWeb.PaneListLive do\nend"),
             *_call(2, "Read", {"file_path": f"{live}/session_live.ex"},
                    "     1→defmodule SpotterWeb.SessionLive do\nend"),
             *_call(4, "Grep", {"pattern": "terminal_scrolled",
                                "path": f"{live}/pane_view_live.ex"}, "174:  def handle_event"),
             *_call(3, "Edit", {"file_path": f"{live}/pane_list_live.ex", "old_string": "a",
                                "new_string": "def session_status_badge(assigns), do: 1"},
                    f"The file {live}/pane_list_live.ex has been updated successfully."),
             {"role": "assistant", "content": "Compilation clean: pane_list_live.ex and "
              "session_live.ex build. Now the Status column of the hidden table."}]
    earlier = summarize([{"role": "user", "content": "Work on the bead"},
                         *_call(9, "Read", {"file_path": f"{root}/mix.exs"}, "defmodule M do"),
                         *_call(8, "Read", {"file_path": f"{root}/lib/spotter/a.ex"}, "x"),
                         *_call(7, "Read", {"file_path": f"{root}/test/a_test.exs"}, "y")])
    assert f"Project root: `{root}`" in earlier
    later = summarize(reads, previous_summary=earlier)
    assert f"Project root: `{root}`" in later
    files = parse_sections(later)["Relevant Files"]
    assert "`lib/spotter_web/live/pane_list_live.ex` (changed)" in files
    assert "`pane_list_live.ex` (changed)" not in files
