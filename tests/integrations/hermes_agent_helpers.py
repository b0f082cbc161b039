"""A real Hermes Agent ``AIAgent`` on a throw-away ``HERMES_HOME``, talking to the loopback
OpenAI-compatible server, with ``context.engine: hermes_host`` (issue 18)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hermes_host.testing.fake_openai import FakeOpenAI, chat_responder

MODEL = "gpt-fake-1"
QUESTION = "question {n}: please look at part {n} of the report. " + "lorem ipsum dolor " * 60

DEFAULT_HOST_CONFIG = """
context: {engine: compressor}
summarizer: {provider: offline}
compression: {threshold_tokens: 2500, protect_last_n: 4}
memory: {providers: []}
"""


@dataclass
class HermesRig:
    home: Path
    fake: FakeOpenAI
    warnings: list[str] = field(default_factory=list)

    @property
    def host_home(self) -> Path:
        return self.home / "hermes-host"

    def write_configs(self, host_config: str = DEFAULT_HOST_CONFIG, *, engine: str = "hermes_host",
                      enabled: bool = True) -> None:
        plugins = "plugins:\n  enabled: [hermes_host]\n" if enabled else ""
        (self.home / "config.yaml").write_text(textwrap.dedent(f"""\
            model:
              default: {MODEL}
              provider: custom
              base_url: {self.fake.base_url}
              context_length: 128000
            context:
              engine: {engine}
            compression:
              threshold: 0.02
            """) + plugins, encoding="utf-8")
        self.host_home.mkdir(exist_ok=True)
        (self.host_home / "config.yaml").write_text(textwrap.dedent(host_config),
                                                    encoding="utf-8")

    def discover(self) -> Any:
        """Hermes' own plugin discovery, redone for this HERMES_HOME."""
        from hermes_cli.plugins import get_plugin_manager

        manager = get_plugin_manager()
        manager.discover_and_load(force=True)
        return manager

    def agent(self, **kwargs: Any) -> Any:
        from run_agent import AIAgent

        def status(kind: str, message: str) -> None:
            if kind == "warn":
                self.warnings.append(message)

        options: dict[str, Any] = {
            "base_url": self.fake.base_url, "api_key": "sk-test-hermes-agent", "model": MODEL,
            "quiet_mode": True, "enabled_toolsets": ["context_engine"], "skip_context_files": True,
            "skip_memory": True, "status_callback": status,
        }
        options.update(kwargs)
        return AIAgent(**options)


def run_turns(agent: Any, turns: range, history: list[dict[str, Any]] | None = None
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``agent.run_conversation`` once per turn; returns (results, final history)."""
    history = list(history or [])
    results = []
    for n in turns:
        result = agent.run_conversation(QUESTION.format(n=n), conversation_history=history)
        history = result["messages"]
        results.append(result)
    return results, history


@pytest.fixture(name="rig")
def rig_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HermesRig]:
    home = tmp_path / "hermes"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in ("HERMES_HOST_HOME", "HERMES_HOST_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI(responder=chat_responder, model=MODEL) as fake:
        rig = HermesRig(home=home, fake=fake)
        rig.write_configs()
        rig.discover()
        yield rig
