"""The window bound is what status says and what the docs say (issue 12, window bound
honesty): ``status()["threshold_tokens"]`` is the threshold the decision actually uses, with
its parts, and ``build_request()`` says so when the request it returns does not fit the
model's context window."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from host_helpers import TailEngine, chat_turn, make_config, make_host

from hermes_host import CompressRequest, CompressResult, hookimpl
from hermes_host.host import ContextHost
from hermes_host.session.bound import request_budget


def _compressor_host(tmp_path: Path, **compression: object) -> ContextHost:
    """The real default engine, loaded from its entry point, on a 16K model."""
    config = make_config(
        "compressor",
        model={"context_length": 16_000, "max_output_tokens": 8_192},
        compression={"threshold_percent": 0.5, **compression},
    )
    return ContextHost.from_config(config, store=tmp_path / "state.db")


def test_status_threshold_is_the_one_the_compressor_decides_with_issue_12(
    tmp_path: Path,
) -> None:
    """issue 12: threshold_percent 0.5 on a 16K model compresses at 6,800 (a 0.75 floor and
    an output reservation) while ``status()["threshold_tokens"]`` said 8,000."""
    with _compressor_host(tmp_path) as host:
        session = host.open_session(system_prompt="sys")
        session.add_user("hello")
        status = session.status()
        outcome = session.end_turn()
        assert outcome.decision.threshold_tokens == 6_800
        assert status["threshold_tokens"] == 6_800
        rule = status["threshold"]
        assert rule["tokens"] == 6_800 and rule["decided_by"] == "engine:compressor"
        assert rule["configured_percent"] == 0.5
        assert rule["floor_percent"] == 0.75  # a window under 512K uses at least 75 %
        assert rule["output_reservation"] == 8_000  # max_output_tokens, at most half
        assert rule["cap_tokens"] is None
        # the parts add up to the number: 75 % of 16,000 is beyond 16,000 − 8,000, so the
        # tiny-window rule takes 85 % of the 8,000 that remain
        assert rule["tiny_window_percent"] == 0.85
        assert int((16_000 - rule["output_reservation"]) * 0.85) == rule["tokens"]


def test_status_threshold_follows_the_cap_and_a_large_window_issue_12(tmp_path: Path) -> None:
    config = make_config(
        "compressor",
        model={"context_length": 1_000_000, "max_output_tokens": 8_192},
        compression={"threshold_percent": 0.5, "threshold_tokens": 300_000},
    )
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session()
        status = session.status()
        assert status["threshold_tokens"] == 300_000
        assert status["threshold"]["floor_percent"] is None  # no floor at 1M tokens
        assert status["threshold"]["cap_tokens"] == 300_000


class _CompressOnly:
    """An engine without ``should_compress``: the host's own rule (R-4.2) decides."""

    @hookimpl
    def compress(self, request: CompressRequest) -> CompressResult:
        return CompressResult(messages=request.messages, outcome="noop")


def test_status_threshold_of_the_hosts_own_rule_names_its_parts_issue_12(
    tmp_path: Path,
) -> None:
    with make_host(tmp_path, _CompressOnly(), "only") as host:
        session = host.open_session()
        status = session.status()
        assert status["threshold_tokens"] == 2_000  # 4,000 × 0.5, no floor, no reservation
        assert status["threshold"] == {
            "tokens": 2_000, "decided_by": "host", "configured_percent": 0.5,
            "floor_percent": None, "cap_tokens": None, "output_reservation": 0,
            "tiny_window_percent": None,
        }


def test_build_request_warns_when_the_request_exceeds_the_context_window_issue_12(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """issue 12: with ``end_turn`` skipped, ``build_request()`` returned a 90K-token request
    for a 16K model without a word.  Issue 28: it now condenses the request to the request
    budget and says so, with the cause.  (4,000-token model here; nothing compresses.)"""
    with make_host(tmp_path, TailEngine(threshold=10**9)) as host:
        session = host.open_session(system_prompt="sys")
        model = host.config.model
        budget = request_budget(model.context_length, model.max_output_tokens)
        with caplog.at_level(logging.WARNING, logger="hermes_host"):
            chat_turn(session, 0)
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert session.status()["window_warning"] is None
            for n in range(1, 12):
                chat_turn(session, n, size=120)  # never end_turn: nothing compresses
            request = session.build_request()
        tokens = host.tokens.count_all(request)
        assert tokens <= budget < session.window_tokens
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings, "no WARNING for an oversized request"
        assert f"{session.window_tokens:,} -> {tokens:,} tokens (budget {budget:,})" in warnings[-1]
        assert "end_turn()" in warnings[-1] and session.id in warnings[-1]
        note = session.status()["window_warning"]
        assert note is not None and f"{tokens:,}" in note and "end_turn()" in note
