"""Issue 30: a conversation is the unit every ``hermes-host sessions`` command speaks, and
``sessions search`` shows where each hit matched.

The store is built the way an integration builds it — through :class:`ContextHost`, a
framework id as the first session's id (``oa-run-1``), and forced compressions with the
offline summariser that rotate it into ``oa demo #2`` and ``oa demo #3`` — and read back
through the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hermes_host.cli import cli
from hermes_host.cli.sessions.snippets import find_matches, highlight, snippet
from hermes_host.host import ContextHost
from hermes_host.store import Session, open_store

CONVERSATION = "oa-run-1"
MIDDLE_FACT = "ZEBRA-MOUNTAIN-42"  # said after the first rotation, archived by the second
LATE_FACT = "KIWI-HARBOUR-7"  # said in the newest session
ERROR_CODE = "ERRCODE-9F3A"  # in the middle of a ~6,000-character tool output


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _turn(session: Any, n: int, extra: str = "") -> None:
    session.add_user(f"question {n}: " + "lorem ipsum " * 120 + extra)
    call = {"id": f"call_{n}", "type": "function",
            "function": {"name": "grep", "arguments": "{}"}}
    session.add_assistant(f"looking {n}", [call])
    body = "dolor sit amet " * 200
    if n == 5:
        body = f"{body} {ERROR_CODE} happened here {body}"
    session.add_tool_result(f"call_{n}", f"result {n}: {body}", name="grep")
    session.add_assistant(f"answer {n}: " + "amet " * 30)
    session.end_turn()


@pytest.fixture(scope="module")
def store_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("conversations")
    config = folder / "config.yaml"
    config.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n")
    db = folder / "state.db"
    host = ContextHost.from_config(config, store=db)
    try:
        other = host.open_session(title="other", system_prompt="sys")
        other.add_user("an unrelated question")
        other.add_assistant("an unrelated answer")
        other.end_turn()
        session = host.open_session(title="oa demo", system_prompt="sys",
                                    session_id=CONVERSATION)
        for n in (1, 2, 3):
            _turn(session, n)
        assert session.compress(force=True).status == "committed"
        _turn(session, 4, f" remember {MIDDLE_FACT} please")
        _turn(session, 5)
        _turn(session, 6)
        assert session.compress(force=True).status == "committed"
        _turn(session, 7, f" and {LATE_FACT} too")
        assert session.conversation_id == CONVERSATION and session.id != CONVERSATION
    finally:
        host.close()
    return db


def _sessions(db: Path) -> list[Session]:
    """The conversation's sessions, root first, read from the store directly."""
    store = open_store(db)
    try:
        tip = store.get_session(store.window_marker(CONVERSATION).session_id)
        return [store.get_session(sid) for sid in store.lineage(tip.id)]
    finally:
        store.close()


# Every way to name the conversation: its id, a later session's id, a title, the newest
# session's numbered title, ``last``.
def _names(db: Path) -> list[str]:
    _, middle, tip = _sessions(db)
    return [CONVERSATION, middle.id, tip.id, "oa demo", "oa demo #2", "last"]


def test_the_store_is_a_conversation_of_three_sessions(store_db: Path) -> None:
    parts = _sessions(store_db)
    assert parts[0].id == CONVERSATION and len(parts) == 3
    assert {s.conversation_id for s in parts} == {CONVERSATION}
    assert [s.title for s in parts] == ["oa demo", "oa demo #2", "oa demo #3"]


def test_show_acts_on_the_whole_conversation_by_any_name(store_db: Path) -> None:
    parts = _sessions(store_db)
    stored = sum(s.message_count for s in parts)
    for name in _names(store_db):
        result = run("sessions", "show", name, "--store", str(store_db), "--json")
        assert result.exit_code == 0, (name, result.output)
        payload = json.loads(result.output)
        assert payload["conversation_id"] == CONVERSATION, name
        assert payload["session"]["id"] == parts[-1].id, name  # the live window's session
        assert [s["id"] for s in payload["sessions"]] == [s.id for s in parts], name
        assert payload["conversation"]["message_count"] == stored
        assert payload["conversation"]["session_count"] == 3
        assert payload["window"] and LATE_FACT in json.dumps(payload["window"])
        assert "recap" in payload
        plain = run("sessions", "show", name, "--store", str(store_db))
        assert plain.exit_code == 0, plain.output
        assert "conversation" in plain.output and CONVERSATION in plain.output
        assert "3 (root first)" in plain.output and parts[-1].id in plain.output
        assert f"{stored} stored in the conversation" in plain.output
        assert "ended: compression" not in plain.output


