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

import copy
import functools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.messages import (
    Violation,
    check_invariants,
    normalize_alternation,
    text_of,
)
from hermes_host.models import Message
from hermes_host.redact import REDACTED, contains_secret, redact
from hermes_host.tokens import count_messages
from hermes_topic_router.options import TopicRouterOptions, TopicRouterOptionsError
from hermes_topic_router.text import cosine, names, tfidf, tokens
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

STATE_VERSION = 1
NOTE_START = "[TOPIC ROUTER — REFERENCE ONLY]"
NOTE_END = "[END TOPIC ROUTER NOTE]"
_REPLY_CHARS = 6000  # of one turn's replies folded into its topic's profile
_TOOL_CHARS = 300  # of each tool output (mostly noise for topic vocabulary)
_REQUESTS_KEPT = 24  # recent requests per topic, compared one by one
_REQUEST_TERMS = 40  # terms kept per request
_DIGEST_KEPT = 6  # request excerpts kept per topic (its digest)
_DIGEST_CHARS = 160  # of each excerpt
_REDACTED_STEM = REDACTED.rstrip("]")  # a name cut at the marker's "]" (a URL)
_REDACT_MARGIN = 512  # redacted past a cut, so a secret straddling it is still recognised


@functools.lru_cache(maxsize=1024)
def _redacted(text: str) -> str:
    """Everything the router keeps (term profiles, labels, digests) comes from redacted text:
    its state is persisted.  Cached: one request is read by several steps of a turn."""
    return redact(text)


def _redacted_head(text: str, limit: int) -> str:
    """The first ``limit`` chars of ``text``, redacted *before* the cut."""
    return redact(text[: limit + _REDACT_MARGIN])[:limit]


@functools.lru_cache(maxsize=4096)
def _message_names(text: str) -> frozenset[str]:
    """The names one message mentions.  Left-out turns are the same messages turn after turn,
    so this is cached by text (it depends on nothing else).  Names come from the redacted
    text: a bare hex id is a commit hash or the value of an ``API_KEY=`` line, and only the
    line's context tells which."""
    return frozenset(n for n in names(redact(text)) if _REDACTED_STEM not in n)


# --- state ------------------------------------------------------------------------------


