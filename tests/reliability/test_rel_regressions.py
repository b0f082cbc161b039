"""Defects the reliability suite found, each reproduced on its own (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_host.redact import redact_messages
from tests.host_helpers import make_config

DEEP_ARRAY = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a": ' * 3000 + "1" + "}" * 3000
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"


@pytest.mark.parametrize("arguments", [DEEP_ARRAY, DEEP_OBJECT, '[' * 900 + ']' * 900])
def test_deep_json_tool_arguments_do_not_crash_the_compressor(
    tmp_path: Path, arguments: str
) -> None:
    """Tool-call arguments nested deeper than Python's recursion limit made the compressor
    raise RecursionError (json.loads in describe/prune, redact_value in redaction): found by
    test_rel_fuzz's host path.  The compression must commit like any other."""
    pytest.importorskip("hermes_compressor")
    from hermes_host.host import ContextHost

    config = make_config("compressor", summarizer={"provider": "offline"})
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("deep", "You are terse.")
        for n in range(6):
            session.add_user(f"question {n}: " + "lorem ipsum " * 30)
            call = {"id": f"call_{n}", "type": "function",
                    "function": {"name": "terminal", "arguments": arguments}}
            session.add_assistant(None, [call])
            session.add_tool_result(f"call_{n}", "ok " * 200, name="terminal")
            session.add_assistant(f"answer {n}: " + "amet " * 30)
        report = session.compress(force=True)
        assert report.outcome != "error", report.message
        assert report.status == "committed", report


def test_deep_json_arguments_are_still_redacted_as_text() -> None:
    arguments = "[" * 3000 + json.dumps(f"key={SECRET}") + "]" * 3000
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "x", "arguments": arguments}}]}
    (cleaned,) = redact_messages([message])
    assert SECRET not in json.dumps(cleaned)
