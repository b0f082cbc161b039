"""The ``retrieval`` engine: before each send, bring back what this turn needs from history.

Compression keeps the window small, but the store keeps everything (R-1.2).  When the user
asks about ``aider/repomap.py`` forty turns after it was read, the read may only survive as
one line of a summary.  This engine searches the session's full stored lineage — archived,
compacted and earlier sessions included — through the read-only ``HistoryReader`` the host
passes in, and injects the best excerpts as **one turn-scoped reference block** prepended to
the incoming user message:

* turn-scoped: the block lives only in this turn's request; the host never persists what
  ``select_context`` adds (R-2.2, R-11.3), so nothing accumulates turn after turn;
* placed inside the last user message: no new message is created, so role alternation holds
  (R-1.4) and every earlier message stays byte-identical, so prompt caching holds (R-1.3);
* bounded: at most ``budget_share`` of the tokens the window leaves free this turn;
* no duplicates: an excerpt already present verbatim in the window is not injected again;
* stable: computed once per user turn (or window epoch) and handed back in ``state``, so an
  agent loop's later sends of the same turn carry the identical block;
* after a compaction, also a short index of the names (paths, symbols, errors) the compacted
  history mentions and the window no longer shows.

An agent run whose only user request was compacted into the summary gets the block after
its newest tool result instead (still no new message).

Search is lexical (FTS5/BM25 through the store); exact identifiers from the incoming message
weigh most (see :mod:`hermes_retrieval.query`).  Results of the per-term queries are fused
by weighted reciprocal rank, so a message that matches several identifiers wins.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.messages import is_summary, strip_reference_blocks, text_of
from hermes_host.redact import contains_secret
from hermes_host.tokens import count_messages, count_text
from hermes_retrieval.block import (
    _HEADER,
    BLOCK_END,
    BLOCK_START,
    METADATA_KEY,
    _inject,
    _names_section,
    _prefix_digest,
    _target_index,
)

# still importable from here, where they lived before the split (issue 15)
from hermes_retrieval.excerpts import (  # noqa: F401
    _REDACT_MARGIN,
    _REDACTED_STEM,
    _digest,
    _excerpt,
    _norm,
    _novel_names,
    _redact_many,
    _window_cut,
)
from hermes_retrieval.options import RetrievalOptions, RetrievalOptionsError
from hermes_retrieval.query import extract_terms, names_in
from hermes_retrieval.search import _Candidate, _Search  # noqa: F401

__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "METADATA_KEY",
    "Retrieval",
    "RetrievalOptions",
    "RetrievalOptionsError",
]

_PREFIX_MESSAGES = 6  # a rewritten window (compression, prune) changes its first messages
_RECENT_CHARS = 4000  # of each recent message mined for terms (tool outputs can be huge)
_NAME_SCAN_CHARS = 2000  # of each stored message mined for the names index
_NAMES_KEPT = 600  # ranked names kept in state for the rest of the window epoch
KEYWORD_WEIGHT = 0.75
"""A plain keyword counts for a quarter of an exact path or error name (weight 3)."""

class Retrieval(_Search):
    """``select_context`` engine that injects excerpts of the stored history (R-11.3)."""

    # never writes into a request's messages, so the fence shares them (issue 15)
    read_only_messages = True

    name = "retrieval"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = RetrievalOptions.parse(options)

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult | None:
        """Inject one reference block into the newest user message, or leave it as it is.

        The block is computed once per user turn and handed back in ``state``; the agent
        loop's later sends of the same turn (after tool results) get the identical block, so
        the prompt prefix stays cacheable.  It is recomputed when a new user turn starts or
        when the window was rewritten underneath it (a compression, a prune).
        """
        started = time.monotonic()
        messages = request.messages
        decision: dict[str, Any] = {"engine": self.name, "injected": 0}
        state = request.state or {}

        def unchanged(reason: str, new_state: dict[str, Any] | None = None) -> SelectResult:
            decision["reason"] = reason
            decision["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
            return SelectResult(messages=messages, decision=decision, state=new_state)

        target = _target_index(messages)
        if target is None:
            return unchanged("no_user_message")
        if request.history is None:
            return unchanged("no_history")
        message = messages[target]
        if BLOCK_START in text_of(message) or message.get(METADATA_KEY):
            return unchanged("already_injected")

        opts = self.options
        remaining = request.budget_tokens - count_messages(messages)
        block_budget = min(opts.max_block_tokens, int(max(remaining, 0) * opts.budget_share))
        decision["block_budget"] = block_budget
        if block_budget < opts.min_block_tokens:
            return unchanged("no_budget", {})

        tool_target = message.get("role") == "tool"
        # In tool mode the block follows the newest tool result; it is computed once per
        # window epoch (until the window is rewritten again), like a user turn's.
        typed = "" if tool_target else text_of(message)
        turn_key = "tool" if tool_target else _digest(typed)
        # The query comes from the user's own words: reference blocks an earlier engine of
        # the chain put into the message (the topic router's note) are not the request.
        incoming = strip_reference_blocks(typed)
        digests: dict[int, str] = {}  # the window prefix's digest, by length, once each

        def prefix_digest(n: int) -> str:
            if n not in digests:
                digests[n] = _prefix_digest(messages, n)
            return digests[n]

        prefix_n = min(len(messages), _PREFIX_MESSAGES)
        prefix_key = prefix_digest(prefix_n)
        cached = state.get("block")
        cached_tokens = count_text(cached) if isinstance(cached, str) else 0
        if (
            isinstance(cached, str)
            and state.get("turn_key") == turn_key
            and isinstance(state.get("prefix_n"), int)
            and 0 < state["prefix_n"] <= len(messages)
            and prefix_digest(state["prefix_n"]) == state.get("prefix_key")
            # Stability beats the share rule within a turn: reuse while it still fits easily.
            and cached_tokens <= max(block_budget, remaining // 2)
        ):
            decision.update(
                injected=int(state.get("injected", 0)),
                block_tokens=cached_tokens,
                reason="reused",
                elapsed_ms=round((time.monotonic() - started) * 1000, 1),
            )
            return SelectResult(
                messages=_inject(messages, target, cached, state.get("hits", [])),
                decision=decision,
                state=None,
            )

        start = 0 if tool_target else target + 1
        recent = [
            strip_reference_blocks(text_of(m))[:_RECENT_CHARS]
            for m in reversed(messages[max(start, len(messages) - opts.recent_messages) :])
            if m.get("role") != "system" and not is_summary(m)
        ]
        if not tool_target and len(recent) < opts.recent_messages:
            before = messages[max(0, target - (opts.recent_messages - len(recent))) : target]
            recent += [
                strip_reference_blocks(text_of(m))[:_RECENT_CHARS]
                for m in reversed(before)
                if m.get("role") != "system" and not is_summary(m)
            ]
        identifiers, keywords = extract_terms(
            incoming,
            recent,
            max_identifiers=opts.max_identifiers,
            max_keywords=opts.max_keywords,
            keyword_weight=KEYWORD_WEIGHT,
        )
        window_texts = [_norm(text_of(m)) for m in messages]
        window_text = "\n".join(window_texts)
        sections: list[str] = []
        hits: list[dict[str, Any]] = []
        used = count_text(_HEADER) + count_text(BLOCK_END) + 4
        # the names index is for compacted sessions: there is history the window lost
        names_index = opts.names_index and any(is_summary(m) for m in messages)
        if identifiers or keywords:
            candidates, stats = self._search(request.history, identifiers, keywords, started)
            decision.update(stats)
            excerpt_budget = block_budget - used
            if names_index:
                excerpt_budget = int(excerpt_budget * (1 - opts.names_share))
            chosen, skipped, spent = self._choose(
                candidates, window_texts, window_text, excerpt_budget
            )
            decision["skipped_in_window"] = skipped
            sections += [text for text, _ in chosen]
            hits = [meta for _, meta in chosen]
            used += spent
        names_state: dict[str, Any] = {}
        if names_index:
            # Scanning the stored lineage is the expensive part: once per window epoch.
            names_n = state.get("names_n")
            same_epoch = (
                isinstance(names_n, int)
                and 0 < names_n <= len(messages)
                and prefix_digest(names_n) == state.get("names_key")
            )
            ranked = state.get("names") if same_epoch else None
            if not isinstance(ranked, list):
                ranked = self._ranked_names(request.history, started)
                names_n, names_key = prefix_n, prefix_key
            else:
                names_key = str(state.get("names_key"))
            if ranked is not None:
                names_state = {"names_n": names_n, "names_key": names_key, "names": ranked}
                index = _names_section(
                    ranked, window_text + "\n" + "\n".join(sections), block_budget - used,
                    opts.min_block_tokens,
                )
                if index:
                    sections.append(index[0])
                    decision["names"] = index[1]
        if not sections:
            reason = "no_terms" if not (identifiers or keywords) else "no_new_hits"
            return unchanged(reason, names_state)

        block = "\n\n".join([_HEADER, *sections, BLOCK_END])
        new_state: dict[str, Any] = {
            "turn_key": turn_key,
            "prefix_n": prefix_n,
            "prefix_key": prefix_key,
            "block": block,
            "hits": [h["message_id"] for h in hits],
            "injected": len(hits),
            **names_state,
        }
        decision.update(
            injected=len(hits),
            block_tokens=count_text(block),
            hits=hits,
            reason="injected",
            elapsed_ms=round((time.monotonic() - started) * 1000, 1),
        )
        return SelectResult(
            messages=_inject(messages, target, block, new_state["hits"]),
            decision=decision,
            state=new_state,
        )

    def _ranked_names(self, history: Any, started: float) -> list[str] | None:
        """Names (paths, symbols, errors, URLs, ids) the stored lineage mentions, most often
        mentioned first (newest first on ties); ``None`` when there is no time left."""
        opts = self.options
        if time.monotonic() - started > opts.time_budget_seconds:
            return None
        try:
            stored = history.messages(include_inactive=True)
        except Exception:  # the excerpts still stand
            return None
        if time.monotonic() - started > opts.time_budget_seconds:
            return None
        counts: dict[str, int] = {}
        last_seen: dict[str, int] = {}
        heads = [
            text_of(m)[: _NAME_SCAN_CHARS + _REDACT_MARGIN]
            if isinstance(m, Mapping) and m.get("role") != "system" else ""
            for m in stored[-opts.names_scan_messages :]
        ]
        # Names come from the redacted text: a bare hex id is a commit hash or the value of
        # an ``AUTH_TOKEN=`` line, and only the line tells which.
        for position, text in enumerate(_redact_many(heads)):
            for name in names_in(text[:_NAME_SCAN_CHARS]):
                if _REDACTED_STEM in name:
                    continue
                counts[name] = counts.get(name, 0) + 1
                last_seen[name] = position
        ranked = sorted(counts, key=lambda n: (-counts[n], -last_seen[n], n))
        return [n for n in ranked if not contains_secret(n)][:_NAMES_KEPT]