class _State:
    """The router's JSON state, loaded defensively (a corrupt state restarts cleanly)."""

    def __init__(self, raw: Mapping[str, Any] | None, opts: TopicRouterOptions) -> None:
        self.opts = opts
        self.reset = False
        data: Mapping[str, Any] = raw or {}
        try:
            if data and data.get("version") != STATE_VERSION:
                raise ValueError("version")
            self.turns: dict[str, str] = {str(k): str(v) for k, v in data.get("turns", {}).items()}
            self.topics: dict[str, dict[str, Any]] = {}
            for tid, topic in data.get("topics", {}).items():
                self.topics[str(tid)] = {
                    "label": str(topic.get("label", "")),
                    "tf": {str(t): float(c) for t, c in topic.get("tf", {}).items()},
                    "requests": [
                        {str(t): float(c) for t, c in r.items()}
                        for r in topic.get("requests", [])
                    ],
                    "digest": [str(d) for d in topic.get("digest", [])],
                    "turns": int(topic.get("turns", 0)),
                    "last": int(topic.get("last", 0)),
                }
            self.df: dict[str, int] = {str(t): int(n) for t, n in data.get("df", {}).items()}
            self.n_docs = int(data.get("n_docs", 0))
            self.current: str | None = data.get("current")
            self.pending: str | None = data.get("pending")
            self.next_id = int(data.get("next_id", 1))
        except (AttributeError, TypeError, ValueError):
            self.reset = True
            self.turns, self.topics, self.df = {}, {}, {}
            self.n_docs, self.current, self.pending, self.next_id = 0, None, None, 1
        if self.current not in self.topics:
            self.current = None

    def dump(self) -> dict[str, Any]:
        opts = self.opts
        if len(self.turns) > opts.max_tracked_turns:
            excess = len(self.turns) - opts.max_tracked_turns
            self.turns = dict(list(self.turns.items())[excess:])
        if len(self.df) > opts.max_vocabulary:
            keep = sorted(self.df.items(), key=lambda kv: -kv[1])[: opts.max_vocabulary]
            self.df = dict(keep)
        return {
            "version": STATE_VERSION,
            "turns": self.turns,
            "topics": self.topics,
            "df": self.df,
            "n_docs": self.n_docs,
            "current": self.current,
            "pending": self.pending,
            "next_id": self.next_id,
        }

    def new_topic(self, request: str) -> str:
        tid = f"t{self.next_id}"
        self.next_id += 1
        words = " ".join(_redacted(request).split()[:8])
        self.topics[tid] = {
            "label": words[:80], "tf": {}, "requests": [], "digest": [], "turns": 0,
            "last": self.n_docs,
        }
        if len(self.topics) > self.opts.max_topics:
            victims = [t for t in self.topics if t not in (tid, self.current)]
            oldest = min(victims, key=lambda t: self.topics[t]["last"])
            del self.topics[oldest]
        return tid

    def remember(self, tid: str, request: str) -> None:
        """Keep a short, redacted excerpt of the topic's newest requests: the branch's own
        digest, shown when the branch is swapped in without them."""
        topic = self.topics.get(tid)
        text = " ".join(_redacted(request).split())
        if topic is None or not text:
            return
        excerpt = text[:_DIGEST_CHARS] + ("…" if len(text) > _DIGEST_CHARS else "")
        topic["digest"] = [*topic["digest"], excerpt][-_DIGEST_KEPT:]

    def fold(self, tid: str, words: list[str], *, new_doc: bool) -> None:
        """Add ``words`` to topic ``tid``'s profile (and to the document frequencies).

        ``new_doc`` marks a request: it also joins the topic's recent requests, which a new
        request is compared with one by one (a short request resembles an earlier request
        far more than the whole topic, replies included).
        """
        topic = self.topics.get(tid)
        if topic is None:
            return
        if new_doc and words:
            top = Counter(words).most_common(_REQUEST_TERMS)
            topic["requests"] = [*topic["requests"], dict(top)][-_REQUESTS_KEPT:]
        tf: dict[str, float] = topic["tf"]
        for word, n in Counter(words).items():
            tf[word] = tf.get(word, 0.0) + n
        if len(tf) > self.opts.max_profile_terms:
            topic["tf"] = dict(
                sorted(tf.items(), key=lambda kv: -kv[1])[: self.opts.max_profile_terms]
            )
        for word in set(words):
            self.df[word] = self.df.get(word, 0) + 1
        if new_doc:
            self.n_docs += 1
            topic["turns"] += 1
        topic["last"] = self.n_docs


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

    def _classify(self, state: _State, request: str) -> _Route:
        opts = self.options
        words = tokens(_redacted(request))
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

    def _assign(self, state: _State, seg: Segment) -> _Route:
        route = self._classify(state, seg.request)
        state.turns[seg.key] = route.topic
        state.fold(route.topic, tokens(_redacted(seg.request)), new_doc=True)
        state.remember(route.topic, seg.request)
        state.current = route.topic
        return route

    @staticmethod
    def _reply_words(messages: list[Message], seg: Segment) -> list[str]:
        parts: list[str] = []
        for message in messages[seg.start + 1 : seg.end]:
            limit = _TOOL_CHARS if message.get("role") == "tool" else _REPLY_CHARS
            text = _redacted_head(text_of(message), limit)
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                args = _redacted_head(str(fn.get("arguments", "")), _TOOL_CHARS)
                text += f" {fn.get('name', '')} {args}"
            parts.append(text)
        return tokens(" ".join(parts)[:_REPLY_CHARS])

    # --- the hook ---------------------------------------------------------------------

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult | None:
        """Swap in the incoming turn's topic branch; hand the branch state back."""
        opts = self.options
        messages = request.messages
        state = _State(request.state, opts)
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

        selected, omitted, dropped = self._select(
            messages, segments, state, topic, request.budget_tokens
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

        out, problems = self._assemble(messages, segments, selected, omitted, state, topic, last)
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

    # --- selection --------------------------------------------------------------------

    def _select(
        self,
        messages: list[Message],
        segments: list[Segment],
        state: _State,
        topic: str,
        budget: int,
    ) -> tuple[set[int], list[Segment], int]:
        """Indices (into ``segments``) to keep, the omitted turn segments, and how many of
        those were the branch's own oldest turns dropped to fit ``budget``.  (The engine
        instance is shared by concurrent sessions: nothing per call is kept on ``self``.)"""
        turn_ids = [i for i, s in enumerate(segments) if s.kind == "turn"]
        protected = set(turn_ids[-1 - self.options.keep_recent_turns :])
        keep: set[int] = set()
        for i, seg in enumerate(segments):
            owner = state.turns.get(seg.key)
            # A turn never classified (beyond the bootstrap bound) belongs to every branch.
            if seg.kind != "turn" or i in protected or owner == topic or owner is None:
                keep.add(i)
        # Over budget: the topic's oldest turns go first (the tail of the branch stays).
        def size() -> int:
            return sum(
                count_messages(messages[segments[i].start : segments[i].end]) for i in keep
            )

        droppable = [i for i in turn_ids if i in keep and i not in protected]
        total = size()
        dropped = 0
        while total > budget and droppable:
            i = droppable.pop(0)
            keep.discard(i)
            total -= count_messages(messages[segments[i].start : segments[i].end])
            dropped += 1
        omitted = [segments[i] for i in turn_ids if i not in keep]
        return keep, omitted, dropped

    def _assemble(
        self,
        messages: list[Message],
        segments: list[Segment],
        keep: set[int],
        omitted: list[Segment],
        state: _State,
        topic: str,
        last: Segment,
    ) -> tuple[list[Message], list[Violation]]:
        """The request to send, and what is still wrong with it (checked once)."""
        out: list[Message] = []
        for i, seg in enumerate(segments):
            if i not in keep:
                continue
            chunk = messages[seg.start : seg.end]
            if seg is last and self.options.note:
                kept_text = "\n".join(
                    text_of(m) for j in sorted(keep) for m in
                    messages[segments[j].start : segments[j].end]
                )
                left_out = self._left_out_names(messages, omitted, kept_text)
                kept_norm = " ".join(kept_text.split())
                earlier = [
                    d for d in state.topics[topic]["digest"]
                    if d.rstrip("…") not in kept_norm
                ]
                chunk = [
                    self._with_note(chunk[0], omitted, state, topic, left_out, earlier),
                    *chunk[1:],
                ]
            out.extend(chunk)
        problems = check_invariants(out)
        if problems:
            # Leaving turns out can put two user messages side by side (a turn that ended
            # without a reply); merge them, never the system prompt or the summary.
            out = normalize_alternation(out)[0]
            problems = check_invariants(out)
        return out, problems

    def _left_out_names(
        self, messages: list[Message], omitted: list[Segment], kept_text: str
    ) -> list[str]:
        """The names the left-out turns mention that the sent turns do not, most frequent
        first: the model learns what exists elsewhere in the session for a few tokens."""
        if not self.options.note_names:
            return []
        counts: Counter[str] = Counter()
        for seg in omitted:
            for message in messages[seg.start : seg.end]:
                counts.update(_message_names(text_of(message)[:_REPLY_CHARS]))
        ranked = sorted(counts, key=lambda n: (-counts[n], n))
        shown: list[str] = []
        for name in ranked:
            if len(shown) >= self.options.note_names:
                break
            if name not in kept_text and not contains_secret(name):
                shown.append(name)
        return shown

    def _with_note(
        self,
        message: Message,
        omitted: list[Segment],
        state: _State,
        topic: str,
        left_out: list[str],
        earlier: list[str],
    ) -> Message:
        others: list[str] = []
        for seg in omitted:
            tid = state.turns.get(seg.key)
            label = state.topics.get(tid or "", {}).get("label") or "an earlier topic"
            if label not in others:
                others.append(label)
        shown = "; ".join(f"“{t}”" for t in others[:3]) + (" …" if len(others) > 3 else "")
        plural = "s" if len(omitted) != 1 else ""
        note = (
            f"{NOTE_START} This request belongs to the topic “{state.topics[topic]['label']}”. "
            f"{len(omitted)} earlier turn{plural} (topics: {shown}) are left out of this "
            f"request; they remain in the stored history."
            + (f" They mention: {', '.join(left_out)}." if left_out else "")
            + (
                " Earlier requests of this topic not shown here: "
                + " → ".join(f"“{d}”" for d in earlier) + "."
                if earlier else ""
            )
            + f" {NOTE_END}"
        )
        new = copy.copy(message)
        content = message.get("content")
        if isinstance(content, list):
            new["content"] = [{"type": "text", "text": note}, *content]
        else:
            new["content"] = f"{note}\n\n{content or ''}".rstrip("\n")
        return new

