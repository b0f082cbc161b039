"""The framework integrations' ``status()`` keys are the documented ones (issue 30,
deliverable 3): :data:`STATUS_KEYS` is ``Session.status()``'s keys plus ``error`` (a real
session on a real store), and both integration pages list exactly those keys.  The
integrations' own behaviour is tested in their suites (tests/integrations/test_*_status.py);
this part needs no framework."""

from __future__ import annotations

import re
from pathlib import Path

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.integrations._status import STATUS_KEYS, integration_status

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations"


def test_status_keys_are_the_session_status_keys_plus_error(tmp_path: Path) -> None:
    config = HermesConfig.model_validate({"memory": {"providers": []},
                                          "summarizer": {"provider": "offline"}})
    with ContextHost.from_config(config, store=tmp_path / "state.db") as host:
        session = host.open_session("keys", "system")
        session.add_user("hello")
        assert (*session.status(), "error") == STATUS_KEYS
        status = integration_status(lambda: session, None)
        assert list(status) == list(STATUS_KEYS) and status["error"] is None
    closed = integration_status(lambda: session, None, "conv-1")
    assert list(closed) == list(STATUS_KEYS)
    assert closed["conversation_id"] == "conv-1" and closed["error"].startswith(
        "hermes-host cannot read this conversation: ")


def test_the_integration_pages_list_every_key() -> None:
    for page in ("langchain.md", "openai-agents.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        section = " ".join(text.split("## Status\n", 1)[1].strip().split("\n\n", 1)[0].split())
        listed = section.split("the same keys:")[1].split(" — ")[0]
        assert tuple(re.findall(r"`([a-z_]+)`", listed)) == STATUS_KEYS, page