def test_show_only_session_is_the_one_session_named(store_db: Path) -> None:
    result = run("sessions", "show", CONVERSATION, "--only-session", "--store", str(store_db),
                 "--json")
    payload = json.loads(result.output)
    assert payload["session"]["id"] == CONVERSATION and payload["window"] == []
    assert "conversation_id" not in payload  # the old shape, exactly
    plain = run("sessions", "show", CONVERSATION, "--only-session", "--store", str(store_db))
    assert "ended: compression" in plain.output and "0 in the window" in plain.output
    assert "drop --only-session" in plain.output


def test_lineage_lists_every_session_of_the_conversation(store_db: Path) -> None:
    ids = [s.id for s in _sessions(store_db)]
    for name in _names(store_db):
        result = run("sessions", "lineage", name, "--store", str(store_db), "--json")
        assert result.exit_code == 0, (name, result.output)
        assert [s["id"] for s in json.loads(result.output)] == ids, name
        table = run("sessions", "lineage", name, "--store", str(store_db))
        assert all(sid in table.output for sid in ids), (name, table.output)
        assert f"Lineage of conversation {CONVERSATION}" in table.output
    alone = run("sessions", "lineage", CONVERSATION, "--only-session", "--store",
                str(store_db), "--json")
    assert [s["id"] for s in json.loads(alone.output)] == [CONVERSATION]


def test_export_writes_the_whole_conversation_by_any_name(store_db: Path) -> None:
    parts = _sessions(store_db)
    stored = sum(s.message_count for s in parts)
    for name in _names(store_db):
        result = run("sessions", "export", name, "--store", str(store_db))
        assert result.exit_code == 0, (name, result.output)
        lines = [json.loads(line) for line in result.output.splitlines()]
        assert lines[0] == {"role": "system", "content": "sys"}
        assert len(lines) == 1 + stored, name  # every row of every session, once
        text = json.dumps(lines)
        assert MIDDLE_FACT in text and LATE_FACT in text and "question 1:" in text
    root_only = run("sessions", "export", CONVERSATION, "--only-session", "--store",
                    str(store_db)).output.splitlines()
    assert len(root_only) == 1 + parts[0].message_count
    assert MIDDLE_FACT not in "".join(root_only)
    legacy = run("sessions", "export", CONVERSATION, "--lineage", "--store", str(store_db))
    assert len(legacy.output.splitlines()) == 1 + stored  # --lineage: now the default
    both = run("sessions", "export", CONVERSATION, "--lineage", "--only-session", "--store",
               str(store_db))
    assert both.exit_code == 2 and "contradict" in both.output


def test_search_session_searches_the_whole_conversation_by_any_name(store_db: Path) -> None:
    middle = _sessions(store_db)[1].id
    for name in _names(store_db):
        for fact in (MIDDLE_FACT, LATE_FACT):
            result = run("sessions", "search", fact, "--session", name, "--store",
                         str(store_db), "--json")
            assert result.exit_code == 0, (name, result.output)
            hits = json.loads(result.output)
            assert hits, (name, fact)
            assert all(h["conversation_id"] == CONVERSATION for h in hits)
            assert any(fact in h["content"] for h in hits)
        plain = run("sessions", "search", MIDDLE_FACT, "--session", name, "--store",
                    str(store_db))
        assert f"«{MIDDLE_FACT}»" in plain.output and middle in plain.output, name
    alone = run("sessions", "search", MIDDLE_FACT, "--session", CONVERSATION,
                "--only-session", "--store", str(store_db))
    assert alone.exit_code == 0 and "No matches in session oa-run-1 alone" in alone.output
    legacy = run("sessions", "search", MIDDLE_FACT, "--session", middle, "--no-lineage",
                 "--store", str(store_db), "--json")
    assert json.loads(legacy.output)  # --no-lineage: the session named only, as before
    bare = run("sessions", "search", MIDDLE_FACT, "--only-session", "--store", str(store_db))
    assert bare.exit_code == 2 and "need --session" in bare.output


def test_search_in_another_conversation_says_which_one_was_searched(store_db: Path) -> None:
    result = run("sessions", "search", MIDDLE_FACT, "--session", "other", "--store",
                 str(store_db))
    assert result.exit_code == 0
    assert "No matches in conversation" in result.output and "'other'" in result.output


