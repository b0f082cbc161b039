"""Retrieval against the host's real SQLite store (FTS5 porter + trigram, lineage)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from retrieval_helpers import SYSTEM, assistant, user
from test_retrieval_engine import HOSTILE

from hermes_host import SelectRequest
from hermes_host.messages import SUMMARY_PREFIX, check_invariants, text_of
from hermes_host.store import open_store
from hermes_retrieval import Retrieval
from hermes_retrieval.engine import BLOCK_START


def _request(session_id: str, window, history) -> SelectRequest:
    return SelectRequest(
        session_id=session_id, messages=window, incoming_message=window[-1],
        budget_tokens=100_000, history=history,
    )


@pytest.fixture
def lineage(tmp_path: Path):
    """A parent session (ended by a rotation) and its child, as compression leaves them."""
    store = open_store(tmp_path / "state.db")
    parent = store.create_session(title="work")
    store.append_messages(parent.id, [
        user("Why does the importer crash?"),
        assistant("ImportError: cannot import name 'load_plugins' from hermes_host/loader.py "
                  "— the function moved to hermes_host/plugins.py in commit 9abcb66."),
        user("ok, and the chart colours?"),
        assistant("Set the palette in web/static/palette.css."),
    ])
    child = store.create_session(parent_session_id=parent.id)
    store.append_messages(child.id, [user("continue")])
    yield store, child.id
    store.close()


def test_real_store_lineage_hit_is_injected(lineage):
    store, child = lineage
    window = [SYSTEM, user("continue"), assistant("Continuing."),
              user("the importer still raises ImportError for load_plugins, where is it now?")]
    history = store.history_reader(child)
    result = Retrieval().select_context(request=_request(child, window, history))
    text = text_of(result.messages[-1])
    assert text.startswith(BLOCK_START)
    assert "hermes_host/plugins.py in commit 9abcb66" in text
    assert check_invariants(result.messages) == []
    assert "palette.css" not in text, "an unrelated turn is not dragged in"


@pytest.mark.parametrize("query", HOSTILE)
def test_real_store_hostile_queries(lineage, query):
    store, child = lineage
    window = [SYSTEM, user(query)]
    history = store.history_reader(child)
    result = Retrieval().select_context(request=_request(child, window, history))
    assert "search_errors" not in result.decision
    assert check_invariants(result.messages) == []
    assert len(store.history_reader(child).messages()) == 5, "nothing written"


@pytest.mark.slow
def test_100k_message_lineage_answers_within_the_hook_timeout(tmp_path: Path):
    """R-11.3 / hook time limit: 100,000 stored messages over a five-session lineage, one
    retrieval (≈16 FTS5 queries + bookends) well inside the 5 s select_context default."""
    store = open_store(tmp_path / "big.db")
    words = ["alpha", "render", "bucket", "window", "tooltip", "legend", "schema", "parser"]
    parent = None
    for s in range(5):
        session = store.create_session(parent_session_id=parent)
        batch = []
        for j in range(20_000):
            i = s * 20_000 + j
            body = (f"turn {i} {words[i % 8]} {words[(i * 7) % 8]} update file "
                    f"src/mod_{i % 500}/part_{i % 37}.py and check render output")
            batch.append(user(body) if i % 2 else assistant(body))
        if s == 1:
            batch[777] = assistant("The flaky_cache_key bug is in src/mod_7/part_3.py:412")
        store.append_messages(session.id, batch)
        parent = session.id
    assert parent is not None
    window = [SYSTEM, user("the render of src/mod_7/part_3.py: is flaky_cache_key still wrong?")]
    history = store.history_reader(parent)
    started = time.monotonic()
    result = Retrieval().select_context(request=_request(parent, window, history))
    elapsed = time.monotonic() - started
    assert elapsed < 5.0, elapsed
    assert "src/mod_7/part_3.py:412" in text_of(result.messages[-1])
    # After a compaction the names index also scans the stored lineage (once per epoch).
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\nfix the cache"}
    compacted = [SYSTEM, summary, assistant("Continuing."), window[-1]]
    started = time.monotonic()
    result = Retrieval().select_context(request=_request(parent, compacted, history))
    elapsed = time.monotonic() - started
    store.close()
    assert elapsed < 5.0, elapsed
    assert result.decision["names"] > 0
