"""docs/embedding.md: its complete example runs as written, and it documents the real API."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from hermes_host.host import ContextHost, Session

DOC = Path(__file__).resolve().parents[1] / "docs" / "embedding.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_complete_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    example = next(b for b in _blocks() if "class KeepLastTurn" in b)
    exec(compile(example, str(DOC), "exec"), {"__name__": "embedding_example"})
    out = capsys.readouterr().out
    assert "committed" in out
    assert "Compacting context" in out and "Context compaction complete" in out


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        (ContextHost, "from_config"),
        (ContextHost, "open_session"),
        (ContextHost, "resume"),
        (Session, "add_user"),
        (Session, "add_assistant"),
        (Session, "add_tool_result"),
        (Session, "build_request"),
        (Session, "end_turn"),
        (Session, "compress"),
    ],
)
def test_documented_methods_exist_with_documented_parameters(owner: type, name: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"{name}(" in text
    params = [p for p in inspect.signature(getattr(owner, name)).parameters if p != "self"]
    documented = re.search(rf"`(?:\w+\.)?{name}\(([^`]*)\)", text)
    assert documented is not None, name
    for param in params:
        assert param in documented.group(1) or param in ("source",), (name, param)
