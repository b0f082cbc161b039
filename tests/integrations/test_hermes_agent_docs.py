"""docs/integrations/hermes-agent.md: its example runs as written in a real Hermes Agent,
and the config it tells Hermes users to write is what the engine needs (issue 18, 4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("run_agent", reason="needs the hermes-agent package (suite hermes-agent)")

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "hermes-agent.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_example_runs_in_a_real_hermes_agent_issue_18(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("HERMES_HOST_HOME", "HERMES_HOST_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_HOME", "set by the example")  # restored after the test
    (example,) = [b for b in _blocks("python") if "AIAgent" in b]
    from hermes_cli.plugins import get_plugin_manager

    monkeypatch.setattr(get_plugin_manager(), "_discovered", False)  # this new HERMES_HOME
    exec(compile(example, str(DOC), "exec"), {"__name__": "hermes_agent_doc_example"})
    out = capsys.readouterr().out
    assert "engine: hermes_host" in out
    store = re.search(r"store: (\S+)", out)
    assert store and store.group(1).endswith("hermes-host/state.db")
    assert Path(store.group(1)).is_file()


def test_the_documented_hermes_config_lines_are_the_ones_hermes_reads_issue_18() -> None:
    yaml_blocks = _blocks("yaml")
    hermes = next(b for b in yaml_blocks if "plugins:" in b)
    assert "enabled: [hermes_host]" in hermes and "engine: hermes_host" in hermes
    from hermes_agent_hermes_host.engine import ENGINE_NAME

    assert ENGINE_NAME == "hermes_host"
    host = next(b for b in yaml_blocks if "summarizer:" in b)
    import yaml

    from hermes_host.config import HermesConfig

    HermesConfig.model_validate(yaml.safe_load(host))  # the suggested config is valid
