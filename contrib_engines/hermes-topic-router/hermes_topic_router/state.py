"""The router's branch state: which turn belongs to which topic, each topic's term profile,
recent requests and digest, and the document frequencies — JSON the host persists per
session (R-3.1), loaded defensively and bounded when dumped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from hermes_topic_router.options import TopicRouterOptions
from hermes_topic_router.reading import redacted

__all__ = ["STATE_VERSION", "RouterState"]

STATE_VERSION = 1
_REQUESTS_KEPT = 24  # recent requests per topic, compared one by one
_REQUEST_TERMS = 40  # terms kept per request
_DIGEST_KEPT = 6  # request excerpts kept per topic (its digest)
_DIGEST_CHARS = 160  # of each excerpt


class RouterState:
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
        words = " ".join(redacted(request).split()[:8])
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
        text = " ".join(redacted(request).split())
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
