"""Small, realistic session logs of Claude Code, Codex CLI and OpenHands, written by the tests.

They follow the shapes those tools write (field names, nesting, the records that are *not*
conversation), cut down to a few turns.  No real user's log is copied here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_CC_BASE = {
    "parentUuid": None, "userType": "external", "cwd": "/home/dev/shop", "version": "1.0.83",
    "sessionId": "5f0c1d2e-6a7b-4c8d-9e0f-112233445566", "gitBranch": "main",
}


def _cc(kind: str, message: dict[str, Any], n: int, **extra: Any) -> dict[str, Any]:
    return {**_CC_BASE, "isSidechain": False, "type": kind, "message": message,
            "uuid": f"u-{n:04d}", "timestamp": f"2025-08-14T09:{n:02d}:00.000Z", **extra}


def claude_code_records() -> list[dict[str, Any]]:
    """A Claude Code session: a meta caveat, a question, a split assistant response (text and
    tool_use as separate records sharing message.id), tool results, a sidechain, a summary."""
    usage = {"input_tokens": 1200, "output_tokens": 80}
    return [
        {"type": "summary", "summary": "Fixing the cart total", "leafUuid": "u-0009"},
        _cc("user", {"role": "user", "content": "<local-command-stdout></local-command-stdout>"},
            1, isMeta=True),
        _cc("user", {"role": "user", "content": "The cart total ignores discounts. Fix it?"}, 2),
        _cc("assistant", {"id": "msg_01A", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "usage": usage, "content": [
                              {"type": "thinking", "thinking": "look at cart.py",
                               "signature": "sig"}]}, 3),
        _cc("assistant", {"id": "msg_01A", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "usage": usage, "content": [
                              {"type": "text", "text": "Let me read the cart code."}]}, 4),
        _cc("assistant", {"id": "msg_01A", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "usage": usage, "content": [
                              {"type": "tool_use", "id": "toolu_01", "name": "Read",
                               "input": {"file_path": "/home/dev/shop/cart.py"}}]}, 5),
        _cc("user", {"role": "user", "content": [
            {"tool_use_id": "toolu_01", "type": "tool_result",
             "content": "def total(items):\n    return sum(i.price for i in items)\n"}]}, 6,
            toolUseResult={"type": "text"}),
        _cc("assistant", {"id": "msg_01B", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "usage": usage, "content": [
                              {"type": "tool_use", "id": "toolu_02", "name": "Bash",
                               "input": {"command": "pytest -q tests/test_cart.py"}},
                              {"type": "tool_use", "id": "toolu_03", "name": "Grep",
                               "input": {"pattern": "discount"}}]}, 7),
        {**_cc("assistant", {"id": "msg_side", "role": "assistant",
                             "content": [{"type": "text", "text": "sub-agent chatter"}]}, 8),
         "isSidechain": True},
        _cc("user", {"role": "user", "content": [
            {"tool_use_id": "toolu_02", "type": "tool_result", "is_error": True,
             "content": [{"type": "text", "text": "1 failed: test_discount"}]},
            {"tool_use_id": "toolu_03", "type": "tool_result",
             "content": "cart.py:9: discount = 0.1"},
            {"tool_use_id": "toolu_99", "type": "tool_result", "content": "stray"}]}, 9),
        _cc("assistant", {"id": "msg_01C", "type": "message", "role": "assistant",
                          "content": [{"type": "text", "text": "The total never applies "
                                       "`discount`; I changed it to subtract it."}]}, 10),
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
        _cc("user", {"role": "user", "content": [{"type": "text", "text": "Thanks! Commit it."}]},
            11),
        _cc("assistant", {"id": "msg_01D", "type": "message", "role": "assistant",
                          "content": [{"type": "text", "text": "Committed as 3f2a1c9."}]}, 12),
    ]


def codex_records() -> list[dict[str, Any]]:
    """A current Codex CLI rollout (items wrapped in ``response_item``)."""
    t = "2025-09-20T10:00:00.000Z"

    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": t, "type": "response_item", "payload": payload}

    return [
        {"timestamp": t, "type": "session_meta", "payload": {
            "id": "0199a1b2-c3d4", "timestamp": t, "cwd": "/home/dev/api", "originator":
            "codex_cli_rs", "cli_version": "0.39.0",
            "instructions": "You are Codex, a coding agent."}},
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/api</cwd>\n"
             "</environment_context>"}]}),
        {"timestamp": t, "type": "turn_context", "payload": {"cwd": "/home/dev/api",
                                                             "model": "gpt-5-codex"}},
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Why does /health return 500?"}]}),
        {"timestamp": t, "type": "event_msg", "payload": {
            "type": "user_message", "message": "Why does /health return 500?"}},
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "check logs"}],
              "encrypted_content": "gAAAA"}),
        item({"type": "function_call", "name": "shell", "call_id": "call_A1",
              "arguments": json.dumps({"command": ["bash", "-lc", "rg -n health app/"]})}),
        item({"type": "function_call_output", "call_id": "call_A1", "output": json.dumps(
            {"output": "app/routes.py:12: def health(): return db.ping()\n",
             "metadata": {"exit_code": 0, "duration_seconds": 0.1}})}),
        item({"type": "function_call", "name": "shell", "call_id": "call_A2",
              "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]})}),
        item({"type": "function_call_output", "call_id": "call_A2", "output": json.dumps(
            {"output": "E   ConnectionError: db\n1 failed", "metadata": {"exit_code": 1}})}),
        item({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "`/health` pings the database, which is down."}]}),
        {"timestamp": t, "type": "event_msg", "payload": {"type": "token_count", "info": None}},
        item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Make it degrade gracefully."}]}),
        item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_B1",
              "input": "*** Begin Patch\n*** Update File: app/routes.py\n*** End Patch"}),
        item({"type": "custom_tool_call_output", "call_id": "call_B1",
              "output": "Success. Updated app/routes.py"}),
        item({"type": "web_search_call", "status": "completed"}),
        item({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Done: /health now returns 503 with a reason."}]}),
    ]


def codex_legacy_records() -> list[dict[str, Any]]:
    """An older Codex rollout: session metadata on line 1, items at top level, state lines."""
    return [
        {"id": "a1b2c3", "timestamp": "2025-05-01T08:00:00Z",
         "instructions": "Be terse.", "git": {"branch": "main"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "list the files"}]},
        {"type": "local_shell_call", "call_id": "ls_1", "status": "completed",
         "action": {"type": "exec", "command": ["ls"]}},
        {"type": "function_call_output", "call_id": "ls_1",
         "output": json.dumps({"output": "README.md\nsrc\n", "metadata": {"exit_code": 0}})},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "README.md and src/."}]},
    ]


def openhands_events() -> list[dict[str, Any]]:
    """An OpenHands trajectory: system prompt, user task, run/read/edit actions with their
    observations (one pair of parallel calls), environment noise, finish."""
    def meta(call: str, fn: str, response: str, total: int = 1) -> dict[str, Any]:
        return {"function_name": fn, "tool_call_id": call, "total_calls_in_response": total,
                "model_response": {"id": response, "model": "claude-sonnet-4-5"}}

    return [
        {"id": 0, "timestamp": "2025-07-01T12:00:00", "source": "agent", "message":
         "You are OpenHands agent...", "action": "system",
         "args": {"content": "You are OpenHands agent, a helpful AI assistant.", "tools": []}},
        {"id": 1, "source": "user", "message": "Add a --verbose flag to cli.py",
         "action": "message", "args": {"content": "Add a --verbose flag to cli.py",
                                        "image_urls": [], "wait_for_response": False}},
        {"id": 2, "source": "environment", "observation": "agent_state_changed",
         "content": "", "extras": {"agent_state": "running"}, "message": ""},
        {"id": 3, "source": "user", "action": "recall", "args": {"recall_type": "workspace"}},
        {"id": 4, "source": "environment", "observation": "recall", "cause": 3,
         "content": "Added workspace context", "extras": {}},
        {"id": 5, "source": "agent", "message": "Running command: ls", "action": "run",
         "tool_call_metadata": meta("toolu_A", "execute_bash", "resp_1"),
         "args": {"command": "ls", "is_input": False, "thought": "Let me look around.",
                  "blocking": False, "hidden": False, "confirmation_state": "confirmed"}},
        {"id": 6, "source": "agent", "message": "Command `ls` executed with exit code 0.",
         "cause": 5, "observation": "run", "content": "cli.py\ntests\n",
         "tool_call_metadata": meta("toolu_A", "execute_bash", "resp_1"),
         "extras": {"command": "ls", "metadata": {"exit_code": 0}}},
        {"id": 7, "source": "agent", "action": "read", "message": "Reading file: cli.py",
         "tool_call_metadata": meta("toolu_B", "str_replace_editor", "resp_2", 2),
         "args": {"path": "/workspace/cli.py", "start": 0, "end": -1, "thought": ""}},
        {"id": 8, "source": "agent", "action": "run", "message": "Running command: pytest",
         "tool_call_metadata": meta("toolu_C", "execute_bash", "resp_2", 2),
         "args": {"command": "pytest -q", "thought": "", "blocking": False}},
        {"id": 9, "source": "agent", "observation": "read", "cause": 7,
         "content": "import argparse\n", "extras": {"path": "/workspace/cli.py"}},
        {"id": 10, "source": "agent", "observation": "run", "cause": 8,
         "content": "2 failed", "extras": {"metadata": {"exit_code": 1}}},
        {"id": 11, "source": "agent", "action": "edit", "message": "Editing cli.py",
         "tool_call_metadata": meta("toolu_D", "str_replace_editor", "resp_3"),
         "args": {"path": "/workspace/cli.py", "command": "str_replace",
                  "old_str": "import argparse", "new_str": "import argparse\nimport logging",
                  "thought": "Add logging import first."}},
        {"id": 12, "source": "agent", "observation": "edit", "cause": 11,
         "content": "The file /workspace/cli.py has been edited.", "extras": {}},
        {"id": 13, "source": "agent", "observation": "run", "cause": 999,
         "content": "orphan output"},
        {"id": 14, "source": "agent", "action": "finish",
         "tool_call_metadata": meta("toolu_E", "finish", "resp_4"),
         "args": {"final_thought": "Added --verbose; tests pass.", "outputs": {},
                  "thought": ""}},
        {"id": 15, "source": "environment", "observation": "agent_state_changed",
         "content": "", "extras": {"agent_state": "finished"}},
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_json_array(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return path
