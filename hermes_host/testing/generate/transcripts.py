"""Sessions from recorded OpenAI-format JSONL transcripts, normalised as the host
normalises a window; and one session interleaving several transcripts."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_host.messages import check_invariants, normalize_alternation, repair_tool_pairs
from hermes_host.models import Message
from hermes_host.testing.generate.session import Session

__all__ = ["interleave_transcripts", "transcript_sessions"]


def _window_from(messages: list[Message]) -> tuple[list[Message], str | None]:
    repaired, _ = repair_tool_pairs(messages)
    window, _ = normalize_alternation(repaired)
    problems = check_invariants(window)
    if problems:
        return window, f"cannot be normalised into a valid window: {problems[0]}"
    return window, None


def transcript_sessions(directory: str | Path) -> list[Session]:
    """Two sessions per ``*.jsonl`` file: the whole transcript, and a window cut after a user
    message near the middle (where ``select_context`` runs).  A file that cannot be read
    becomes a session whose ``skip_reason`` names the file and line."""
    from hermes_host.transcripts import TranscriptError, load_transcript

    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"--hermes-transcripts: {root} is not a folder")
    out: list[Session] = []
    for path in sorted(root.glob("*.jsonl")):
        stem = f"transcript:{path.stem}"
        try:
            transcript = load_transcript(path)
        except TranscriptError as exc:
            out.append(Session(stem, "transcript", str(exc), [], skip_reason=str(exc)))
            continue
        head: list[Message] = []
        if transcript.system_prompt is not None:
            head = [{"role": "system", "content": transcript.system_prompt}]
        full = head + transcript.messages
        window, reason = _window_from(full)
        out.append(Session(stem, "transcript", f"all of {path.name}", window, skip_reason=reason))
        users = [i for i, m in enumerate(full) if m.get("role") == "user"]
        if len(users) >= 2:
            cut = users[len(users) // 2]
            window, reason = _window_from(full[: cut + 1])
            out.append(Session(f"{stem}@{cut + 1}", "transcript",
                               f"{path.name} up to message {cut + 1}", window, reason))
    if not out:
        raise FileNotFoundError(f"--hermes-transcripts: no *.jsonl files in {root}")
    return out


def _transcript_turns(path: Path) -> list[list[Message]]:
    turns: list[list[Message]] = [[]]
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("role") == "user" and any(m.get("role") == "assistant" for m in turns[-1]):
            turns.append([])
        turns[-1].append(message)
    return turns


def interleave_transcripts(paths: list[Path], out: Path, block: int = 4) -> Path:
    """Write one session that alternates ``block`` turns of each transcript in ``paths``:
    a multi-topic session built from real ones (no recorded transcript switches topics).
    The topic-routing benchmark and its test use the same session."""
    sessions = [_transcript_turns(p) for p in paths]
    with out.open("w", encoding="utf-8") as fh:
        for i in range(0, max(len(t) for t in sessions), block):
            for turns in sessions:
                for turn in turns[i : i + block]:
                    for message in turn:
                        fh.write(json.dumps(message) + "\n")
    return out
