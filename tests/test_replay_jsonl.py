"""``iter_jsonl_objects``: the one JSONL line reader behind ``replay`` and the importers, so a
bad line is reported with the same line number and wording by both (R-0.3)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from hermes_host.importers.base import TranscriptImportError, iter_json_records
from hermes_host.transcripts import TranscriptError, iter_jsonl_objects, load_transcript

USER = '{"role": "user", "content": "hi"}'


class LineError(Exception):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"{line}: {reason}")
        self.line, self.reason = line, reason


def test_blank_lines_are_skipped_and_numbers_stay_1_based() -> None:
    text = '\n{"a": 1}\n   \n{"b": [2]}\n'
    assert list(iter_jsonl_objects(text, LineError)) == [(2, {"a": 1}), (4, {"b": [2]})]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (f"{USER}\n{{oops\n", 2, "not a JSON object (JSONL expects one per line): "),
        (f"{USER}\n\n[1, 2]\n", 3, "expected a JSON object, got list"),
        ('"text"\n', 1, "expected a JSON object, got str"),
    ],
)
def test_bad_line_raises_the_callers_error_naming_the_line(
    text: str, line: int, reason: str, tmp_path: Path
) -> None:
    with pytest.raises(LineError) as info:
        list(iter_jsonl_objects(text, LineError))
    assert info.value.line == line and info.value.reason.startswith(reason)
    # No json traceback chained to what the user sees.
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__

    # replay and the importers word the same line identically, each with its own type.
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TranscriptError) as replay:
        load_transcript(path)
    with pytest.raises(TranscriptImportError) as imported:
        list(iter_json_records(path, text))
    assert (replay.value.line, replay.value.reason) == (line, info.value.reason)
    assert (imported.value.line, imported.value.reason) == (line, info.value.reason)
    assert str(replay.value) == str(imported.value) == f"{path}:{line}: {info.value.reason}"


def test_the_error_factory_is_called_with_line_and_reason() -> None:
    with pytest.raises(TranscriptError, match=r"^x\.jsonl:1: expected a JSON object, got int$"):
        list(iter_jsonl_objects("5\n", partial(TranscriptError, "x.jsonl")))
