"""The names others depend on (SPEC §0, §1, §3, §14) — checked against what is installed."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import distribution, entry_points
from pathlib import Path

import pluggy

from hermes_host import hookspecs
from hermes_host.config import HermesConfig
from tests.host_helpers import TailEngine, make_host

REPO = Path(__file__).resolve().parents[1]


def test_hookspecs_name_the_lifecycle_and_memory_hooks_R_0_1() -> None:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    declared = {name for name in dir(pm.hook) if not name.startswith("_")}
    assert {"should_compress", "compress", "select_context",
            "prune_tool_results_only"} <= declared
    assert {"on_pre_compress", "on_session_switch", "on_session_reset"} <= declared


def test_distribution_package_and_console_script_names_R_14_1() -> None:
    expected = {
        ".": ("hermes-host", None),
        "plugins/hermes-compressor": ("hermes-compressor", "compressor"),
        "contrib_engines/hermes-retrieval": ("hermes-retrieval", "retrieval"),
        "contrib_engines/hermes-topic-router": ("hermes-topic-router", "topic_router"),
    }
    for folder, (name, engine) in expected.items():
        project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
        assert project["name"] == name
        if engine is not None:
            assert engine in project["entry-points"]["hermes_host.context_engines"]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"hermes-host": "hermes_host.cli:cli"}
    # ... and as installed: the script runs, the engines are found under those names
    assert distribution("hermes-host").metadata["Name"] == "hermes-host"
    installed = {ep.name for ep in entry_points(group="hermes_host.context_engines")}
    assert {"compressor", "retrieval", "topic_router"} <= installed
    script = Path(sys.executable).parent / "hermes-host"  # installed beside this Python
    assert script.is_file(), script
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0 and "engines" in done.stdout


def test_the_default_engine_is_the_compressor_R_3_2() -> None:
    assert HermesConfig().context.engine == "compressor"
    assert HermesConfig.model_validate({}).context.chain("compress") == ["compressor"]


def test_active_context_is_system_prompt_window_and_turn_injections_R_1_1(
    tmp_path: Path,
) -> None:
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="SYSTEM-1")
        session.add_user("first question")
        session.add_assistant("first answer")
        session.add_user("second question")
        request = session.build_request(["INJECTED-NOTE"])
        assert request[0] == {"role": "system", "content": "SYSTEM-1"}
        assert [m["content"] for m in request[1:3]] == ["first question", "first answer"]
        assert "second question" in str(request[3]["content"])
        assert "INJECTED-NOTE" in str(request[3]["content"])  # the turn's own injection
        assert len(request) == 4
        assert "INJECTED-NOTE" not in str(host.store.active_messages(session.id))
