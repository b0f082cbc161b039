"""Crashes the host-path fuzzing found (issue 13's reliability suite, ``nox -s reliability --
-k host_path``; R-0.3, R-1.4, R-14.5): each minimised input, through the real ContextHost on a
real SQLite file.  Bad input must get a clear :class:`MessageError` and lose nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost
from hermes_host.messages import MessageError


def _host(tmp_path: Path) -> ContextHost:
    config = HermesConfig.model_validate({
        "summarizer": {"provider": "offline"}, "memory": {"providers": []},
        "model": {"context_length": 4000, "max_output_tokens": 200},
    })
    return ContextHost.from_config(config, store=tmp_path / "state.db")


@pytest.mark.parametrize("field", ["system_prompt", "title", "user_id", "cwd", "session_id"])
def test_lone_surrogate_in_session_fields_is_a_clear_error_issue_13(
    tmp_path: Path, field: str
) -> None:
    """Fuzz crash class 1 (21 of 10,000 host-path examples): a system prompt holding a lone
    surrogate (``'before \\ud800 after'``, text that has no UTF-8 form) reached SQLite and
    came back as ``UnicodeEncodeError`` from ``open_session``.  Every text field of a new
    session is now checked first: a :class:`MessageError` naming the field and the position,
    never the text, and nothing is stored."""
    with _host(tmp_path) as host:
        before = host.store.list_sessions()
        with pytest.raises(MessageError, match=rf"{field}.*U\+D800.*position 7"):
            host.open_session(**{field: "before \ud800 after"})
        assert host.store.list_sessions() == before
        session = host.open_session(title="fine", system_prompt="be terse")
        session.add_user("hello")
        assert host.resume(session.id).window()[-1]["content"] == "hello"
