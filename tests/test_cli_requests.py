"""``hermes-host sessions requests``, ``sessions show CONV --request N`` and ``sessions costs``
(issue 29) against a real SQLite store written by a live ``Session``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from host_helpers import TailEngine, make_host

from hermes_host.cli import cli
from hermes_host.store.manifests import rebuild_request

SECRET = "sk-ant-api03-" + "Q7x9" * 20


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def conversation(tmp_path: Path) -> tuple[Path, str, list[list[dict[str, object]]]]:
    """A conversation of 8 turns that compressed (TailEngine), one message holding a key."""
    host = make_host(tmp_path, TailEngine(keep=1, threshold=600))
    session = host.open_session(system_prompt="You are terse.", title="costly")
    sent = []
    for n in range(8):
        session.add_user(f"question {n}: " + ("my key is " + SECRET if n == 7 else "words " * 60))
        sent.append(session.build_request())
        session.add_assistant(f"answer {n} " + "more " * 60)
        session.end_turn({"prompt_tokens": 500 + n, "completion_tokens": 20})
    assert session.compression_count >= 1
    host.close()
    return tmp_path / "state.db", session.conversation_id, sent


def test_requests_lists_every_call_with_its_size_cache_and_compactions(
    conversation: tuple[Path, str, list[list[dict[str, object]]]],
) -> None:
    db, cid, sent = conversation
    result = run("sessions", "requests", "costly", "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["conversation_id"] == cid
    assert [r["n"] for r in data["requests"]] == list(range(1, len(sent) + 1))
    assert [r["usage"]["input_tokens"] for r in data["requests"]] == [500 + n for n in range(8)]
    committed = [c for c in data["compactions"] if c["status"] == "committed"]
    assert committed and all(c["tokens_after"] < c["tokens_before"] for c in committed)
    plain = run("sessions", "requests", cid, "--store", str(db))
    assert plain.exit_code == 0
    assert "compaction (auto, decided by engine:tail)" in " ".join(plain.output.split())


def test_show_request_prints_exactly_what_the_model_got_redacted(
    conversation: tuple[Path, str, list[list[dict[str, object]]]],
) -> None:
    db, cid, sent = conversation
    result = run("sessions", "show", cid, "--request", "8", "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [m["role"] for m in data["messages"]] == [m["role"] for m in sent[7]]
    assert data["messages"][1:-1] == sent[7][1:-1]  # nothing to redact there: as sent
    assert SECRET in json.dumps(sent[7]) and SECRET not in result.output
    assert data["request"]["tokens"] > 0 and data["request"]["added"] >= 1
    plain = run("sessions", "show", cid, "--request", "8", "--store", str(db))
    assert plain.exit_code == 0 and SECRET not in plain.output
    assert "request 8 of 8" in plain.output
    missing = run("sessions", "show", cid, "--request", "99", "--store", str(db))
    assert missing.exit_code == 2 and "has 8 recorded request(s)" in missing.output


def test_costs_sum_the_manifests_and_the_summariser(
    conversation: tuple[Path, str, list[list[dict[str, object]]]],
) -> None:
    db, cid, sent = conversation
    from hermes_host.store import open_store
    from hermes_host.store.conversations import find_conversation

    store = open_store(db)
    records = store.list_requests([s.id for s in find_conversation(store, cid).sessions])
    assert [rebuild_request(store, r) for r in records] == sent
    store.close()
    result = run("sessions", "costs", "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["conversations"]
    assert row["model_calls"] == len(sent)
    assert row["request_tokens"] == sum(r.tokens for r in records)
    assert row["cached_tokens"] == sum(r.prefix_tokens for r in records)
    assert row["provider_input_tokens"] == sum(500 + n for n in range(8))
    assert row["compactions"] >= 1
    plain = run("sessions", "costs", cid, "--store", str(db))
    assert plain.exit_code == 0 and cid in plain.output


def test_export_markdown_marks_compactions_and_the_model_view_redacted(
    conversation: tuple[Path, str, list[list[dict[str, object]]]], tmp_path: Path,
) -> None:
    db, cid, _sent = conversation
    out = tmp_path / "conversation.md"
    result = run("sessions", "export", "costly", "--store", str(db), "--format", "markdown",
                 "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# costly") and f"`{cid}`" in text
    assert text.count("> **Compaction** (auto, decided by engine:tail") >= 1
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    stored = int(text.split("messages stored: ")[1].split(" ")[0])
    assert len(headings) == stored >= 16  # every stored message, summaries included
    assert "(not in the model's window)" in headings[0]  # compacted away
    assert "(not in the model's window)" not in headings[-1]  # the newest answer
    assert SECRET not in text and "my key is" in text
    # the marker sits right before the summary it produced
    marker = text.index("> **Compaction**")
    following = text[marker:].split("### ", 2)[1]
    assert following.startswith("assistant") or following.startswith("user")
