"""Strict config loading (issue 12, config strictness): bounded YAML, strict types, duplicate
keys rejected with their line — for ``config validate``, ``config show`` and every command that
loads ``config.yaml`` (they all go through :func:`hermes_host.config.load_config`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.config import MAX_YAML_NODES, ConfigError, load_config

# The classic "billion laughs": nine levels of nine aliases, under 1 KB of YAML, the last
# level used as a value whose error message the old loader built in full.
_LEVELS = "\n".join(
    f"    {chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
    for i in range(9)
)
BOMB = f"engines:\n  x:\n    a: &a [lol]\n{_LEVELS}\nmodel:\n  name: *j\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    return str(info.value)


def test_an_alias_bomb_is_refused_quickly_with_a_short_message_issue_12(
    tmp_path: Path,
) -> None:
    """issue 12: a 1 KB alias bomb took 36 s and 3.1 GB (the error built a full repr of the
    expanded document).  Now the loader refuses the expansion itself."""
    assert len(BOMB) < 1024
    started = time.monotonic()
    message = _error(tmp_path, BOMB)
    elapsed = time.monotonic() - started
    assert "alias" in message and str(MAX_YAML_NODES) in message, message
    assert len(message) < 400
    assert elapsed < 5, elapsed  # a safety net, not a benchmark: the old code took 36 s


def test_a_few_aliases_in_a_normal_config_still_work_issue_12(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, (
        "hooks:\n  timeouts: &t {should_compress: 3.0, compress: 90.0}\n"
        "engines:\n  compressor: &opts {prune_min_chars: 300}\n  other: *opts\n"
    )))
    assert cfg.hooks.timeouts == {"should_compress": 3.0, "compress": 90.0}
    assert cfg.engines["other"] == {"prune_min_chars": 300}


def test_error_text_is_bounded_for_a_huge_value_issue_12(tmp_path: Path) -> None:
    """issue 12: the error text is bounded without first building a full repr."""
    big = "[" + ", ".join(str(n) for n in range(3000)) + "]"
    message = _error(tmp_path, f"model:\n  name: {big}\n")
    assert "model.name" in message
    assert len(message) < 400, message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('compression:\n  micro_compact: "yes"\n', "compression.micro_compact"),
        ('compression:\n  threshold_percent: "0.5"\n', "compression.threshold_percent"),
        ('model:\n  context_length: "16000"\n', "model.context_length"),
        ("compression:\n  micro_compact: 1\n", "compression.micro_compact"),
        ('summarizer:\n  max_retries: "2"\n', "summarizer.max_retries"),
        ('hooks:\n  timeouts: {compress: "30"}\n', "hooks.timeouts.compress"),
    ],
)
def test_quoted_values_are_not_coerced_issue_12(tmp_path: Path, text: str, key: str) -> None:
    """issue 12: ``micro_compact: "yes"`` and ``threshold_percent: "0.5"`` were coerced."""
    message = _error(tmp_path, text)
    assert f"  {key}:" in message, message


def test_ints_are_still_fine_where_a_number_is_expected_issue_12(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "compression:\n  threshold_percent: 1\n"
                                       "hooks:\n  timeouts: {compress: 30}\n"))
    assert cfg.compression.threshold_percent == 1.0
    assert cfg.hooks.timeouts["compress"] == 30.0


def test_duplicate_keys_are_rejected_with_their_lines_issue_12(tmp_path: Path) -> None:
    """issue 12: a duplicate key silently took the last value."""
    message = _error(tmp_path, (
        "compression:\n"
        "  threshold_percent: 0.4\n"
        "  protect_last_n: 10\n"
        "  threshold_percent: 0.9\n"
    ))
    assert "duplicate key 'threshold_percent'" in message, message
    assert "line 4" in message and "line 2" in message, message


def test_merge_keys_may_still_be_overridden_issue_12(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, (
        "engines:\n"
        "  a: &base {size: 1, label: x}\n"
        "  b:\n    <<: *base\n    size: 2\n"
    )))
    assert cfg.engines["b"] == {"size": 2, "label": "x"}


@pytest.mark.parametrize("command", [["config", "validate"], ["config", "show"],
                                     ["engines", "list"], ["doctor"]])
def test_every_command_loading_config_applies_the_rules_issue_12(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    config = _write(tmp_path, "compression:\n  micro_compact: true\n  micro_compact: false\n")
    started = time.monotonic()
    result = CliRunner().invoke(cli, [*command, "--config", str(config)])
    assert "Traceback" not in result.output
    # (doctor's table may wrap the line between the two)
    assert "duplicate key" in result.output and "'micro_compact'" in result.output
    bomb = _write(tmp_path, BOMB)
    result = CliRunner().invoke(cli, [*command, "--config", str(bomb)])
    assert "Traceback" not in result.output
    assert "alias" in result.output and len(result.output) < 4000
    assert time.monotonic() - started < 30
