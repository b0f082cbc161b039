"""Slash-command parsing and the OpenAI → Anthropic request conversion of ``hermes-host chat``
(R-12.1, R-1.4, R-7.5): pure functions, no I/O."""

from __future__ import annotations

import itertools

import pytest

from hermes_host.chat import (
    COMMANDS,
    Command,
    CommandError,
    CompressArgs,
    parse_command,
    parse_compress_args,
    to_anthropic,
    turn_starts,
)
from hermes_host.messages import SUMMARY_METADATA_KEY, SUMMARY_PREFIX


@pytest.mark.parametrize(("line", "name"), [
    ("/compress", "compress"), ("/compact", "compress"), ("/new", "new"), ("/reset", "new"),
    ("/undo 2", "undo"), ("/branch x", "branch"), ("/fork", "branch"), ("/status", "status"),
    ("/resume my project", "resume"), ("/sessions", "sessions"), ("/title t", "title"),
    ("/help", "help"), ("/quit", "quit"), ("/exit", "quit"), ("  /STATUS  ", "status"),
])
def test_every_r_12_1_command_and_alias_parses(line: str, name: str) -> None:
    command = parse_command(line)
    assert command is not None and command.name == name


def test_messages_are_not_commands() -> None:
    assert parse_command("hello /status") is None
    assert parse_command("//etc/hosts is odd") is None  # escaped leading slash


def test_arguments_keep_the_raw_text_for_titles() -> None:
    command = parse_command("/title  my   project  ")
    assert command == Command("title", ("my", "project"), "my   project")
    assert parse_command("/resume \"a b\"") == Command("resume", ("a b",), '"a b"')


def test_unknown_command_suggests_the_nearest() -> None:
    with pytest.raises(CommandError, match=r"unknown command /statsu — did you mean /status\?"):
        parse_command("/statsu")
    with pytest.raises(CommandError, match=r"unknown command /zzz\. Type /help"):
        parse_command("/zzz")


def test_every_command_has_help() -> None:
    names = {spec.name for spec in COMMANDS}
    assert names == {"compress", "new", "undo", "branch", "status", "resume", "sessions",
                     "title", "help", "quit"}
    assert all(spec.help for spec in COMMANDS)


@pytest.mark.parametrize(("args", "expected"), [
    ([], CompressArgs()),
    (["--preview"], CompressArgs(preview=True)),
    (["here"], CompressArgs(keep_last_turns=1)),
    (["here", "3"], CompressArgs(keep_last_turns=3)),
    (["here", "2", "--preview", "database", "schema"],
     CompressArgs(keep_last_turns=2, preview=True, focus="database schema")),
    (["the", "auth", "bug"], CompressArgs(focus="the auth bug")),
])
def test_compress_arguments_r_12_1(args: list[str], expected: CompressArgs) -> None:
    assert parse_compress_args(args) == expected


def test_compress_rejects_unknown_options() -> None:
    with pytest.raises(CommandError, match="unknown option --force"):
        parse_compress_args(["--force"])


def test_turn_starts_skip_a_user_role_summary() -> None:
    window = [
        {"role": "user", "content": f"{SUMMARY_PREFIX}\n\nsummary", SUMMARY_METADATA_KEY: True},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    assert turn_starts(window) == [2, 4]


def test_to_anthropic_system_roles_and_alternation_r_1_4() -> None:
    """The system message goes to ``system``; tool traffic becomes text (no tools are
    declared); neighbours of one role join; the first message is user; no empty block."""
    request = [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": f"{SUMMARY_PREFIX}\n\nearlier work"},
        {"role": "user", "content": "run ls"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "terminal",
                                                          "arguments": "{\"cmd\": \"ls\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "a.py"},
        {"role": "user", "content": [
            {"type": "text", "text": "and this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "next"},
    ]
    system, messages = to_anthropic(request)
    assert system == "be brief"
    roles = [m["role"] for m in messages]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    texts = [b["text"] for m in messages for b in m["content"] if b["type"] == "text"]
    assert all(t.strip() for t in texts)
    flat = "\n".join(texts)
    assert "[called terminal({\"cmd\": \"ls\"})]" in flat
    assert "[tool result: terminal]\na.py" in flat
    image = next(b for m in messages for b in m["content"] if b["type"] == "image")
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}
    tool_result_turn = next(m for m in messages if any(
        "[tool result" in b.get("text", "") for b in m["content"]))
    assert tool_result_turn["role"] == "user"
    assert "and this?" in [b.get("text") for b in tool_result_turn["content"]]
