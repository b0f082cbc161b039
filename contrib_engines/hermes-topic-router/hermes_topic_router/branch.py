"""Which turns a branch sends: the topic's own turns, the unclassified ones and the most
recent, within the token budget; and the request assembled from them, with the note that
tells the model what is left out (R-3.1, R-1.4)."""

from __future__ import annotations

from hermes_host.messages import Violation, check_invariants, normalize_alternation, text_of
from hermes_host.models import Message
from hermes_host.tokens import count_messages
from hermes_topic_router.note import left_out_names, with_note
from hermes_topic_router.options import TopicRouterOptions
from hermes_topic_router.state import RouterState
from hermes_topic_router.turns import Segment

__all__ = ["assemble", "select_branch"]


def select_branch(
    messages: list[Message],
    segments: list[Segment],
    state: RouterState,
    topic: str,
    budget: int,
    opts: TopicRouterOptions,
) -> tuple[set[int], list[Segment], int]:
    """Indices (into ``segments``) to keep, the omitted turn segments, and how many of
    those were the branch's own oldest turns dropped to fit ``budget``.  (The engine
    instance is shared by concurrent sessions: nothing per call is kept on it.)"""
    turn_ids = [i for i, s in enumerate(segments) if s.kind == "turn"]
    protected = set(turn_ids[-1 - opts.keep_recent_turns :])
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


def assemble(
    messages: list[Message],
    segments: list[Segment],
    keep: set[int],
    omitted: list[Segment],
    state: RouterState,
    topic: str,
    last: Segment,
    opts: TopicRouterOptions,
) -> tuple[list[Message], list[Violation]]:
    """The request to send, and what is still wrong with it (checked once)."""
    out: list[Message] = []
    for i, seg in enumerate(segments):
        if i not in keep:
            continue
        chunk = messages[seg.start : seg.end]
        if seg is last and opts.note:
            kept_text = "\n".join(
                text_of(m) for j in sorted(keep) for m in
                messages[segments[j].start : segments[j].end]
            )
            left_out = left_out_names(messages, omitted, kept_text, opts)
            kept_norm = " ".join(kept_text.split())
            earlier = [
                d for d in state.topics[topic]["digest"]
                if d.rstrip("…") not in kept_norm
            ]
            chunk = [
                with_note(chunk[0], omitted, state, topic, left_out, earlier),
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
