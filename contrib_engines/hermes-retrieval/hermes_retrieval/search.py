"""Search and fusion: one store query per term, fused by weighted reciprocal rank, then the
excerpts worth sending chosen within the budget (relevance first, novelty next)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_host.messages import is_summary
from hermes_host.redact import redact
from hermes_host.tokens import count_text
from hermes_retrieval.block import BLOCK_START
from hermes_retrieval.excerpts import _digest, _excerpt, _norm, _novel_names
from hermes_retrieval.options import RetrievalOptions
from hermes_retrieval.query import SearchTerm

_NOVELTY_CAP = 12  # new names counted per excerpt when ranking (a long list is not 12x)


@dataclass
class _Candidate:
    hit: dict[str, Any]
    fused: float = 0.0
    bm25: float = 0.0
    terms: list[str] = field(default_factory=list)



def _score(hit: Mapping[str, Any]) -> float:
    value = hit.get("score")
    return float(value) if isinstance(value, int | float) else 0.0



class _Search:
    """The search half of :class:`~hermes_retrieval.engine.Retrieval`."""

    options: RetrievalOptions

    # --- search and fusion ------------------------------------------------------------

    def _search(
        self,
        history: Any,
        identifiers: list[SearchTerm],
        keywords: list[SearchTerm],
        started: float,
    ) -> tuple[list[_Candidate], dict[str, Any]]:
        opts = self.options
        # The HistoryReader takes plain text (the store quotes every word, so no FTS syntax
        # a user typed is ever live).  One query per term; fusion below does the OR.
        queries: list[tuple[str, float, list[str]]] = [
            (t.text, t.weight, [t.text]) for t in identifiers
        ]
        queries += [(k.text, k.weight, [k.text]) for k in keywords]
        found: dict[tuple[Any, Any], _Candidate] = {}
        errors: list[str] = []
        run = 0
        for query, weight, terms in queries:
            if time.monotonic() - started > opts.time_budget_seconds:
                break
            run += 1
            try:
                hits = history.search(query, limit=opts.search_limit, lineage=opts.lineage)
            except Exception as exc:  # one bad query must not cost the others
                errors.append(type(exc).__name__)
                continue
            for rank, hit in enumerate(hits or []):
                if not isinstance(hit, Mapping) or not isinstance(hit.get("content"), str):
                    continue
                key = (hit.get("session_id"), hit.get("message_id"))
                cand = found.get(key)
                if cand is None:
                    cand = found[key] = _Candidate(hit=dict(hit), bm25=_score(hit))
                cand.fused += weight / (1.0 + rank)
                cand.terms.extend(terms)
        stats: dict[str, Any] = {
            "queries": run,
            "identifier_terms": len(identifiers),
            "keyword_terms": len(keywords),
            "candidates": len(found),
        }
        if errors:
            stats["search_errors"] = errors
        ranked = sorted(found.values(), key=lambda c: (-c.fused, c.bm25))
        return ranked, stats

    def _choose(
        self,
        candidates: list[_Candidate],
        window_texts: list[str],
        window_blob: str,
        budget: int,
    ) -> tuple[list[tuple[str, dict[str, Any]]], int, int]:
        """Excerpts worth sending, within ``budget`` tokens (the block's frame is already
        paid for by the caller); returns them, how many were skipped because the window
        already shows them, and the tokens they cost."""
        opts = self.options
        window_digests = {_digest(t) for t in window_texts if t}
        chosen: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        shown: set[str] = set()  # names the chosen excerpts already bring back
        skipped = 0
        used = 0
        # relative to the best hit that could be sent: the window's own messages often
        # match the turn's terms best, and a floor set by them dropped every older hit
        floor: float | None = None
        pool: list[tuple[float, int, str, _Candidate, set[str]]] = []
        for order, cand in enumerate(candidates):
            if floor is not None and cand.fused < floor:
                break
            hit = cand.hit
            role = hit.get("role")
            content = hit["content"]
            if role == "system" or not content.strip() or content.startswith(BLOCK_START):
                continue
            if role == "tool" and not opts.include_tool_results:
                continue
            if is_summary({"role": role, "content": content}):
                continue
            digest = _digest(content)
            if digest in seen:
                continue
            seen.add(digest)
            if digest in window_digests:
                skipped += 1
                continue
            if floor is None:
                floor = cand.fused * opts.min_relative_score
            # redacted whole, then cut: an excerpt's edge must not cut a secret's name off
            snippet = _excerpt(redact(content), cand.terms, opts.max_hit_chars, window_blob)
            novel = _novel_names(snippet, window_blob)
            if _norm(snippet.strip("… ")) in window_blob:
                skipped += 1
                continue
            pool.append((cand.fused, order, snippet, cand, novel))
        # Relevance first; an excerpt is worth what it brings that is not visible yet, so a
        # hit whose names the window (or a better hit) already shows makes room for the next.
        remaining = sorted(pool, key=lambda p: (-p[0], p[1]))
        while remaining and len(chosen) < opts.max_hits:
            best = max(
                remaining,
                key=lambda p: (p[0] * (1 + min(len(p[4] - shown), _NOVELTY_CAP)) ** 0.5, -p[1]),
            )
            remaining.remove(best)
            fused, _, snippet, cand, novel = best
            if novel and not novel - shown:  # its names are all in better hits already
                skipped += 1
                continue
            hit = cand.hit
            role = hit.get("role")
            label = f"[{len(chosen) + 1}] {role} · message {hit.get('message_id')}"
            if hit.get("session_id") is not None:
                label += f" · session {hit.get('session_id')}"
            if not hit.get("active", True):
                label += " · compacted"
            text = f"{label}\n{redact(snippet)}"
            cost = count_text(text) + 1
            if used + cost > budget:
                continue
            used += cost
            shown |= novel
            chosen.append(
                (
                    text,
                    {
                        "message_id": hit.get("message_id"),
                        "session_id": hit.get("session_id"),
                        "role": role,
                        "score": round(fused, 3),
                    },
                )
            )
        return chosen, skipped, used
