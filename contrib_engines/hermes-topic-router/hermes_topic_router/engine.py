"""The ``topic_router`` engine: send each turn with the branch of the session it belongs to.

A long session drifts between subjects: a chart, then a failing test, then the chart again.
Compression treats the window as one stream, so every turn pays for every subject.  This
engine keeps **per-topic branches** of the session and, before each send, swaps in the
branch the incoming user message belongs to (R-3.1: *select*, not compress):

1. The window is split into **turns** (a user request and everything up to the next one);
   the system prompt and the compaction summary are pinned and always kept.
2. The incoming message is classified against the topics' lexical profiles (TF-IDF cosine;
   ``threshold`` configurable, a small ``stickiness`` bonus for the current topic, and
   messages with fewer than ``min_terms`` content words — "do that", "/undo" — stay where
   they are).  Below the threshold a **new topic** starts.
3. The turn is sent with its topic's turns only, plus the last ``keep_recent_turns`` turns
   whatever their topic (a safety net for a follow-up with new vocabulary, such as a pasted
   error); when turns are left out, a short turn-scoped note inside the incoming message says
   so.  Everything stays in the store; nothing is deleted.

Branch state (which turn belongs to which topic, each topic's term profile) lives in
``SelectResult.state`` — plain JSON, handed back by the host next turn — never only in memory,
so a restarted process routes exactly as before.  Every output keeps the host invariants:
system message unchanged at index 0, role alternation, tool calls with their results, at most
one summary block; if a selection would break one, the window is sent unchanged instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.tokens import count_messages
from hermes_topic_router.branch import assemble, select_branch
from hermes_topic_router.note import NOTE_END, NOTE_START
from hermes_topic_router.options import TopicRouterOptions, TopicRouterOptionsError
from hermes_topic_router.reading import REPLY_CHARS, TOOL_CHARS, redacted, redacted_head
from hermes_topic_router.state import STATE_VERSION, RouterState
from hermes_topic_router.text import cosine, tfidf, tokens
from hermes_topic_router.turns import Segment, split_turns

__all__ = [
    "NOTE_END",
    "NOTE_START",
    "STATE_VERSION",
    "TopicRouter",
    "TopicRouterOptions",
    "TopicRouterOptionsError",
    "split_turns",
]


@dataclass
class _Route:
    topic: str
    route: Literal["stay", "switch", "new", "continue"]
    score: float | None
    scores: dict[str, float]
    reason: str


class TopicRouter:
    """``select_context`` engine that routes each turn to its topic branch (R-3.1, R-11.3)."""

    # never writes into a request's messages, so the fence shares them (issue 15)
    read_only_messages = True

    name = "topic_router"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = TopicRouterOptions.parse(options)

    # --- classification ---------------------------------------------------------------

    def _classify(self, state: RouterState, request: str) -> _Route:
        opts = self.options
        words = tokens(redacted(request))
        if not state.topics:
            return _Route(state.new_topic(request), "new", None, {}, "first_topic")
        if len(set(words)) < opts.min_terms and state.current is not None:
            return _Route(state.current, "stay", None, {}, "too_few_terms")
        query = tfidf(Counter(words), state.df, state.n_docs)
        scores: dict[str, float] = {}
        for tid, topic in state.topics.items():
            score = cosine(query, tfidf(topic["tf"], state.df, state.n_docs))
            for earlier in topic["requests"]:
                score = max(score, cosine(query, tfidf(earlier, state.df, state.n_docs)))
            if tid == state.current:
                score += opts.stickiness
            scores[tid] = round(score, 4)
        best = max(scores, key=lambda t: scores[t])
        if scores[best] >= opts.threshold:
            route: Literal["stay", "switch"] = "stay" if best == state.current else "switch"
            return _Route(best, route, scores[best], scores, "similar")
        return _Route(state.new_topic(request), "new", scores[best], scores, "below_threshold")

    def _assign(self, state: RouterState, seg: Segment) -> _Route:
        route = self._classify(state, seg.request)
        state.turns[seg.key] = route.topic
        state.fold(route.topic, tokens(redacted(seg.request)), new_doc=True)
        state.remember(route.topic, seg.request)
        state.current = route.topic
        return route

    @staticmethod
    def _reply_words(messages: list[Message], seg: Segment) -> list[str]:
        parts: list[str] = []
        for message in messages[seg.start + 1 : seg.end]:
            limit = TOOL_CHARS if message.get("role") == "tool" else REPLY_CHARS
            text = redacted_head(text_of(message), limit)
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                args = redacted_head(str(fn.get("arguments", "")), TOOL_CHARS)
                text += f" {fn.get('name', '')} {args}"
            parts.append(text)
        return tokens(" ".join(parts)[:REPLY_CHARS])

    # --- the hook ---------------------------------------------------------------------

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult | None:
        """Swap in the incoming turn's topic branch; hand the branch state back."""
        opts = self.options
        messages = request.messages
        state = RouterState(request.state, opts)
        segments = split_turns(messages)
        turns = [s for s in segments if s.kind == "turn"]
        decision: dict[str, Any] = {"engine": self.name}
        if state.reset:
            decision["state_reset"] = True
        if not turns:
            decision.update(route="none", reason="no_user_turn")
            return SelectResult(messages=messages, decision=decision, state=state.dump())

        last = turns[-1]
        # The previous incoming turn is complete now: its replies join its topic's profile.
        if state.pending and state.pending != last.key:
            for seg in turns[:-1]:
                if seg.key == state.pending and seg.key in state.turns:
                    state.fold(state.turns[seg.key], self._reply_words(messages, seg),
                               new_doc=False)
                    break
            state.pending = None
        # Turns never seen (first call, resumed session, engine enabled mid-session).
        bootstrapped = 0
        unknown = [seg for seg in turns[:-1] if seg.key not in state.turns]
        # Bounded so a first call on a huge window stays inside the hook's time limit;
        # older unknown turns stay unclassified and are sent with every branch.
        for seg in unknown[-opts.max_bootstrap_turns :] if opts.max_bootstrap_turns else []:
            if seg.key not in state.turns:
                self._assign(state, seg)
                state.fold(state.turns[seg.key], self._reply_words(messages, seg), new_doc=False)
                bootstrapped += 1
        fresh = last.end - last.start == 1 and last.key != state.pending
        if not fresh and state.turns.get(last.key) in state.topics:
            route = _Route(state.turns[last.key], "continue", None, {}, "same_turn")
            state.current = route.topic
        else:
            route = self._assign(state, last)
            state.pending = last.key

        topic = route.topic
        label = state.topics[topic]["label"]
        decision.update(
            route=route.route,
            topic=topic,
            label=label,
            score=route.score,
            threshold=opts.threshold,
            reason=route.reason,
            topics=len(state.topics),
        )
        if route.scores:
            top = sorted(route.scores.items(), key=lambda kv: -kv[1])[:5]
            decision["scores"] = dict(top)
        if bootstrapped:
            decision["bootstrapped_turns"] = bootstrapped

        selected, omitted, dropped = select_branch(
            messages, segments, state, topic, request.budget_tokens, opts
        )
        tokens_before = count_messages(messages)
        decision.update(
            kept_turns=len(turns) - len(omitted),
            omitted_turns=len(omitted),
            omitted_for_budget=dropped,
        )
        if not omitted:
            decision.update(tokens_before=tokens_before, tokens_after=tokens_before)
            return SelectResult(messages=messages, decision=decision, state=state.dump())

        out, problems = assemble(
            messages, segments, selected, omitted, state, topic, last, opts
        )
        head_changed = messages[0].get("role") == "system" and (not out or out[0] != messages[0])
        if problems or not out or head_changed:
            decision.update(
                kept_turns=len(turns), omitted_turns=0, reason="invariant_fallback",
                invariant=str(problems[0]) if problems else "head changed",
            )
            decision.update(tokens_before=tokens_before, tokens_after=tokens_before)
            return SelectResult(messages=messages, decision=decision, state=state.dump())
        decision.update(tokens_before=tokens_before, tokens_after=count_messages(out))
        return SelectResult(messages=out, decision=decision, state=state.dump())
