"""Issue 28: what a session costs under a prompt-caching price model, in ``replay --json`` and
``eval --json`` — every model call's cache read and write, the summary requests an LLM
summariser makes (counted also when the offline one wrote the summary), and "no
compression" for a session that fits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from host_helpers import transcript_files

from hermes_host.cost import CostLedger, PriceModel, shared_prefix_tokens, uncompressed_cost
from hermes_host.models import Message

pytest.importorskip("hermes_compressor")


def _len(message: Message) -> int:
    return len(str(message.get("content")))


def test_a_shared_prefix_is_a_cache_read_the_rest_a_write() -> None:
    a: Message = {"role": "system", "content": "x" * 100}
    b: Message = {"role": "user", "content": "y" * 10}
    c: Message = {"role": "assistant", "content": "z" * 30}
    ledger = CostLedger()
    assert ledger.add_request([a, b], _len) == (110, 0)  # nothing cached yet
    assert ledger.add_request([a, b, c], _len) == (140, 110)
    assert ledger.add_request([a, c], _len) == (130, 100)  # a compression rewrote b
    assert shared_prefix_tokens([a, b], [dict(a), dict(b)], _len) == 110  # equal, not same
    ledger.add_summary(1, 1000, 200)
    calls = (110 * 1.25) + (110 * 0.1 + 30 * 1.25) + (100 * 0.1 + 30 * 1.25)
    assert ledger.calls_cost == pytest.approx(calls)
    assert ledger.summary_cost == pytest.approx(1000 * 1.0 + 200 * 5.0)
    figures = ledger.as_dict()
    assert figures["cache_hit_rate"] == round(210 / 380, 4)
    assert figures["input_side_cost"] == round(calls + 2000, 1)
    assert figures["prices"] == {"cache_read": 0.1, "cache_write": 1.25,
                                 "uncached_input": 1.0, "output": 5.0}


def test_a_continuation_summary_reads_its_prefix_from_the_cache() -> None:
    ledger = CostLedger(prices=PriceModel(cache_read=0.2, output=4.0))
    ledger.add_summary(1, input_tokens=5000, output_tokens=100, cached_tokens=4800)
    assert ledger.summary_cost == pytest.approx(4800 * 0.2 + 200 * 1.0 + 100 * 4.0)


def test_no_compression_reads_all_but_the_new_messages_from_the_cache() -> None:
    assert uncompressed_cost([100, 150, 400]) == pytest.approx(
        100 * 1.25 + (100 * 0.1 + 50 * 1.25) + (150 * 0.1 + 250 * 1.25)
    )


def _cli(*args: str) -> dict[str, object]:
    script = Path(sys.executable).parent / "hermes-host"  # the console script users run
    done = subprocess.run([str(script), *args], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def _transcript(stem: str) -> Path:
    found = [p for p in transcript_files() if p.stem == stem]
    if not found:
        pytest.skip("the shared transcripts are not available (HERMES_HOST_TRANSCRIPTS)")
    return found[0]


def test_replay_json_reports_every_request_and_the_cost(tmp_path: Path) -> None:
    """The CLI as a user runs it: every model call's request size, the budget, requests
    over it (counted as invariant violations), and the cost with its summary requests."""
    path = _transcript("claudecode-spotter-ae4a77f8")
    config = tmp_path / "config.yaml"
    config.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n")
    out = _cli("replay", str(path), "--config", str(config), "--store",
               str(tmp_path / "state.db"), "--context-length", "16000", "--json")
    series = out["request_series"]
    assert isinstance(series, list) and len(series) > 100
    assert out["request_budget"] == 16_000 - 8_000  # 8,192 reserved, capped at half
    assert max(series) <= out["request_budget"] and out["requests_over_budget"] == 0
    cost = out["cost"]
    assert isinstance(cost, dict) and cost["model_calls"] == len(series)
    assert cost["request_tokens"] == sum(series)
    committed = [c for c in out["compressions"] if c["status"] == "committed"]
    # the offline summariser makes no LLM call, but the requests an LLM one would make
    # are counted, with their tokens
    assert out["llm_calls"] == 0
    assert cost["summary_requests"] == sum(c["summary"]["requests"] for c in committed) > 0
    assert cost["summary_input_tokens"] > 0 and cost["summary_output_tokens"] > 0
    assert 0 < cost["cache_hit_rate"] < 1
    assert cost["uncompressed"]["fits"] is False  # this session outgrows a 16K window


def test_eval_json_pools_the_cost_and_compares_with_no_compression(tmp_path: Path) -> None:
    """A session that fits the window: "no compression" is priced beside the compressed
    run, so compressing needlessly shows as a cost."""
    path = _transcript("claudecode-fasthooks-sample")
    config = tmp_path / "config.yaml"
    config.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n")
    out = _cli("eval", str(path), "--config", str(config), "--engines", "compressor",
               "--context-length", "64000", "--json")
    overall = out["overall"]["compressor"]  # type: ignore[index]
    cost = overall["cost"]
    assert cost["sessions_that_fit"] == 1
    assert cost["fitting_uncompressed_cost"] > 0
    run = out["runs"][0]  # type: ignore[index]
    assert run["cost"]["uncompressed"]["fits"] is True
    assert overall["requests_over_budget"] == 0
