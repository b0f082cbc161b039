"""``hermes-host config validate`` refuses configs that cannot work (issue 12), against the
real engine distributions installed with the repository (compressor, retrieval,
topic_router): a misspelt ``engines:`` block, bad options for an installed engine that is not
selected, a lifecycle engine that cannot compress, every error in one pass, did-you-mean for
misspelt keys at every level."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.plugins import LOAD_PLUGINS_ENV, reset_discovery_cache


@pytest.fixture(autouse=True)
def _real_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(LOAD_PLUGINS_ENV, raising=False)
    monkeypatch.delenv("HERMES_HOST_CONFIG", raising=False)
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    reset_discovery_cache()
    yield
    reset_discovery_cache()


def _validate(tmp_path: Path, text: str) -> tuple[int, str, dict[str, object]]:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    plain = CliRunner().invoke(cli, ["config", "validate", "--config", str(path)])
    assert "Traceback" not in plain.output
    result = CliRunner().invoke(cli, ["config", "validate", "--json", "--config", str(path)])
    report = json.loads(result.stdout)
    assert plain.exit_code == result.exit_code
    return plain.exit_code, plain.stderr, report


def test_a_good_config_with_options_for_every_engine_is_valid_issue_12(tmp_path: Path) -> None:
    code, err, report = _validate(tmp_path, (
        "context:\n  engine: compressor\n  hooks:\n    select_context: [retrieval]\n"
        "engines:\n  compressor: {prune_min_chars: 300}\n  retrieval: {max_hits: 3}\n"
        "  topic_router: {}\n"
    ))
    assert code == 0, err
    assert report["valid"] is True and report["errors"] == []


def test_a_misspelt_engine_block_is_an_error_with_did_you_mean_issue_12(tmp_path: Path) -> None:
    """issue 12: ``engines.compresor`` (misspelt) was accepted and its options ignored."""
    code, err, report = _validate(tmp_path, "engines:\n  compresor: {prune_min_chars: 10}\n")
    assert code == 2
    assert report["errors"] == [
        f"{tmp_path / 'config.yaml'}: engines.compresor: unknown engine 'compresor' (did you "
        "mean 'compressor'?); its options would be ignored; installed engines: compressor, "
        "retrieval, topic_router"
    ]
    assert "engines.compresor: unknown engine 'compresor' (did you mean 'compressor'?)" in err


def test_options_of_an_installed_but_unselected_engine_are_validated_issue_12(
    tmp_path: Path,
) -> None:
    """issue 12: options for engines that are not selected were never checked."""
    code, err, report = _validate(tmp_path, (
        "context:\n  engine: compressor\n"
        "engines:\n  retrieval: {max_hitz: 3}\n  topic_router: {max_topics: lots}\n"
    ))
    assert code == 2, err
    errors = "\n".join(map(str, report["errors"]))  # type: ignore[call-overload]
    assert "engines.retrieval.max_hitz: unknown option" in errors
    assert "(did you mean 'max_hits'?)" in errors
    assert "engines.topic_router" in errors and "(not selected)" in errors


def test_a_lifecycle_engine_that_cannot_compress_is_an_error_issue_12(tmp_path: Path) -> None:
    """issue 12: ``context.engine: retrieval`` answers no ``compress``; the window then grew
    to 90,765 tokens on a 16K model and validate said "valid"."""
    code, err, report = _validate(tmp_path, "context:\n  engine: retrieval\n")
    assert code == 2
    assert report["errors"] == [
        f"{tmp_path / 'config.yaml'}: context.engine: no engine answers compress "
        "(retrieval does not implement it), so the window would grow without bound; "
        "select one that does for compress (installed: compressor)"
    ], err
    code, _err, report = _validate(
        tmp_path, "context:\n  engine: compressor\n  hooks:\n    compress: [topic_router]\n"
    )
    assert code == 2
    assert "context.hooks.compress: no engine answers compress (topic_router does not " \
           "implement it)" in str(report["errors"])


def test_every_error_is_reported_in_one_pass_issue_12(tmp_path: Path) -> None:
    """issue 12: errors came one pass at a time."""
    code, err, report = _validate(tmp_path, (
        "model:\n  context_lenght: 16000\n"
        "compression:\n  threshold_precent: 0.5\n"
        "context:\n  engine: compressor\n  hooks:\n    select_context: [retreival]\n"
        "engines:\n  compresor: {}\n  topic_router: {max_topicz: 2}\n"
    ))
    assert code == 2
    text = "\n".join(map(str, report["errors"]))  # type: ignore[call-overload]
    for expected in (
        "model.context_lenght: unknown key",
        "compression.threshold_precent: unknown key",
        "context.hooks.select_context: unknown engine 'retreival' (did you mean 'retrieval'?)",
        "engines.compresor: unknown engine 'compresor' (did you mean 'compressor'?)",
        "engines.topic_router.max_topicz: unknown option",
    ):
        assert expected in text, text
        assert expected in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("compresion: {}\n", "compresion: unknown key; allowed keys: model, context"),
        ("compression:\n  threshold_precent: 0.5\n", "(did you mean 'threshold_percent'?)"),
        ("model:\n  context_lenght: 5\n", "(did you mean 'context_length'?)"),
        ("hooks:\n  breaker:\n    failurs: 2\n", "(did you mean 'failures'?)"),
        ("hooks:\n  timeouts: {compres: 3}\n", "(did you mean 'compress'?)"),
        ("context:\n  hooks: {selct_context: [compressor]}\n", "(did you mean 'select_context'?)"),
        ("compresion: {}\n", "(did you mean 'compression'?)"),
        ("engines:\n  compressor: {prune_min_char: 3}\n", "(did you mean 'prune_min_chars'?)"),
    ],
)
def test_misspelt_keys_get_did_you_mean_at_every_level_issue_12(
    tmp_path: Path, text: str, expected: str
) -> None:
    code, err, _report = _validate(tmp_path, text)
    assert code == 2
    assert expected in err, err


def test_an_unknown_model_provider_is_an_error_with_did_you_mean_issue_17(
    tmp_path: Path,
) -> None:
    """issue 17: ``summarizer.provider: opneai`` passed ``config validate`` and failed only at
    the first summary; ``model.provider`` likewise at the first chat turn.  Both are
    reported, in the same pass as the engine checks."""
    code, err, report = _validate(tmp_path, (
        "summarizer: {provider: opneai}\nmodel: {provider: antropic}\n"
        "engines:\n  compresor: {}\n"
    ))
    assert code == 2
    errors = report["errors"]
    assert isinstance(errors, list) and len(errors) == 3
    text = "\n".join(errors)
    assert "summarizer.provider: unknown model provider 'opneai' (did you mean 'openai'?)" in text
    assert "model.provider: unknown model provider 'antropic' (did you mean 'anthropic'?)" in text
    assert "installed: anthropic, offline, openai" in text
    assert "opneai" in err and "antropic" in err


def test_installed_model_providers_are_valid_issue_17(tmp_path: Path) -> None:
    code, err, report = _validate(tmp_path, (
        "summarizer: {provider: openai, model: gpt-4o-mini}\nmodel: {provider: openai}\n"
    ))
    assert code == 0, err
    assert report["errors"] == []
