"""Synthetic transcripts for the evaluation tests: a coding session whose later turns come
back to files, symbols and errors of its early turns (what needed-later recall measures)."""

from __future__ import annotations

import json
from pathlib import Path


def coding_session(turns: int = 40, filler_words: int = 120) -> list[dict]:
    """A system prompt, then ``turns`` user/assistant turns; every fifth turn returns to an
    artifact of turn ``i - 20`` (if any), so compressions have something to forget."""
    messages: list[dict] = [{"role": "system", "content": "You are a careful coding agent."}]
    filler = " ".join(["the build and test output was long and unremarkable"] * (filler_words // 8))
    for i in range(turns):
        path = f"src/pkg_{i}/module_{i}.py"
        symbol = f"handle_event_{i}"
        if i >= 20 and i % 5 == 0:
            old = i - 20
            ask = f"Go back to src/pkg_{old}/module_{old}.py: does handle_event_{old} still raise?"
        else:
            ask = f"Open {path} and make {symbol} return early. {filler}"
        messages.append({"role": "user", "content": ask})
        messages.append({
            "role": "assistant",
            "content": f"Edited {path}: {symbol} now returns early; Parser{i}Error is handled. "
            f"{filler}",
        })
    return messages


def write_jsonl(path: Path, messages: list[dict]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path
