"""The search query comes from the user's own words, not from reference blocks that earlier
engines of the ``select_context`` chain wrote into the incoming message (R-11.3, R-3.1).

A recording FTS5 ``HistoryReader`` (``FtsHistory.queries``) shows exactly what was searched.
"""

from __future__ import annotations

import pytest
from retrieval_helpers import SYSTEM, FtsHistory, assistant, user

from hermes_host import SelectRequest
from hermes_host.messages import strip_reference_blocks, text_of
from hermes_retrieval import Retrieval
from hermes_retrieval.engine import BLOCK_END, BLOCK_START

# The topic router's note as that engine writes it (one line, "[… — REFERENCE ONLY] … [END …]");
# written out here because retrieval must not depend on the router package.
ROUTER_NOTE = (
    "[TOPIC ROUTER — REFERENCE ONLY] This request belongs to the topic “chart colours”. "
    "3 earlier turns (topics: “quarterly billing”) are left out of this request; they remain "
    "in the stored history. They mention: legacy/billing_export.py, LedgerSyncError, "
    "reconcile_invoices. [END TOPIC ROUTER NOTE]"
)
# Any other engine's block by the same convention: a bracketed header line, an [END …] line.
OTHER_BLOCK = (
    "[PLANNER MEMO — REFERENCE ONLY]\nOpen items: migrate PaymentGatewayTimeout handling in "
    "vendor/stripe_shim.py.\n[END PLANNER MEMO]"
)
USER_TEXT = "Why does aider/repomap.py fail again with that AttributeError?"
NEEDLE = (
    "Traceback: AttributeError: module 'aider.main' has no attribute 'RepoMap' "
    "raised from aider/repomap.py line 88 in get_repo_map"
)
DECOY = (
    "legacy/billing_export.py raised LedgerSyncError in reconcile_invoices; "
    "PaymentGatewayTimeout in vendor/stripe_shim.py during quarterly billing"
)
BLOCK_ONLY_TERMS = (
    "billing_export", "ledgersyncerror", "reconcile_invoices", "quarterly", "billing",
    "paymentgatewaytimeout", "stripe_shim", "planner", "router", "topic",
)


def _history() -> FtsHistory:
    history = FtsHistory()
    history.add(
        [
            ("s1", user("please run the tests"), False),
            ("s1", {"role": "tool", "tool_call_id": "c1", "content": NEEDLE}, False),
            ("s1", assistant(DECOY), False),
        ]
    )
    return history


def _select(incoming: dict, history: FtsHistory):
    window = [SYSTEM, user("please fix the chart"), assistant("Fixed the chart."), incoming]
    return Retrieval().select_context(
        request=SelectRequest(
            session_id="s2",
            messages=window,
            incoming_message=incoming,
            budget_tokens=50_000,
            history=history,
            state={},
        )
    )


def _own_text() -> str:
    """Everything the query may legitimately draw on: the user's words and the window."""
    return " ".join([USER_TEXT, "please fix the chart", "Fixed the chart."]).lower()


@pytest.mark.parametrize(
    "content",
    [
        f"{ROUTER_NOTE}\n\n{USER_TEXT}",
        f"{OTHER_BLOCK}\n\n{ROUTER_NOTE}\n\n{USER_TEXT}",
        [{"type": "text", "text": ROUTER_NOTE}, {"type": "text", "text": USER_TEXT}],
    ],
    ids=["router-note", "two-blocks", "list-content"],
)
def test_terms_only_in_another_engines_block_do_not_drive_the_search_R_11_3(content):
    history = _history()
    result = _select({"role": "user", "content": content}, history)

    queries = [q.lower() for q in history.queries]
    assert queries, "the user's own words are still searched"
    for term in BLOCK_ONLY_TERMS:
        assert not any(term in q for q in queries), f"{term!r} came from a reference block"
    own = _own_text()
    for query in queries:
        assert query in own, f"query {query!r} is not from the user's text or the window"
    # The user's own identifiers still drive it, strongest first.
    assert "aider/repomap.py" in queries and "attributeerror" in queries

    text = text_of(result.messages[-1])
    assert text.startswith(BLOCK_START) and BLOCK_END in text
    block = text.split(BLOCK_END)[0]
    assert "aider/repomap.py line 88" in block, "the user's identifiers find the needle"
    assert "reconcile_invoices" not in block, "the decoy matched only the other block's names"
    assert ROUTER_NOTE in text, "the other engine's block stays in the message as it was"


def test_the_same_request_without_any_block_searches_the_same_terms():
    """Stripping leaves exactly the user's words: the queries equal a block-free turn's."""
    plain, routed = _history(), _history()
    _select(user(USER_TEXT), plain)
    _select(user(f"{ROUTER_NOTE}\n\n{OTHER_BLOCK}\n\n{USER_TEXT}"), routed)
    assert routed.queries == plain.queries


def test_strip_reference_blocks_keeps_user_text_and_unclosed_headers():
    assert strip_reference_blocks(f"{ROUTER_NOTE}\n\n{USER_TEXT}") == USER_TEXT
    own_block = f"{BLOCK_START}\n[1] tool · message 3\n{NEEDLE}\n\n{BLOCK_END}\n\n{USER_TEXT}"
    assert strip_reference_blocks(own_block) == USER_TEXT
    # A header with no [END …] marker is not a block: nothing the user typed is cut off.
    unclosed = "[NOTE — REFERENCE ONLY] keep legacy/billing_export.py in mind. " + USER_TEXT
    assert strip_reference_blocks(unclosed) == unclosed
    # Brackets the user types are not headers.
    typed = "see [issue 12] and [END of list] in aider/repomap.py"
    assert strip_reference_blocks(typed) == typed