def test_list_shows_conversations_and_sessions_on_request(store_db: Path) -> None:
    parts = _sessions(store_db)
    stored = sum(s.message_count for s in parts)
    listed = json.loads(run("sessions", "list", "--store", str(store_db), "--json").output)
    mine = next(c for c in listed if c["conversation_id"] == CONVERSATION)
    assert len(listed) == 2  # the two conversations, not four sessions
    assert mine["id"] == parts[-1].id and mine["sessions"] == 3 and mine["rotations"] == 2
    assert mine["conversation_messages"] == stored
    assert {"conversation_input_tokens", "conversation_output_tokens", "title",
            "source"} <= set(mine)
    table = run("sessions", "list", "--store", str(store_db))
    assert table.exit_code == 0
    row = next(line for line in table.output.splitlines() if CONVERSATION in line)
    assert "oa demo #3" in row and f"/{stored}" in row and " 3 " in row
    assert "conversation" in table.output and "sessions" in table.output

    per_session = json.loads(run("sessions", "list", "--sessions", "--store", str(store_db),
                                 "--json").output)
    assert len(per_session) == 4
    assert {s["id"] for s in per_session} >= {s.id for s in parts}
    assert all(set(s) == set(parts[0].to_dict()) for s in per_session)  # the session keys
    old_table = run("sessions", "list", "--sessions", "--store", str(store_db))
    assert old_table.exit_code == 0 and "Sessions in" in old_table.output
    assert all(s.id in old_table.output for s in parts)


def test_search_shows_the_match_highlighted_among_its_context(store_db: Path) -> None:
    result = run("sessions", "search", ERROR_CODE, "--store", str(store_db))
    assert result.exit_code == 0, result.output
    marked = [line for line in result.output.splitlines() if line.lstrip().startswith("▶")]
    assert len(marked) == 1 and f"«{ERROR_CODE}»" in marked[0]
    assert marked[0].lstrip().startswith("▶ tool:") and "happened here" in marked[0]
    context = [line for line in result.output.splitlines() if line.startswith("    ")]
    assert context and not any(ERROR_CODE in line for line in context)

    hits = json.loads(run("sessions", "search", ERROR_CODE, "--store", str(store_db),
                          "--json").output)
    assert len(hits) == 1
    hit = hits[0]
    assert len(hit["content"]) > 5_000 and not hit["content"][:200].count(ERROR_CODE)
    assert ERROR_CODE in hit["snippet"] and len(hit["snippet"]) < 250
    start, end = hit["snippet_matches"][0]
    assert hit["snippet"][start:end] == ERROR_CODE
    start, end = hit["matches"][0]
    assert hit["content"][start:end] == ERROR_CODE
    assert {"message_id", "session_id", "role", "content", "score", "active", "timestamp",
            "before", "after"} <= set(hit)  # the keys it always had


def test_search_highlights_words_and_stems_case_insensitively(store_db: Path) -> None:
    result = run("sessions", "search", "zebra-mountain-42", "--store", str(store_db))
    assert f"«{MIDDLE_FACT}»" in result.output
    looked = run("sessions", "search", "looked", "--store", str(store_db), "--json")
    for hit in json.loads(looked.output):
        start, end = hit["snippet_matches"][0]
        assert hit["snippet"][start:end].lower().startswith("look")


def test_unknown_names_exit_2_saying_what_was_tried(store_db: Path) -> None:
    for args in (["show", "nope"], ["lineage", "nope"], ["export", "nope"],
                 ["search", "x", "--session", "nope"]):
        result = run("sessions", *args, "--store", str(store_db))
        assert result.exit_code == 2, (args, result.output)
        assert "no conversation or session 'nope'" in result.output
        assert "conversation id" in result.output and "title" in result.output
        assert "hermes-host sessions list" in result.output
        assert "Traceback" not in result.output


def test_last_in_an_empty_store_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    open_store(db).close()
    result = run("sessions", "search", "x", "--session", "last", "--store", str(db))
    assert result.exit_code == 2 and "no sessions" in result.output


# -- the snippet itself ------------------------------------------------------------------


def test_snippet_is_a_window_around_the_first_match() -> None:
    text = "alpha " * 500 + "the NEEDLE here\n\n  and   there " + "omega " * 500
    matches = find_matches(text, "needle")
    assert [text[s:e] for s, e in matches] == ["NEEDLE"]
    cut = snippet(text, matches)
    assert cut.text.startswith("…") and cut.text.endswith("…")
    assert "NEEDLE here and there" in cut.text  # whitespace runs made one space
    assert [cut.text[s:e] for s, e in cut.matches] == ["NEEDLE"]
    assert highlight(cut.text, cut.matches).count("«NEEDLE»") == 1


def test_snippet_words_of_a_phrase_and_no_match() -> None:
    text = "first the deploy step, later the key rotation"
    spans = find_matches(text, "deploy key")
    assert [text[s:e] for s, e in spans] == ["deploy", "key"]
    whole = snippet(text, spans)
    assert whole.text == text and len(whole.matches) == 2
    assert find_matches(text, "absent") == []
    head = snippet("x" * 400, [])
    assert head.text.startswith("xxx") and head.text.endswith("…") and head.matches == []
