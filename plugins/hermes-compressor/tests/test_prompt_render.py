"""render_turns renders only what survives its bounds (issue 15) and says exactly what the
full rendering said: checked against the straightforward implementation it replaced, on every
real transcript and at bounds that exercise each branch (fits, halving, final clip)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from compressor_helpers import load_normalised, transcript_paths
from hermes_host.messages import text_of
from hermes_host.models import Message

from hermes_compressor.prompt import _clip, render_turns


def reference_render(messages: Sequence[Message], *, max_turn_chars: int, max_total: int) -> str:
    """The source turns as labelled plain text, each message clipped, the whole bounded."""
    limit = max_turn_chars
    while True:
        parts: list[str] = []
        for message in messages:
            role = str(message.get("role", "?")).upper()
            text = text_of(message)
            if role == "TOOL":
                name = message.get("name") or message.get("tool_call_id") or ""
                parts.append(f"[TOOL RESULT {name}]: {_clip(text, limit)}")
                continue
            if text.strip():
                parts.append(f"[{role}]: {_clip(text, limit)}")
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                args = fn.get("arguments")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                parts.append(
                    f"[{role} → TOOL CALL {fn.get('name')} id={call.get('id')}]: "
                    f"{_clip(args or '', limit // 2)}"
                )
        rendered = "\n\n".join(parts)
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
