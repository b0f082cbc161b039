"""The topic router on its own (R-3.1, R-11.3, R-1.4, R-6.6, R-6.9, R-14.2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pluggy
import pytest

from hermes_host import SelectRequest, SelectResult, hookspecs
from hermes_host.messages import SUMMARY_PREFIX, check_invariants, is_summary, text_of
from hermes_host.tokens import count_messages
from hermes_topic_router import TopicRouter, TopicRouterOptionsError
from hermes_topic_router.engine import NOTE_END, NOTE_START

SYSTEM = {"role": "system", "content": "You are a helpful coding agent."}

DB = [
    "Write an alembic migration that adds an email_verified column to the users table.",
    "The alembic migration fails on sqlite: ALTER TABLE users cannot add a NOT NULL column.",
    "Make the users migration batch_alter_table so sqlite accepts the email_verified column.",
    "Add a downgrade to the alembic migration that drops email_verified from users.",
]
CSS = [
    "Restyle the navbar header with css flexbox so the logo sits left and links right.",
    "The navbar links wrap on narrow screens; use a flexbox media query for the header.",
    "Give the navbar header a sticky position and a subtle box-shadow in the css.",
    "The css box-shadow of the sticky navbar flickers in Safari; fix the header styles.",
]


def _reply(text: str) -> dict:
    return {"role": "assistant", "content": f"Done: {text.lower()} Updated the relevant files."}


def _req(messages, state=None, budget=100_000) -> SelectRequest:
    return SelectRequest(
        session_id="s1",
        messages=messages,
        incoming_message=messages[-1] if messages and messages[-1]["role"] == "user" else None,
        budget_tokens=budget,
        state=state or {},
    )


def _drive(router: TopicRouter, requests: list[str], system: bool = True):
    """Send ``requests`` one turn at a time, like the host: window grows, state round-trips."""
    window = [SYSTEM] if system else []
    state: dict = {}
    results: list[SelectResult] = []
    for text in requests:
        window.append({"role": "user", "content": text})
        result = router.select_context(request=_req(list(window), state))
        json.dumps(result.state)  # branch state must be plain JSON
        state = result.state
        results.append(result)
        window.append(_reply(text))
    return window, state, results


def test_switches_between_topics_and_sends_only_the_branch_R_3_1():
    requests = [DB[0], DB[1], CSS[0], CSS[1], DB[2], CSS[2], DB[3]]
    _, _, results = _drive(TopicRouter(), requests)
    routes = [r.decision["route"] for r in results]
    topics = [r.decision["topic"] for r in results]
    assert routes[0] == "new" and routes[2] == "new", routes
    assert topics[0] == topics[1] == topics[4] == topics[6]
    assert topics[2] == topics[3] == topics[5] != topics[0]
    assert routes[4] == "switch" and routes[5] == "switch"

    db_turn = results[6]  # DB[3]: back on the database branch
    sent = [text_of(m) for m in db_turn.messages]
    assert db_turn.messages[0] == SYSTEM, "system message unchanged at index 0"
    assert any(DB[0] in t for t in sent) and any(DB[2] in t for t in sent)
    assert not any(CSS[0] in t for t in sent) and not any(CSS[1] in t for t in sent)
    assert any(CSS[2] in t for t in sent), "the turn right before is kept (keep_recent_turns)"
    assert check_invariants(db_turn.messages) == []
    decision = db_turn.decision
    assert decision["score"] >= decision["threshold"] == 0.15
    assert decision["omitted_turns"] == 2 and decision["omitted_for_budget"] == 0
    assert decision["tokens_after"] < decision["tokens_before"]
    last = text_of(db_turn.messages[-1])
    assert last.startswith(NOTE_START) and NOTE_END in last and last.endswith(DB[3])


def test_short_follow_ups_stay_on_the_current_topic():
    _, _, results = _drive(TopicRouter(), [DB[0], CSS[0], "do that", "/undo", "ok"])
    assert [r.decision["topic"] for r in results[1:]] == [results[1].decision["topic"]] * 4
    assert results[2].decision["reason"] == "too_few_terms"


def test_new_topic_starts_a_branch_and_threshold_is_configurable():
    _, state, results = _drive(TopicRouter(), [DB[0], CSS[0]])
    assert results[1].decision["route"] == "new"
    assert len(state["topics"]) == 2
    _, state, results = _drive(TopicRouter({"threshold": 0.0}), [DB[0], CSS[0]])
    assert results[1].decision["route"] == "stay", "threshold 0 never opens a new branch"
    assert len(state["topics"]) == 1


def test_state_round_trips_through_a_new_process_R_11_3(tmp_path: Path):
    """The engine keeps no session state in memory: a fresh process routes the same turn
    identically from the JSON state alone."""
    window, state, _ = _drive(TopicRouter(), [DB[0], CSS[0], DB[1], CSS[1]])
    window.append({"role": "user", "content": DB[2]})
    here = TopicRouter().select_context(request=_req(window, state))
    payload = tmp_path / "req.json"
    payload.write_text(json.dumps({"messages": window, "state": state}))
    script = (
        "import json,sys\n"
        "from hermes_host import SelectRequest\n"
        "from hermes_topic_router import TopicRouter\n"
        "d=json.load(open(sys.argv[1]))\n"
        "r=TopicRouter().select_context(request=SelectRequest(session_id='s1',"
        "messages=d['messages'],budget_tokens=100000,state=d['state']))\n"
        "print(json.dumps({'decision':r.decision,'messages':r.messages,'state':r.state}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(payload)],
        capture_output=True, text=True, check=True, timeout=60, env=dict(os.environ),
    )
    there = json.loads(out.stdout)
    assert there["decision"]["route"] == here.decision["route"] == "switch"
    assert there["messages"] == here.messages
    assert there["state"] == here.state


def _tool_turn(text: str, call_id: str, output: str) -> list[dict]:
    call = {"id": call_id, "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"cmd": text[:30]})}}
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
        {"role": "assistant", "content": f"Finished: {text.lower()}"},
    ]


def test_tool_pairs_summary_and_alternation_survive_selection_R_6_9_R_6_6_R_1_4():
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\nship it",
               "_compressed_summary": True}
    window = [SYSTEM, summary, {"role": "assistant", "content": "Understood."}]
    window += _tool_turn(DB[0], "c1", "migration created")
    window += _tool_turn(CSS[0], "c2", "navbar restyled")
    window += [{"role": "user", "content": CSS[1]}]  # interrupted: no reply at all
    window += _tool_turn(DB[1], "c3", "sqlite error")
    window += _tool_turn(CSS[2], "c4", "shadow added")
    window.append({"role": "user", "content": DB[2]})
    result = TopicRouter().select_context(request=_req(window))
    out = result.messages
    assert check_invariants(out) == []
    assert out[0] == SYSTEM
    assert sum(is_summary(m) for m in out) == 1
    ids = {m.get("tool_call_id") for m in out if m["role"] == "tool"}
    calls = {c["id"] for m in out for c in m.get("tool_calls") or []}
    assert ids == calls and {"c1", "c3"} <= ids
    assert "c2" not in ids
    assert result.decision["omitted_turns"] >= 1


def test_tool_continuation_keeps_the_same_selection_for_prompt_caching_R_1_3():
    window, state, _ = _drive(TopicRouter(), [DB[0], CSS[0], DB[1]])
    window.append({"role": "user", "content": CSS[1]})
    router = TopicRouter()
    first = router.select_context(request=_req(list(window), state))
    call = {"id": "k1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    window += [{"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "k1", "content": "ok"}]
    again = router.select_context(request=_req(list(window), first.state))
    assert again.decision["route"] == "continue"
    assert again.decision["topic"] == first.decision["topic"]
    assert again.messages[: len(first.messages)] == first.messages
    assert check_invariants(again.messages) == []


def test_turn_is_recognised_behind_a_reference_block_from_an_earlier_engine():
    window, state, _ = _drive(TopicRouter(), [DB[0], CSS[0]])
    block = "[RETRIEVED CONTEXT — REFERENCE ONLY] excerpt navbar\n[END RETRIEVED CONTEXT]\n\n"
    window.append({"role": "user", "content": block + DB[1]})
    first = TopicRouter().select_context(request=_req(window, state))
    window[-1] = {"role": "user", "content": DB[1]}  # the store never held the block
    window.append(_reply(DB[1]))
    window.append({"role": "user", "content": CSS[1]})
    second = TopicRouter().select_context(request=_req(window, first.state))
    assert "bootstrapped_turns" not in second.decision
    assert first.decision["topic"] != second.decision["topic"]


def test_over_budget_drops_the_branch_oldest_turns_first():
    requests = [DB[0], DB[1], DB[2], DB[3], DB[0] + " again", DB[1] + " again"]
    window, state, _ = _drive(TopicRouter(), requests)
    window.append({"role": "user", "content": "alembic users migration email_verified once more"})
    budget = count_messages(window) // 2
    result = TopicRouter().select_context(request=_req(window, state, budget=budget))
    assert result.decision["omitted_turns"] >= 1
    assert result.decision["omitted_for_budget"] == result.decision["omitted_turns"]
    assert count_messages(result.messages) <= budget + 120  # the note's own few tokens
    sent = [text_of(m) for m in result.messages]
    assert not any(t == DB[0] for t in sent), "the oldest turn went first"
    assert check_invariants(result.messages) == []


@pytest.mark.parametrize(
    "state",
    [{"version": 99}, {"version": 1, "topics": "nope"}, {"version": 1, "turns": [1, 2]},
     {"version": 1, "topics": {"t1": {"tf": {"a": "x"}}}}],
)
def test_corrupt_state_restarts_cleanly(state):
    window = [SYSTEM, {"role": "user", "content": DB[0]}]
    result = TopicRouter().select_context(request=_req(window, state))
    assert result.decision["state_reset"] is True
    assert result.messages == window
    assert result.state["version"] == 1


def test_no_user_turn_is_reported():
    result = TopicRouter().select_context(request=_req([SYSTEM]))
    assert result.decision["reason"] == "no_user_turn" and result.messages == [SYSTEM]


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"treshold": 0.2}, "engines.topic_router.treshold: unknown option; allowed:"),
        ({"threshold": 1.5}, "engines.topic_router.threshold"),
        ({"keep_recent_turns": -1}, "engines.topic_router.keep_recent_turns"),
        (["x"], "must be a mapping"),
    ],
)
def test_bad_options_are_clear_errors_R_0_3(options, needle):
    with pytest.raises(TopicRouterOptionsError) as info:
        TopicRouter(options)
    assert needle in str(info.value)


def test_entry_point_and_pluggy_registration_R_14_2():
    (ep,) = [e for e in entry_points(group="hermes_host.context_engines")
             if e.name == "topic_router"]
    assert ep.value == "hermes_topic_router.engine:TopicRouter"
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(ep.load()(options={"threshold": 0.2}), name="topic_router")
    pm.check_pending()
    result = pm.hook.select_context(request=_req([SYSTEM, {"role": "user", "content": DB[0]}]))
    assert result.decision["engine"] == "topic_router" and result.decision["route"] == "new"


def _transcripts() -> Path:
    root = Path(__file__).resolve().parents[3]
    return Path(os.environ.get("HERMES_HOST_TRANSCRIPTS", root.parent / "shared/data/transcripts"))


def test_real_aider_sessions_interleaved_send_fewer_tokens_with_valid_windows():
    """Two real aider sessions interleaved four turns at a time (a two-topic session)."""
    from hermes_host.messages import normalize_alternation

    folder = _transcripts()
    names = ["aider-2024-08-13-1342.jsonl", "aider-2024-08-06-0855.jsonl"]
    if not all((folder / n).is_file() for n in names):
        pytest.skip(f"aider transcripts not found in {folder} (set HERMES_HOST_TRANSCRIPTS)")

    def turns(path: Path) -> list[list[dict]]:
        out: list[list[dict]] = [[]]
        for line in path.read_text().splitlines():
            m = json.loads(line)
            if m["role"] == "user" and any(x["role"] == "assistant" for x in out[-1]):
                out.append([])
            out[-1].append(m)
        return out

    a, b = (turns(folder / n) for n in names)
    mixed: list[dict] = []
    for i in range(0, max(len(a), len(b)), 4):
        mixed += [m for t in a[i : i + 4] + b[i : i + 4] for m in t]
    router, state = TopicRouter(), {}
    before = after = 0
    for i, message in enumerate(mixed):
        if message["role"] != "user" or (i + 1 < len(mixed) and mixed[i + 1]["role"] == "user"):
            continue
        window, _ = normalize_alternation(mixed[: i + 1])
        result = router.select_context(request=_req(window, state))
        assert check_invariants(result.messages) == [], result.decision
        state = result.state
        before += result.decision["tokens_before"]
        after += result.decision["tokens_after"]
    assert after < 0.8 * before


def test_note_lists_names_only_the_left_out_turns_mention():
    requests = [DB[0] + " See migrations/env.py.", CSS[0] + " Edit web/theme/navbar.css.",
                CSS[1] + " Also web/theme/navbar.css and NavbarHeader.", DB[1], DB[2]]
    _, _, results = _drive(TopicRouter(), requests)
    note = text_of(results[-1].messages[-1]).split(NOTE_END)[0]
    assert "They mention:" in note
    assert "web/theme/navbar.css" in note.split("They mention:")[1]
    assert "migrations/env.py" not in note, "a name the sent turns show is not repeated"
    _, _, quiet = _drive(TopicRouter({"note_names": 0}), requests)
    assert "They mention:" not in text_of(quiet[-1].messages[-1])


def test_note_names_cover_commit_hashes_urls_and_camel_case_and_stay_bounded():
    """What a later turn refers back to by exact name — a commit to revert, a docs URL, a
    ``camelCase`` helper — is listed when its turn is left out; the list keeps its bound."""
    css = CSS[0] + (
        " Commit 04fff71 restyled it; see https://example.org/docs/flexbox.html. "
        "The test uses assertIsNone and useStickyHeader."
    )
    requests = [DB[0], css, DB[1], DB[2]]
    _, _, results = _drive(TopicRouter(), requests)
    listed = text_of(results[-1].messages[-1]).split(NOTE_END)[0].split("They mention:")[1]
    for name in ("04fff71", "https://example.org/docs/flexbox.html", "assertIsNone",
                 "useStickyHeader"):
        assert name in listed, (name, listed)
    assert "flexbox.html." not in listed, "a URL loses its trailing punctuation"

    many = CSS[0] + " " + " ".join(f"widget_part_{i}" for i in range(60))
    _, _, bounded = _drive(TopicRouter({"note_names": 5}), [DB[0], many, DB[1], DB[2]])
    listed = text_of(bounded[-1].messages[-1]).split(NOTE_END)[0].split("They mention:")[1]
    assert len(listed.split(".")[0].split(", ")) == 5


def test_note_never_lists_a_secret_of_a_left_out_turn_R_7_1():
    """A bare hex value is a name only where it is not a credential: the note's names come
    from the redacted text (an ``API_KEY=`` value, a password in a URL never appear)."""
    key = "3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c"
    css = CSS[0] + (
        f" Set API_KEY={key} for the font service at https://bob:hunter2secret@fonts.example.com/v1"
        " and revert 04fff71 if the header breaks."
    )
    _, _, results = _drive(TopicRouter(), [DB[0], css, DB[1], DB[2]])
    note = text_of(results[-1].messages[-1]).split(NOTE_END)[0]
    assert "04fff71" in note.split("They mention:")[1]
    assert key not in note and "hunter2secret" not in note and "REDACTED" not in note


def test_swapped_in_branch_brings_its_own_digest_of_requests_not_shown():
    """The branch's own summary: excerpts of its requests the sent window no longer holds
    (here dropped for budget), newest last."""
    requests = [DB[0], DB[1], DB[2], CSS[0], CSS[1]]
    window, state, _ = _drive(TopicRouter(), requests)
    window.append({"role": "user", "content": DB[3]})
    budget = count_messages(window) - count_messages(window[1:5]) + 40
    result = TopicRouter().select_context(request=_req(window, state, budget=budget))
    assert result.decision["route"] == "switch"
    assert result.decision["omitted_for_budget"] >= 1
    note = text_of(result.messages[-1]).split(NOTE_END)[0]
    digest = note.split("Earlier requests of this topic not shown here:")[1]
    assert DB[0][:60] in digest
    assert DB[3][:60] not in digest, "the request being sent is not repeated"
    assert json.loads(json.dumps(result.state))["topics"][result.decision["topic"]]["digest"]


def test_bootstrap_is_bounded_and_unclassified_turns_are_kept():
    """A first call on a long window classifies only the newest turns (time limit); the
    older, unclassified ones are sent with every branch rather than dropped."""
    window = [SYSTEM]
    for i in range(12):
        text = (DB if i % 2 else CSS)[i % 4] + f" (round {i})"
        window += [{"role": "user", "content": text}, _reply(text)]
    window.append({"role": "user", "content": DB[3]})
    result = TopicRouter({"max_bootstrap_turns": 4}).select_context(request=_req(window))
    assert result.decision["bootstrapped_turns"] == 4
    sent = "\n".join(text_of(m) for m in result.messages)
    for i in range(8):  # the eight oldest turns were never classified
        assert f"(round {i})" in sent
    assert result.decision["omitted_turns"] >= 1, "a classified other-topic turn is left out"
    assert check_invariants(result.messages) == []
