"""The distribution as the host sees it: entry point, loading with options, option errors,
and the hooks answered through the fence (R-0.2, R-0.3, R-14.2, R-14.3)."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest
from compressor_helpers import compress_request, conversation, should_request
from hermes_host.config import HermesConfig
from hermes_host.models import CompressResult, SummarizerSettings
from hermes_host.plugins import load_plugins
from replay_driver import runner_for

from hermes_compressor import Compressor, OptionsError


def test_r14_2_entry_point_names_the_class() -> None:
    """R-14.2: entry point ``compressor`` in ``hermes_host.context_engines``."""
    found = [
        ep for ep in entry_points(group="hermes_host.context_engines") if ep.name == "compressor"
    ]
    assert len(found) == 1
    assert found[0].value == "hermes_compressor.engine:Compressor"
    assert found[0].load() is Compressor


def test_r0_2_host_loads_the_engine_with_its_options_block() -> None:
    """R-0.2/R-14.2: the host's stevedore loader instantiates it with ``options=``."""
    config = HermesConfig.model_validate(
        {
            "context": {"engine": "compressor"},
            "engines": {"compressor": {"max_tail_message_floor": 12}},
            "memory": {"providers": []},
        }
    )
    loaded = load_plugins(config)
    engine = loaded.pm.get_plugin("compressor")
    assert isinstance(engine, Compressor)
    assert engine.options.max_tail_message_floor == 12


def test_r0_3_unknown_or_wrong_option_is_a_clear_error() -> None:
    """R-0.3: a typo'd key names the key and the allowed keys; a wrong type names the key."""
    with pytest.raises(OptionsError) as typo:
        Compressor(options={"max_tail_mesage_floor": 5})
    assert "engines.compressor.max_tail_mesage_floor: unknown key" in str(typo.value)
    assert "max_tail_message_floor" in str(typo.value)
    with pytest.raises(OptionsError, match=r"engines\.compressor\.prune_min_chars"):
        Compressor(options={"prune_min_chars": "lots"})


def test_r14_3_hooks_answer_through_the_fence() -> None:
    """R-14.3/R-0.4: should_compress and compress answers are adopted by the HookRunner
    (valid types, window invariants, system prompt unchanged)."""
    engine = Compressor()
    runner = runner_for(engine)
    decision = runner.call(
        "compressor", "should_compress", should_request(160_000, context_length=200_000)
    )
    assert decision.adopted and decision.value.compress is True
    msgs = conversation(20)
    offline = SummarizerSettings(provider="offline")
    fenced = runner.call(
        "compressor", "compress", compress_request(msgs, engine=engine, summarizer=offline)
    )
    assert fenced.adopted, fenced.error
    assert isinstance(fenced.value, CompressResult)
    assert fenced.value.outcome == "summarised" and fenced.value.llm_calls == 0
    assert fenced.value.messages[0] == msgs[0]  # the system prompt is immutable
