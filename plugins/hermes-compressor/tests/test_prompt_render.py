"""render_turns renders only what survives its bounds (issue 15) and says exactly what the
full rendering said: checked against the straightforward implementation it replaced, on every
real transcript and at bounds that exercise each branch (fits, halving, final clip)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from compressor_helpers import load_normalised, transcript_paths
from hermes_host.models import Message

from hermes_compressor.prompt import _clip, _pieces, render_turns


def reference_render(messages: Sequence[Message], *, max_turn_chars: int, max_total: int) -> str:
    """The source turns as labelled plain text, each piece clipped, the whole bounded: every
    piece rendered and joined for each limit tried."""
    pieces = _pieces(messages, max_turn_chars)
    limit = max_turn_chars
    while True:
        rendered = "\n\n".join(label + _clip(text, limit // share)
                                for label, text, share in pieces)
        if len(rendered) <= max_total or limit <= 200:
            return _clip(rendered, max_total)
        limit //= 2


def _synthetic(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append({"role": "user", "content": f"request {i} " * (i % 7 + 1)})
        out.append({"role": "assistant", "content": "" if i % 3 else f"thinking {i}",
                    "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                        "name": "run", "arguments": json.dumps({"cmd": "x" * (i * 37 % 900)})}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "out\n" * (i * 53 % 1500)})
    return out


BOUNDS = [(4_000, 400_000), (4_000, 20_000), (1_000, 3_000), (300, 500), (50, 7), (4_000, 1)]


@pytest.mark.parametrize(("turn", "total"), BOUNDS)
def test_equals_the_full_rendering_synthetic(turn: int, total: int) -> None:
    messages = _synthetic(300)
    assert render_turns(messages, max_turn_chars=turn, max_total=total) == reference_render(
        messages, max_turn_chars=turn, max_total=total)


@pytest.mark.parametrize("path", transcript_paths(), ids=lambda p: p.stem)
def test_equals_the_full_rendering_on_real_transcripts(path: object) -> None:
    messages: Sequence[Message] = load_normalised(path)  # type: ignore[arg-type]
    for turn, total in BOUNDS[:4]:
        assert render_turns(messages, max_turn_chars=turn, max_total=total) == \
            reference_render(messages, max_turn_chars=turn, max_total=total), (turn, total)


def _call(call_id: str, name: str, args: dict[str, object]) -> Message:
    return {"role": "assistant", "content": "", "tool_calls": [{
        "id": call_id, "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)}}]}


def test_calls_and_results_are_labelled_by_tool_name_not_call_id() -> None:
    """Issue 28: a provider's call id (~20 tokens, twice per call) tells the summariser
    nothing; the tool's name labels the call and, found through the id, its result."""
    call_id = "call_00_gO4J3uFMqymct7cuL4cqjhkI"
    text = render_turns(
        [{"role": "user", "content": "run the tests"},
         _call(call_id, "bash", {"command": "cd /testbed && pytest -x tests/test_a.py"}),
         {"role": "tool", "tool_call_id": call_id,
          "content": "[pruned tool output] [terminal] ran `cd /testbed && pytest -x "
                     "tests/test_a.py` -> exit 1, 40 lines output"}],
        max_turn_chars=4_000, max_total=400_000)
    assert call_id not in text
    assert "[TOOL CALL bash]: command: cd /testbed && pytest -x tests/test_a.py" in text
    # step 1's one-liner: its two tags become the label's "pruned", its facts stay
    assert ("[TOOL RESULT bash, pruned]: ran `cd /testbed && pytest -x tests/test_a.py` -> "
            "exit 1, 40 lines output") in text
    assert "[USER]: run the tests" in text


def test_arguments_are_unescaped_and_long_strings_keep_both_ends() -> None:
    """Arguments render as ``key: value`` lines without JSON escapes; a long string keeps
    its two ends (the command of a heredoc, its last line), absent values are left out."""
    body = "\n".join(f"line {i} of the script" for i in range(200))
    command = f"cd /repo && cat > run.py << 'EOF'\n{body}\nEOF\npython run.py --out /tmp/r.txt"
    text = render_turns(
        [_call("c1", "Bash", {"command": command, "timeout": None, "description": "write it"})],
        max_turn_chars=4_000, max_total=400_000)
    assert "cd /repo && cat > run.py << 'EOF'\nline 0 of the script" in text
    assert "python run.py --out /tmp/r.txt" in text
    assert "chars omitted]" in text and "line 100 of the script" not in text
    assert "timeout" not in text and "description: write it" in text
    assert '\\n' not in text and '"command"' not in text


def test_an_edit_is_shown_as_its_changed_lines() -> None:
    """An edit's old and new text repeat their unchanged lines: only the changed ones are
    shown, after the file path (which is never clipped)."""
    same = "\n".join(f"    keep_{i} = {i}" for i in range(40))
    old = f"def f():\n{same}\n    return 1\n"
    new = f"def f():\n{same}\n    return 2\n"
    text = render_turns(
        [_call("c1", "Edit", {"file_path": "/src/pkg/mod.py", "old_string": old,
                              "new_string": new, "replace_all": False})],
        max_turn_chars=4_000, max_total=400_000)
    change = "change: -    return 1\n+    return 2"
    assert text.index("file_path: /src/pkg/mod.py") < text.index(change)
    assert "keep_3" not in text


def test_a_pressure_excerpt_keeps_its_end() -> None:
    """A result the pressure pass demoted (one-liner + recent excerpt) keeps its one-liner
    and the end of its excerpt, where the error is."""
    excerpt = "\n".join(f"noise {i}" for i in range(100)) + "\nE   AssertionError: 3 != 4"
    result = ("[pruned tool output] [terminal] ran `pytest` -> exit 1, 101 lines output"
              f"\n…recent excerpt:\n{excerpt}")
    text = render_turns(
        [_call("c1", "bash", {"command": "pytest"}),
         {"role": "tool", "tool_call_id": "c1", "content": result}],
        max_turn_chars=4_000, max_total=400_000)
    assert "ran `pytest` -> exit 1, 101 lines output" in text
    assert text.endswith("E   AssertionError: 3 != 4") and "noise 3\n" not in text
