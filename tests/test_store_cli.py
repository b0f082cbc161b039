"""``hermes-host sessions …`` against real store files and real transcripts (R-14.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from store_helpers import compressed_window, conversation, transcripts_dir

from hermes_host.cli import cli
from hermes_host.store import Lease, open_store
from hermes_host.store.sqlite import DEFER_TRIGRAM_MIN


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def populated(tmp_path: Path) -> tuple[Path, str, str]:
    """A store with a rotated session "demo" → "demo #2" and an archived in-place history."""
    db = tmp_path / "state.db"
    store = open_store(db)
    root = store.create_session(title="demo", model="claude-x", cwd="/srv/demo")
    store.append_messages(root.id, conversation(3, tag="gazelle"))
    lease = store.acquire_lease(root.id)
    assert isinstance(lease, Lease)
    child = store.publish_compression(lease, root.id, compressed_window("child")).session_id
    store.close()
    return db, root.id, child


def test_list_json_and_table(populated: tuple[Path, str, str]) -> None:
    db, root, child = populated
    result = run("sessions", "list", "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    # One row per conversation, shown by its newest session (the rotated parent used to be
    # listed as a second, ended session of its own).
    assert [s["id"] for s in listed] == [child]
    assert listed[0]["parent_session_id"] == root and listed[0]["conversation_id"] == root
    assert listed[0]["rotations"] == 1 and listed[0]["sessions"] == 2
    table = run("sessions", "list", "--store", str(db))
    assert table.exit_code == 0 and "demo #2" in table.output
    assert "ended: compression" not in table.output and "sessions" in table.output
    assert root in table.output  # the conversation id, which every command accepts (issue 30)


def test_list_groups_a_long_lineage_into_one_conversation(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = open_store(db)
    root = store.create_session(title="astroid")
    other = store.create_session(title="other")
    sid = root.id
    for n in range(5):
        store.append_messages(sid, conversation(2, tag=f"r{n}"))
        lease = store.acquire_lease(sid)
        assert isinstance(lease, Lease)
        sid = store.publish_compression(lease, sid, compressed_window(f"c{n}")).session_id
    store.close()
    listed = json.loads(run("sessions", "list", "--store", str(db), "--json").output)
    assert [(c["id"], c["conversation_id"], c["rotations"]) for c in listed] == [
        (sid, root.id, 5), (other.id, other.id, 0)]
    assert listed[0]["title"] == "astroid #6"


def test_export_writes_the_system_prompt_and_lineage_exports_the_conversation(
    tmp_path: Path,
) -> None:
    """JSONL export dropped the system prompt of a session whose prompt is not a row (every
    session the host opens); ``--lineage`` exports the whole conversation, each message
    once, system prompt first."""
    db = tmp_path / "state.db"
    store = open_store(db)
    root = store.create_session(title="conv", system_prompt="You are a careful agent.")
    first = conversation(3, tag="early")[1:]
    store.append_messages(root.id, first)
    lease = store.acquire_lease(root.id)
    assert isinstance(lease, Lease)
    window = compressed_window("mid")[1:2] + first[-4:]  # a summary and the kept last turn
    child = store.publish_compression(lease, root.id, window).session_id
    later = [{"role": "user", "content": "a later question"}]
    store.append_messages(child, later)
    store.close()

    plain = [json.loads(x) for x in run("sessions", "export", child, "--only-session",
                                        "--store", str(db)).output.splitlines()]
    assert plain[0] == {"role": "system", "content": "You are a careful agent."}
    assert plain[1:] == window + later
    whole = [json.loads(x) for x in run("sessions", "export", root.id, "--lineage",
                                        "--store", str(db)).output.splitlines()]
    assert whole[0] == plain[0]
    assert whole[1:] == first + window[:1] + later  # the kept turn is not there twice
    payload = json.loads(run("sessions", "export", "conv", "--lineage", "--json",
                             "--store", str(db)).output)
    assert payload["conversation_id"] == root.id
    assert [s["id"] for s in payload["sessions"]] == [root.id, child]
    live = [json.loads(x) for x in run("sessions", "export", root.id, "--lineage",
                                       "--active-only", "--store", str(db)).output.splitlines()]
    assert live == plain
    default = [json.loads(x) for x in run("sessions", "export", root.id, "--store", str(db)
                                          ).output.splitlines()]
    assert default == whole  # the whole conversation is the default since issue 30


def test_list_uses_configured_store(populated: tuple[Path, str, str], tmp_path: Path) -> None:
    db, root, _ = populated
    config = tmp_path / "config.yaml"
    config.write_text(f"store:\n  url: sqlite:///{db}\n")
    result = run("sessions", "list", "--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert root in {s["conversation_id"] for s in json.loads(result.output)}


def test_list_without_a_store_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "state.db"
    result = run("sessions", "list", "--store", str(missing), "--json")
    assert result.exit_code == 0 and json.loads(result.output) == []
    assert not missing.exists()
    shown = run("sessions", "show", "x", "--store", str(missing))
    assert shown.exit_code == 2 and "no store here yet" in shown.output
    assert not missing.exists()


def test_show_by_title_resolves_newest_and_recaps_R_8_3(populated: tuple[Path, str, str]) -> None:
    db, _, child = populated
    result = run("sessions", "show", "demo", "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["session"]["id"] == child and payload["session"]["cwd"] == "/srv/demo"
    assert payload["window"] == compressed_window("child")
    assert "Working directory: /srv/demo" in payload["recap"]
    human = run("sessions", "show", child, "--store", str(db))
    assert human.exit_code == 0 and "tail question 2 child" in human.output


def test_search_finds_parent_history_with_bookends_R_13_3(populated: tuple[Path, str, str]
                                                          ) -> None:
    db, root, child = populated
    result = run("sessions", "search", "gazelle", "--store", str(db), "--session", child,
                 "--json")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)
    assert hits and {h["session_id"] for h in hits} == {root}
    assert any("gazelle" in h["content"] for h in hits)  # others match via tool_calls ids
    assert any(h["before"] or h["after"] for h in hits)
    only_child = run("sessions", "search", "gazelle", "--store", str(db), "--session", child,
                     "--no-lineage", "--json")
    assert json.loads(only_child.output) == []
    hostile = run("sessions", "search", 'NEAR( "gaz* OR', "--store", str(db))
    assert hostile.exit_code == 0


def test_lineage_root_first(populated: tuple[Path, str, str]) -> None:
    db, root, child = populated
    result = run("sessions", "lineage", child, "--store", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert [s["id"] for s in json.loads(result.output)] == [root, child]
    table = run("sessions", "lineage", child, "--store", str(db))
    assert table.exit_code == 0 and root in table.output


def test_unknown_session_exit_2_with_message(populated: tuple[Path, str, str]) -> None:
    """An unknown name is bad input: exit 2 (it was 1 until issue 30), naming what was tried
    and how to list what exists."""
    db, _, _ = populated
    for command in ("show", "lineage", "export"):
        result = run("sessions", command, "nope", "--store", str(db))
        assert result.exit_code == 2, (command, result.output)
        assert "no conversation or session 'nope'" in result.output
        assert "sessions list" in result.output
        assert "Traceback" not in result.output


def test_export_import_round_trip_is_verbatim(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = open_store(db)
    session = store.create_session()
    original = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "[CONTEXT COMPACTION] s", "_compressed_summary": True},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "content": "ünïcode 🙂", "tool_call_id": "c1", "name": "t"},
        {"content": "order kept", "role": "assistant", "_meta": {"k": [1, None]}},
    ]
    store.append_messages(session.id, original)
    store.close()
    out = tmp_path / "export.jsonl"
    result = run("sessions", "export", session.id, "--store", str(db), "-o", str(out),
                 "--verbatim")
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == original
    assert list(json.loads(lines[-1])) == ["content", "role", "_meta"]
    stdout = run("sessions", "export", session.id, "--store", str(db), "--verbatim")
    assert stdout.output.splitlines() == lines
    imported = run("sessions", "import", str(out), "--store", str(db), "--json",
                   "--title", "copy")
    assert imported.exit_code == 0, imported.output
    new_id = json.loads(imported.output)["session_id"]
    store = open_store(db)
    assert store.active_messages(new_id) == original
    assert store.get_session(new_id).system_prompt == "sys"
    store.close()


def test_export_json_wraps_session_and_messages(populated: tuple[Path, str, str]) -> None:
    db, root, child = populated
    result = run("sessions", "export", root, "--store", str(db), "--json", "--only-session")
    payload = json.loads(result.output)
    assert payload["session"]["id"] == root and len(payload["messages"]) == 13
    assert "conversation_id" not in payload
    whole = json.loads(run("sessions", "export", root, "--store", str(db), "--json").output)
    assert whole["session"]["id"] == child and whole["conversation_id"] == root
    assert [s["id"] for s in whole["sessions"]] == [root, child]
    assert len(whole["messages"]) > 13


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"role":"user","content":"hi"}\n\n{"role":"bogus"}\n', ":3: unknown role 'bogus'"),
        ('{"role":"user","content":"hi"}\n{oops\n', ":2: not a JSON object (JSONL expects"),
        ('{"role":"tool","content":"x"}\n', ":1: a tool message needs a string 'tool_call_id'"),
        ("[1, 2]\n", ":1: expected a JSON object, got list"),
        ("\n\n", "no messages found"),
    ],
)
def test_import_errors_name_the_line_and_store_nothing(tmp_path: Path, content: str,
                                                       expected: str) -> None:
    db = tmp_path / "state.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    result = run("sessions", "import", str(bad), "--store", str(db))
    assert result.exit_code == 2
    assert expected in result.output and "Traceback" not in result.output
    assert not db.exists()  # validation happens before the store is even opened


def test_import_title_conflict_is_clear(populated: tuple[Path, str, str], tmp_path: Path
                                        ) -> None:
    db, _, _ = populated
    good = tmp_path / "good.jsonl"
    good.write_text('{"role":"user","content":"hi"}\n')
    result = run("sessions", "import", str(good), "--store", str(db), "--title", "demo")
    assert result.exit_code == 2 and "already used" in result.output


def test_real_transcripts_import_and_export_verbatim(tmp_path: Path) -> None:
    folder = transcripts_dir()
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"no transcripts in {folder} (set HERMES_HOST_TRANSCRIPTS)")
    db = tmp_path / "state.db"
    imported = largest = 0
    for path in files[:6]:
        result = run("sessions", "import", str(path), "--store", str(db), "--json")
        if result.exit_code != 0:  # a messy transcript must fail cleanly, naming a line
            assert f"{path}:" in result.output and "Traceback" not in result.output
            continue
        session_id = json.loads(result.output)["session_id"]
        exported = run("sessions", "export", session_id, "--store", str(db), "--verbatim")
        original = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
        assert [json.loads(line) for line in exported.output.splitlines()] == original
        imported += 1
        largest = max(largest, len(original))
    assert imported >= 3
    store = open_store(db)
    assert store.session_search("the", limit=3)
    # some transcripts are long enough to be a bulk write; import indexes them before exiting
    assert largest >= DEFER_TRIGRAM_MIN and store.pending_index_rows() == 0
    store.close()


def test_unusable_store_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    garbage = tmp_path / "state.db"
    garbage.write_bytes(b"definitely not sqlite" * 200)
    for args in (("list",), ("show", "x"), ("search", "x"), ("export", "x")):
        result = run("sessions", *args, "--store", str(garbage))
        assert result.exit_code == 2, (args, result.output)
        assert "not a hermes-host store" in result.output and "Traceback" not in result.output


def test_a_configured_store_url_of_another_scheme_is_refused_not_made_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_host.store import registry

    real = registry._entry_points  # as if hermes-store-postgres were not installed
    monkeypatch.setattr(registry, "_entry_points",
                        lambda: {k: v for k, v in real().items() if k != "postgresql"})
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text("store:\n  url: postgresql://app:pw-77@db/h\n")
    result = run("sessions", "list", "--config", str(config))
    assert result.exit_code == 2, result.output
    assert "store.url: store URL scheme postgresql:// needs the hermes-store-postgres" in (
        result.output)
    assert "pw-77" not in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [config]  # no 'postgresql:' folder, no state.db
