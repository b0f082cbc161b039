"""``hermes-host config validate|show``, ``--help`` and ``--version`` (R-0.3, R-14.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from plugins_helpers import (
    FakeInstall,
    fake_installation,
    standard_install,
    write_config,
)

from hermes_host import __version__
from hermes_host.cli import cli

fake = pytest.fixture(fake_installation, name="fake")

GOOD = """
context:
  engine: alpha
memory:
  providers: [notes]
engines:
  alpha: {min_tokens: 10}
"""


def _validate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["config", "validate", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_help_and_version() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for command in ("engines", "config", "doctor"):
        assert f"\n  {command} " in result.stdout
    version = CliRunner().invoke(cli, ["--version"])
    assert version.exit_code == 0
    assert version.stdout.strip() == f"hermes-host, version {__version__}"


def test_validate_accepts_a_good_config_exit_0_r0_3(fake: FakeInstall, tmp_path: Path) -> None:
    standard_install(fake)
    config = write_config(tmp_path, GOOD)
    code, out, err = _validate("--config", str(config))
    assert code == 0, err
    assert out.startswith(f"✓ {config}: valid (context.engine: alpha)")
    assert "engines loaded: alpha; memory providers: notes" in out
    assert err == ""


def test_validate_typo_key_names_file_key_and_allowed_keys_r0_3(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "context:\n  engin: alpha\n")
    code, out, err = _validate("--config", str(config))
    assert code == 2 and out == ""
    assert f"{config}: invalid configuration" in err
    assert "context.engin: unknown key; allowed keys: engine, hooks" in err


def test_validate_wrong_type_names_the_key(fake: FakeInstall, tmp_path: Path) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "model:\n  context_length: lots\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert f"{config}: invalid configuration" in err
    assert "model.context_length:" in err and "'lots'" in err


def test_validate_unknown_engine_lists_installed_choices_r0_3(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "context:\n  engine: alpah\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert err.strip() == (
        f"{config}: context.engine: unknown engine 'alpah' (did you mean 'alpha'?); "
        "installed engines: alpha, broken, loud"
    )


def test_validate_broken_engine_names_distribution_version_and_error(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "context:\n  engine: broken\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert "engine 'broken' (acme-broken 0.0.7) failed to load: ImportError: " in err
    assert "acme_broken needs 'frobnicate'" in err


def test_validate_missing_memory_provider_is_only_a_warning(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(
        tmp_path, "context:\n  engine: alpha\nmemory:\n  providers: [ghost, notes]\n"
    )
    code, out, err = _validate("--config", str(config))
    assert code == 0
    assert "valid" in out
    assert "warning:" in err
    assert "memory.providers: 'ghost' not installed; installed memory providers: notes" in err
    assert "memory providers: notes" in out


def test_validate_json_and_config_from_environment(
    fake: FakeInstall, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    standard_install(fake)
    bad = write_config(tmp_path, "context:\n  engine: nope\n", name="bad.yaml")
    monkeypatch.setenv("HERMES_HOST_CONFIG", str(bad))
    code, out, _err = _validate("--json")
    report = json.loads(out)
    assert code == 2 and report["valid"] is False and report["source"] == str(bad)
    assert "unknown engine 'nope'" in report["errors"][0]

    good = write_config(tmp_path, GOOD, name="good.yaml")
    code, out, _err = _validate("--json", "--config", str(good))  # --config beats the env
    report = json.loads(out)
    assert code == 0 and report["valid"] is True
    assert report["engines"] == ["alpha"] and report["memory_providers"] == ["notes"]


def test_validate_unreadable_yaml_and_missing_file(fake: FakeInstall, tmp_path: Path) -> None:
    fake.activate()
    config = write_config(tmp_path, "context: [unclosed\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2 and f"{config}: not valid YAML" in err
    code, _out, err = _validate("--config", str(tmp_path / "absent.yaml"))
    assert code == 2 and "absent.yaml: config file not found" in err


def test_show_prints_effective_yaml_with_defaults_and_source(
    fake: FakeInstall, tmp_path: Path
) -> None:
    fake.activate()
    config = write_config(tmp_path, GOOD + "compression:\n  threshold_percent: 0.4\n")
    result = CliRunner().invoke(cli, ["config", "show", "--config", str(config)])
    assert result.exit_code == 0
    first, _, rest = result.stdout.partition("\n")
    assert first == f"# effective configuration from: {config}"
    data = yaml.safe_load(rest)
    assert data["compression"]["threshold_percent"] == 0.4  # the user's value
    assert data["compression"]["protect_last_n"] == 20  # a default, filled in
    assert data["engines"] == {"alpha": {"min_tokens": 10}}
    assert data["hooks"]["breaker"]["failures"] == 3


def test_show_json_defaults_when_no_file_and_redacts_url_passwords(
    fake: FakeInstall, tmp_path: Path
) -> None:
    fake.activate()
    result = CliRunner().invoke(cli, ["config", "show", "--json"])
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert shown["source"] is None and shown["config"]["context"]["engine"] == "compressor"

    config = write_config(tmp_path, "store:\n  url: postgresql://app:s3cr3t-pw@db:5432/h\n")
    result = CliRunner().invoke(cli, ["config", "show", "--json", "--config", str(config)])
    assert "s3cr3t-pw" not in result.stdout
    assert json.loads(result.stdout)["config"]["store"]["url"] == "postgresql://app:***@db:5432/h"


def test_show_invalid_config_exits_2(fake: FakeInstall, tmp_path: Path) -> None:
    fake.activate()
    config = write_config(tmp_path, "session_reset:\n  mode: weekly\n")
    result = CliRunner().invoke(cli, ["config", "show", "--config", str(config)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "session_reset.mode: 'weekly' is not allowed; allowed values:" in result.stderr


def test_validate_unknown_hook_in_context_hooks_lists_the_lifecycle_hooks(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "context:\n  hooks:\n    select_contex: [alpha]\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert f"{config}: invalid configuration" in err
    assert "context.hooks: Value error, unknown hook 'select_contex'; allowed: " \
           "should_compress, compress, select_context, prune_tool_results_only" in err


def test_validate_unknown_engine_in_a_select_context_chain_names_the_key(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(
        tmp_path, "context:\n  engine: alpha\n  hooks:\n    select_context: [alpha, router]\n"
    )
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert err.startswith(f"{config}: context.hooks.select_context: unknown engine 'router'")


def test_validate_options_of_an_unselected_broken_engine_say_why_unchecked_issue_12(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, GOOD + "  broken: {size: 2}\n")
    code, _out, err = _validate("--config", str(config))
    assert code == 2
    assert "engines.broken (not selected): engine 'broken' (acme-broken 0.0.7) does not " \
           "import, so its options cannot be checked: ImportError: " in err


@pytest.mark.parametrize("reply", [8_192, 4_000])
def test_a_reply_reservation_that_leaves_no_request_is_rejected_issue_28(
    tmp_path: Path, fake: FakeInstall, reply: int
) -> None:
    """``model.max_output_tokens`` at or over ``model.context_length`` leaves the request no
    room: exit 2 naming both keys.  The default (8,192, not written) on a small window is
    capped at half of it instead of being an error."""
    standard_install(fake)
    bad = write_config(
        tmp_path, GOOD + f"model:\n  context_length: 4000\n  max_output_tokens: {reply}\n"
    )
    code, _, err = _validate("--config", str(bad))
    assert code == 2
    assert "model.max_output_tokens" in err and "model.context_length (4,000)" in err
    fine = write_config(tmp_path, GOOD + "model:\n  context_length: 4000\n", name="fine.yaml")
    assert _validate("--config", str(fine))[0] == 0
