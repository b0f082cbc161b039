"""hermes-host installs beside Hermes Agent (issue 18, deliverable 5): the core's ranges
accept hermes-agent 0.19's pins, and the integration is imported only when Hermes uses it."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("run_agent", reason="needs the hermes-agent package (suite hermes-agent)")

from packaging.requirements import Requirement
from packaging.version import Version


def _requirements(dist: str) -> dict[str, Requirement]:
    found = {}
    for line in importlib.metadata.requires(dist) or []:
        req = Requirement(line)
        if req.marker is None:  # the base dependencies, not an extra's
            found[req.name.lower()] = req
    return found


def test_the_core_accepts_every_pin_of_hermes_agent_it_shares_issue_18() -> None:
    """hermes-agent pins exact versions (openai==2.24.0, pydantic, rich, pyyaml, Pillow…);
    each package hermes-host also needs must be allowed at that pin, and is installed so."""
    agent = _requirements("hermes-agent")
    host = _requirements("hermes-host")
    assert str(agent["openai"].specifier) == "==2.24.0"
    shared = sorted(set(agent) & set(host))
    assert "openai" in shared and "pydantic" in shared
    for name in shared:
        pins = [Version(s.version) for s in agent[name].specifier if s.operator == "=="]
        for pin in pins:
            assert host[name].specifier.contains(pin, prereleases=True), (
                f"hermes-host requires {host[name]}, hermes-agent pins {name}=={pin}")
        installed = Version(importlib.metadata.version(name))
        assert agent[name].specifier.contains(installed, prereleases=True)
        assert host[name].specifier.contains(installed, prereleases=True)


def test_the_integration_requires_hermes_agent_0_19_issue_18() -> None:
    reqs = _requirements("hermes-agent-hermes-host")
    assert reqs["hermes-agent"].specifier.contains(Version("0.19.0"))
    assert not reqs["hermes-agent"].specifier.contains(Version("0.20.0"))
    assert Version(importlib.metadata.version("hermes-agent")).release[:2] == (0, 19)


def test_nothing_imports_the_integration_until_hermes_loads_it_issue_18(tmp_path: Path) -> None:
    """hermes-host never imports it; Hermes imports it only when ``hermes_host`` is in
    ``plugins.enabled``."""
    script = textwrap.dedent("""
        import os, sys
        import hermes_host, hermes_host.host, hermes_host.plugins
        from hermes_host.config import HermesConfig
        hermes_host.plugins.load_plugins(HermesConfig())
        assert "hermes_agent_hermes_host" not in sys.modules, "imported by hermes-host"
        from hermes_cli.plugins import get_plugin_manager
        manager = get_plugin_manager()
        manager.discover_and_load(force=True)
        assert "hermes_agent_hermes_host" not in sys.modules, "imported while not enabled"
        assert manager._context_engine is None
        print("not-enabled ok")
        (open(os.path.join(os.environ["HERMES_HOME"], "config.yaml"), "w")
         .write("plugins:\\n  enabled: [hermes_host]\\n"))
        manager.discover_and_load(force=True)
        assert "hermes_agent_hermes_host.plugin" in sys.modules
        print("engine", manager._context_engine.name)
    """)
    home = tmp_path / "hermes"
    home.mkdir()
    env = {"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["not-enabled", "ok", "engine", "hermes_host"]
