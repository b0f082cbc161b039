"""Session reset (``/new``, ``session_reset.mode``) and per-user sessions for gateways (R-12.2)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from hermes_host.config import HermesConfig, SessionResetSection
from hermes_host.host import ContextHost, reset_due
from tests.host_helpers import RecordingProvider, TailEngine


def _ts(day: int, hour: int, minute: int = 0) -> float:
    return dt.datetime(2026, 3, day, hour, minute).timestamp()


def test_reset_rule_idle_daily_both_none() -> None:
    idle = SessionResetSection(mode="idle", idle_minutes=30)
    assert reset_due(idle, _ts(1, 10), _ts(1, 10, 29)) is None
    assert reset_due(idle, _ts(1, 10), _ts(1, 10, 30)) == "idle"
    daily = SessionResetSection(mode="daily", daily_hour=4)
    assert reset_due(daily, _ts(1, 3), _ts(1, 3, 59)) is None
    assert reset_due(daily, _ts(1, 3), _ts(1, 4, 0)) == "daily"
    assert reset_due(daily, _ts(1, 5), _ts(2, 3)) is None
    assert reset_due(daily, _ts(1, 5), _ts(2, 4)) == "daily"
    both = SessionResetSection(mode="both", idle_minutes=600, daily_hour=4)
    assert reset_due(both, _ts(1, 23), _ts(2, 4, 1)) == "daily"
    assert reset_due(SessionResetSection(mode="none"), _ts(1, 1), _ts(9, 1)) is None


def _host(tmp_path: Path, recorder: RecordingProvider, **extra: object) -> ContextHost:
    (tmp_path / "MEMORY.md").write_text("- likes short answers\n", encoding="utf-8")
    config = HermesConfig.model_validate(
        {
            "context": {"engine": "tail"},
            "memory": {"providers": ["markdown", "rec"], "directory": str(tmp_path)},
            **extra,
        }
    )
    return ContextHost.from_config(
        config,
        store=tmp_path / "state.db",
        extra_plugins={"tail": TailEngine(threshold=10**9), "rec": recorder},
    )


def test_new_resets_to_a_fresh_session_keeping_the_old_one(tmp_path: Path) -> None:
    recorder = RecordingProvider()
    with _host(tmp_path, recorder) as host:
        old = host.open_session(system_prompt="base", user_id="u1")
        old.add_user("hello")
        fresh = old.reset("new")
        assert fresh.id != old.id
        assert fresh.system_prompt == old.system_prompt  # memory appended once, not twice
        assert fresh.system_prompt.count("likes short answers") == 1
        assert fresh.raw_window == []
        assert host.store.get_session(old.id).end_reason == "new"
        assert [m.message for m in host.store.all_messages(old.id)] == [
            {"role": "user", "content": "hello"}
        ]
        assert ("end", old.id, "new") in recorder.events


def test_gateway_sessions_per_user_and_idle_reset(tmp_path: Path) -> None:
    recorder = RecordingProvider()
    with _host(tmp_path, recorder, session_reset={"mode": "idle", "idle_minutes": 5}) as host:
        alice = host.session_for("alice", system_prompt="base")
        alice.add_user("hi from alice")
        bob = host.session_for("bob", system_prompt="base")
        assert bob.id != alice.id
        again = host.session_for("alice", system_prompt="base")
        assert again.id == alice.id and again.raw_window == alice.raw_window
        assert alice.reset_due() is None
        later = time.time() + 6 * 60
        assert alice.reset_due(now=later) == "idle"
        renewed = host.session_for("alice", system_prompt="base", now=later)
        assert renewed.id not in (alice.id, bob.id)
        assert host.store.get_session(alice.id).end_reason == "idle"
    with _host(tmp_path, RecordingProvider(), group_sessions_per_user=False) as host:
        shared = host.session_for("carol", system_prompt="base")
        assert shared.id == host.session_for("dave", system_prompt="base").id
