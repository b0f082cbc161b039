"""``hermes-host doctor`` checks the summariser's and the chat model's provider as they would
really run (issue 30, deliverable 3): the key each needs (``api_key_env`` or the provider's
default variable), and that each configured ``base_url`` answers — a TCP connect by default,
an HTTP request with ``--probe`` (no key sent), nothing with ``--no-probe`` — against a real
loopback server and an unused port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.testing.fake_anthropic import FakeAnthropic
from hermes_host.testing.fake_openai import FakeOpenAI

_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL",
         "MY_GATEWAY_KEY")


@pytest.fixture(autouse=True)
def _no_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*_KEYS, "HERMES_HOST_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))


def _dead_url() -> str:
    """A loopback URL on a port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"memory:\n  providers: []\nstore:\n  url: {tmp_path}/s.db\n{body}",
                    encoding="utf-8")
    return path


def _doctor(config: Path, *args: str) -> tuple[int, dict[str, tuple[str, str]], str]:
    result = CliRunner().invoke(cli, ["doctor", "--json", "--config", str(config), *args])
    assert "Traceback" not in result.output, result.output
    report = json.loads(result.stdout)
    checks = {c["name"]: (c["status"], c["detail"]) for c in report["checks"]}
    assert report["healthy"] is (result.exit_code == 0)
    return result.exit_code, checks, result.stdout


def test_no_anthropic_key_the_chat_model_is_not_ok(tmp_path: Path) -> None:
    config = _config(tmp_path, "")  # model.provider: anthropic by default
    code, checks, _ = _doctor(config)
    status, detail = checks["chat model"]
    assert status == "warn", detail
    assert "hermes-host chat would not start" in detail and "set ANTHROPIC_API_KEY" in detail
    assert code == 0  # a warning: sessions run without a chat model
    plain = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["doctor", "--config", str(config)])
    assert plain.stdout.rstrip().splitlines()[-1].startswith("healthy, with ")
    assert "chat model" in plain.stdout.rstrip().splitlines()[-1]


def test_an_anthropic_key_makes_the_chat_model_ok(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-secret")
    code, checks, out = _doctor(_config(tmp_path, ""))
    assert checks["chat model"] == ("ok", "anthropic (model claude-sonnet-4-5)")
    assert code == 0 and "sk-ant-doctor-secret" not in out


def test_openai_without_a_key_and_the_api_key_env_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path, "model:\n  provider: openai\n  name: gpt-4o\n")
    _, checks, _ = _doctor(config)
    status, detail = checks["chat model"]
    assert status == "warn" and "set OPENAI_API_KEY" in detail

    named = _config(tmp_path, "model:\n  provider: openai\n  name: gpt-4o\n"
                    "  api_key_env: MY_GATEWAY_KEY\n"
                    "summarizer:\n  provider: anthropic\n  api_key_env: MY_GATEWAY_KEY\n")
    _, checks, _ = _doctor(named)
    assert checks["chat model"][0] == "warn" and "set MY_GATEWAY_KEY" in checks["chat model"][1]
    assert checks["summarizer"][0] == "warn" and "MY_GATEWAY_KEY" in checks["summarizer"][1]
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-gateway")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")
    _, checks, out = _doctor(named)
    assert checks["chat model"] == ("ok", "openai (model gpt-4o)")
    assert checks["summarizer"][0] == "ok"
    assert "sk-gateway" not in out


@pytest.mark.parametrize("args", [(), ("--probe",)], ids=["quick", "probe"])
def test_a_base_url_on_a_dead_port_is_said(tmp_path: Path, args: tuple[str, ...]) -> None:
    dead = _dead_url()
    config = _config(tmp_path, f"model:\n  provider: openai\n  name: gpt-4o\n  base_url: {dead}\n"
                     f"summarizer:\n  provider: openai\n  model: m\n  base_url: {dead}\n")
    code, checks, _ = _doctor(config, *args)
    for name in ("chat model", "summarizer"):
        status, detail = checks[name]
        assert status == "warn", (name, detail)
        assert f"{dead} does not answer (connection refused)" in detail
    assert "hermes-host chat would fail" in checks["chat model"][1]
    assert "offline fallback summary" in checks["summarizer"][1]
    assert code == 0


def test_no_probe_makes_no_connection(tmp_path: Path) -> None:
    dead = _dead_url()
    config = _config(tmp_path, f"model:\n  provider: openai\n  name: gpt-4o\n  base_url: {dead}\n")
    _, checks, _ = _doctor(config, "--no-probe")
    assert checks["chat model"] == ("ok", f"openai (model gpt-4o at {dead})")


@pytest.mark.parametrize("args", [(), ("--probe",)], ids=["quick", "probe"])
def test_a_base_url_that_answers_is_ok_and_gets_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-sent")
    with FakeOpenAI() as openai_server, FakeAnthropic() as anthropic_server:
        config = _config(
            tmp_path,
            f"model:\n  provider: openai\n  name: gpt-4o\n  base_url: {openai_server.base_url}\n"
            f"summarizer:\n  provider: anthropic\n  model: claude-x\n"
            f"  base_url: {anthropic_server.base_url}\n",
        )
        code, checks, _ = _doctor(config, *args)
        assert checks["chat model"] == (
            "ok", f"openai (model gpt-4o at {openai_server.base_url}; answers)")
        assert checks["summarizer"] == (
            "ok", f"anthropic (model claude-x at {anthropic_server.base_url}; answers)")
        assert code == 0
        # no model request, no key: a probe is a connect (or one bare GET)
        assert not openai_server.requests and not anthropic_server.requests


def test_the_environment_base_url_is_probed_as_the_sdk_would_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = _dead_url()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead)
    _, checks, _ = _doctor(_config(tmp_path, ""))
    status, detail = checks["chat model"]
    assert status == "warn" and f"{dead} does not answer" in detail


def test_doctor_in_a_subprocess_dead_base_url_and_no_key(tmp_path: Path) -> None:
    dead = _dead_url()
    config = _config(tmp_path, f"model:\n  provider: openai\n  name: gpt-4o\n  base_url: {dead}\n")
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env["HERMES_HOST_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hermes-host"), "doctor", "--json", "--config",
         str(config)],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert done.returncode == 0 and report["healthy"], done.stderr
    assert checks["chat model"]["status"] == "warn"
    assert "connection refused" in checks["chat model"]["detail"]
