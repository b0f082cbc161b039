"""The compression pass: the five steps of SPEC section 6, in order, on a private copy.

1. prune old tool results (and remove blank echoes), no LLM;
2. protect the head (system prompt; ``protect_first_n`` more on the first round only);
3. find the tail cut by tokens;
4. summarise the middle (one call, or micro-compaction when enabled);
5. fold the previous summary in (update round), so at most one summary block exists.

Failure semantics (R-10.3), decided here and documented in the README:

* the summariser succeeds → ``summarised``;
* it fails transiently (``TransientSummaryError``: 429/5xx/529/timeout/network, and for the
  Anthropic summariser a malformed or empty answer) → the middle is summarised by the
  deterministic offline summariser instead and committed: outcome ``fallback`` with
  ``cooldown_seconds = compression.cooldown_seconds`` so automatic compression pauses;
* it fails permanently (``PermanentSummaryError``: 401/402/403/quota/missing key; also a
  summariser that returns blank text without raising, or raises anything else) → the same
  offline fallback, outcome ``fallback``, no cooldown (retrying cannot help; the fallback
  streak stops automatic compression after two);
* ``abort_on_summary_failure: true`` → outcome ``aborted``: the input minus blank echoes,
  nothing summarised (plus ``cooldown_seconds`` when the failure was transient);
* should even the offline fallback fail, nothing is summarised: ``failed_transient`` /
  ``failed_permanent`` with the input minus blank echoes — the host keeps the window;
* called during an active cooldown without ``force`` → ``aborted``, never the fallback path
  (an early cooldown exit is not "fallback allowed"; the flags are not reset at entry).

The middle is never dropped without a summary: the feasibility skip (R-6.5) uses the offline
summariser too (``dropped``, no LLM call).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence

from hermes_host.llm.base import (
    SummaryError,
    SummaryJob,
    TransientSummaryError,
)
from hermes_host.llm.offline import latest_user_request
from hermes_host.messages import (
    check_invariants,
    normalize_alternation,
    repair_tool_pairs,
    sanitize_for_wire,
    text_of,
)
from hermes_host.models import CompressRequest, CompressResult, Message, SummaryOutcome
from hermes_host.redact import redact, redacted_for_reading, redaction_memo
from hermes_host.session.bound import request_budget
from hermes_host.tokens import count_text

from hermes_compressor.boundaries import (
    MIN_TAIL_MESSAGES,
    find_cut,
    head_size,
    is_actionable_user,
    own_role_cut,
    short_session_cut,
)
from hermes_compressor.budget import (
    FLOOR_FROM_WINDOW as FLOOR_FROM_WINDOW,  # re-exported: these names lived here
)
from hermes_compressor.budget import (
    SUMMARY_FLOOR_TOKENS as SUMMARY_FLOOR_TOKENS,
)
from hermes_compressor.budget import (
    SUMMARY_WINDOW_SHARE as SUMMARY_WINDOW_SHARE,
)
from hermes_compressor.budget import (
    _memoised,
    _tokens_up_to,
    summary_ceiling,
)
from hermes_compressor.carried import _previous_latest, _snapshot_source
from hermes_compressor.micro import MicroBreaker, micro_summarize
from hermes_compressor.options import EngineOptions
from hermes_compressor.originals import with_originals
from hermes_compressor.prompt import build_continuation_instruction, build_prompt
from hermes_compressor.prune import prune_step, remove_blank_echoes
from hermes_compressor.summarizers import Summarizers, _calls_llm, _Counted
from hermes_compressor.summary import (
    SKILL_MARKER_RE,
    ensure_latest_request,
    extract_previous,
    inject,
    postprocess,
    strip_reasoning,
    summary_text,
)
from hermes_compressor.trigger import _cooldown_active, tail_budget, threshold_tokens

__all__ = ["SUMMARY_OVERHEAD_TOKENS", "Summarizers", "compress_window"]

SUMMARY_OVERHEAD_TOKENS = count_text(summary_text("", continuation=True))
"""Tokens of a summary block's fixed text (prefix, end marker, continuation note)."""

log = logging.getLogger("hermes_compressor")


def _normalised(messages: Sequence[Message]) -> list[Message]:
    out = list(messages)
    if any(v.rule == "alternation" for v in check_invariants(out)):
        out, _ = normalize_alternation(out)
    return out


def compress_window(
    request: CompressRequest,
    *,
    options: EngineOptions,
    count: Callable[[Message], int],
    summarizers: Summarizers,
    breaker: MicroBreaker,
) -> CompressResult:
    """Run the pass on ``request.messages`` and propose the new window."""
    # each text is redacted once in the pass, however many steps (and the summariser's
    # defence in depth) redact it
    with redaction_memo():
        return _compress_window(
            request, options=options, count=count, summarizers=summarizers, breaker=breaker
        )


def _compress_window(
    request: CompressRequest,
    *,
    options: EngineOptions,
    count: Callable[[Message], int],
    summarizers: Summarizers,
    breaker: MicroBreaker,
) -> CompressResult:
    settings = request.compression
    count = _memoised(count)
    cleaned, removed = remove_blank_echoes(request.messages)
    cleaned = _normalised(cleaned)
    notes = [f"removed {removed} blank echo message(s)"] if removed else []

    def unchanged(
        outcome: SummaryOutcome, note: str, cooldown: float | None = None
    ) -> CompressResult:
        return CompressResult(
            messages=cleaned, outcome=outcome, cooldown_seconds=cooldown, notes=[*notes, note]
        )

    # A cooldown delays only the next LLM attempt: meanwhile the offline summariser
    # keeps the window bounded (issue 28: one 429 let the window grow for ten minutes).
    cooling = _cooldown_active(request)

    extracted = extract_previous(cleaned)
    work = extracted.messages
    if len(work) != len(cleaned) or any(
        a is not b for a, b in zip(work, cleaned, strict=True)
    ):
        work = _normalised(work)  # a summary block came out: check the alternation again
    previous = extracted.previous_summary
    first_round = request.compression_count == 0 and previous is None
    # the same threshold should_compress triggers at (output reserved), so a compression
    # leaves room below it instead of landing just under it (issue 28)
    threshold = threshold_tokens(
        settings, request.context_length, request.model, request.max_output_tokens
    )
    # what a compression may leave: compression.target_percent of the trigger, the tail
    # summary_target_ratio of that (R-4.5's threshold × ratio when target_percent is 1)
    target = int(threshold * settings.target_percent)
    budget = tail_budget(settings, target)
    head_end = head_size(work, first_round=first_round, protect_first_n=settings.protect_first_n)
    floor = min(settings.protect_last_n, options.max_tail_message_floor)
    cut = find_cut(
        work,
        count,
        head_end=head_end,
        budget=budget,
        floor_count=floor,
        min_tail_user_messages=settings.min_tail_user_messages,
        keep_last_turns=request.keep_last_turns,
    )
    min_tail = 1 if request.keep_last_turns is not None else MIN_TAIL_MESSAGES
    if request.keep_last_turns is None and (cut <= head_end or len(work) - cut < min_tail):
        # A short session whose budgeted tail (or protected head) covers everything: keep
        # only the last MIN_TAIL_MESSAGES, as Hermes does.  The head shrinks to the system
        # prompt only when its protected messages are themselves too large to keep (one
        # huge task message, issue 14); otherwise they stay protected (R-6.2, issue 28).
        system = 1 if work and work[0].get("role") == "system" else 0
        head_tokens = sum(count(m) for m in work[system:head_end])
        head_end, cut = short_session_cut(work, head_end, shrink_head=head_tokens > budget)
    if request.keep_last_turns is None and head_end < cut < len(work):
        cut = own_role_cut(work, head_end, cut)
    if cut <= head_end or len(work) - cut < min_tail:
        # head + >=3 tail + >=1 middle, else an ineffective no-op.
        return unchanged("noop", "too few messages to compress (head + 3 tail + 1 middle)")

    # Step 1: prune (no LLM).  Indices do not move.
    unpruned = work
    work, pruned = prune_step(work, count, head_end=head_end, cut=cut, budget=budget,
                              options=options)
    if pruned:
        notes.append(pruned)
    head, middle, tail = work[:head_end], work[head_end:cut], work[cut:]

    llm_primary = not cooling and _calls_llm(summarizers)
    # what stays verbatim: the target leaves the summary what head and tail do not take
    kept_tokens = sum(count(m) for m in head) + sum(count(m) for m in tail)
    max_summary = summary_ceiling(
        request.context_length,
        options,
        emit_limit=request.summarizer.max_tokens if llm_primary else None,
        room=target - kept_tokens - SUMMARY_OVERHEAD_TOKENS,
    )
    # An update round re-states the previous summary and adds the new turns' share: a
    # budget of the new turns alone would squeeze the carried facts a little more each round.
    carried = count_text(previous) if previous else 0
    # The middle's size matters up to where both uses saturate (the summary budget reaches
    # its ceiling; the feasibility skip is ruled out): a huge middle is not counted in full.
    saturated = threshold * options.feasibility_fraction
    if options.summary_ratio > 0:
        saturated = max(saturated, (max_summary - carried) / options.summary_ratio)
    else:
        saturated = math.inf
    middle_tokens = _tokens_up_to(middle, count, saturated)
    # the summary's share is of what the middle says, not of step 1's one-liners: an
    # extractive summariser reads the originals (originals.py), and a budget of the pruned
    # size starved every summary of a tool-heavy session (issue 14); an LLM is shown the
    # one-liners, so its target stays their share
    source = middle if llm_primary else unpruned[head_end:cut]
    source_tokens = _tokens_up_to(source, count, saturated)
    # a summary is never larger than what it replaces (the middle as the window holds it,
    # plus the previous summary block); the floor never takes more than half of that
    replaced = carried + middle_tokens
    summary_budget = max(
        min(options.min_summary_tokens, max_summary, max(1, replaced // 2)),
        min(max_summary, carried + int(source_tokens * options.summary_ratio)),
    )
    summary_budget = max(1, min(summary_budget, replaced))
    unattended = not any(is_actionable_user(m) for m in work)
    # read-only from here on (a message without secrets is the window's own object)
    clean_middle = redacted_for_reading(strip_reasoning(middle))
    prompt = build_prompt(
        clean_middle,
        previous_summary=previous,
        budget_tokens=summary_budget,
        today=request.today,
        focus_topic=request.focus_topic,
        memory_context=request.memory_context,
        unattended=unattended,
        max_turn_chars=options.max_turn_chars,
        max_source_chars=options.max_source_chars,
        max_previous_chars=options.max_previous_summary_chars,
    )

    def make_job(
        text: str, msgs: list[Message], prev: str | None, tokens: int, cap: int | None = None
    ) -> SummaryJob:
        job = SummaryJob(
            prompt=text,
            messages=msgs,
            previous_summary=redact(prev) if prev else None,
            focus_topic=redact(request.focus_topic) if request.focus_topic else None,
            memory_context=redact(request.memory_context) if request.memory_context else None,
            today=request.today,
            budget_tokens=tokens,
            # never more than what the summary replaces (issue 28)
            max_tokens=cap or min(
                max(tokens, min(request.summarizer.max_tokens, max_summary * 2)),
                max(tokens, replaced),
            ),
            metadata={
                "session_id": request.session_id,
                "round": "first" if first_round else "update",
            },
        )
        budget_now = request_budget(request.context_length, request.max_output_tokens)
        if (request.summarizer.continuation and cap is None  # not for micro-compaction
                and request.current_tokens <= budget_now):
            # only a window the last chat request sent whole is a prefix the provider holds
            # the last chat request again, one instruction appended: a prompt-caching
            # provider bills the prefix as a cache read (issue 28)
            job.prefix = sanitize_for_wire(request.messages)
            job.instruction = build_continuation_instruction(
                keep_last=len(tail),
                keep_opening=text_of(tail[0]) if tail else None,
                previous_summary=prev,
                budget_tokens=tokens,
                today=request.today,
                focus_topic=request.focus_topic,
                memory_context=request.memory_context,
                unattended=unattended,
                max_previous_chars=options.max_previous_summary_chars,
            )
        return job

    # the offline summariser reads the newest pruned outputs whole (bounded): no tokens spent
    job = make_job(prompt, with_originals(clean_middle, middle, unpruned[head_end:cut]),
                   previous, summary_budget)
    # what the summary may be grounded in: the requests, the previous summary, memory text,
    # and every [SKILL_PRUNED] marker of the middle (all already redacted)
    source_text = "\n\n".join(
        [
            redact(previous or ""),
            redact(request.memory_context or ""),
            *(text_of(m) for m in clean_middle if m.get("role") == "user"),
            *(mark for m in clean_middle for mark in SKILL_MARKER_RE.findall(text_of(m))),
        ]
    )
    snapshot = _snapshot_source(previous, clean_middle)
    # the newest real request must survive verbatim: in the tail, or in the summary
    latest = None if latest_user_request(tail) else (
        latest_user_request(clean_middle) or _previous_latest(previous)
    )
    max_chars = max_summary * 4 * 2

    def finish(
        raw: str,
        outcome: SummaryOutcome,
        llm_calls: int,
        cooldown: float | None = None,
        extra: Sequence[str] = (),
        seen: str | None = None,
        requests: int = 1,
    ) -> CompressResult:
        body = postprocess(
            raw,
            source_text=source_text,
            snapshot_fallback=snapshot,
            max_chars=max_chars,
            seen_text=seen,
        )
        body = ensure_latest_request(body, latest)
        written = count_text(body)
        if written > replaced:  # a summary is never larger than what it replaces
            body = body[: max(1, len(body) * replaced // written)].rstrip()
            extra = [*extra, f"summary clipped to the {replaced:,} tokens it replaces"]
        # what an LLM summariser is (or would be) billed for this summary: the cost model's
        # input, counted also when the offline summariser wrote it (issue 28)
        if job.continuation:  # the prefix is the last chat request: a cache read
            cached = sum(count(m) for m in request.messages)
            sent = cached + count_text(job.instruction or "")
        else:
            cached, sent = 0, count_text(job.prompt)
        cost = {
            "summary_requests": requests,
            "summary_input_tokens": requests * sent,
            "summary_cached_tokens": requests * cached,
            "summary_output_tokens": count_text(body) if requests else 0,
        }
        continuation = not any(is_actionable_user(m) for m in [*head, *tail])
        window = inject(head, body, tail, continuation=continuation)
        window, fixes = repair_tool_pairs(window)  # the last line of defence
        result_notes = [*notes, *extra]
        if fixes:
            result_notes.append(f"orphan sanitiser repaired {fixes} tool pair(s)")
        violations = check_invariants(window)
        if violations:
            log.warning(
                "compressor produced an invalid window (%s); keeping the input", violations[0]
            )
            return CompressResult(
                messages=cleaned,
                outcome="aborted",
                llm_calls=llm_calls,
                notes=[*result_notes, f"invalid result discarded: {violations[0]}"],
            )
        return CompressResult(
            messages=window,
            outcome=outcome,
            llm_calls=llm_calls,
            cooldown_seconds=cooldown,
            notes=result_notes,
            **cost,
        )

    # feasibility skip: a tiny middle after a real ineffective record is not worth a call.
    if (
        not request.force
        and request.guards.ineffective_count >= 1
        and middle_tokens < threshold * options.feasibility_fraction
    ):
        try:
            raw = summarizers.fallback().summarize(job)
        except Exception as exc:  # deterministic, so unexpected: take the normal path instead
            log.warning("offline summary for the feasibility skip failed: %s", type(exc).__name__)
        else:
            if raw.strip():
                return finish(raw, "dropped", 0, extra=["feasibility skip: summarised offline"],
                              requests=0)

    # worth a summariser call?  Decided before calling it (issue 28), from the largest
    # window the proposal can leave: head + summary at its target + tail.  (The feasibility
    # skip above calls no LLM; keeps it.)
    estimate = kept_tokens + summary_budget + SUMMARY_OVERHEAD_TOKENS
    before = max(1, request.current_tokens)
    share = (before - estimate) / before
    wanted = 0.0 if request.force else settings.min_saving_percent
    if share <= wanted and not (request.force and share > 0):
        return unchanged(
            "noop",
            f"not worth a summariser call: the proposal would free {max(share, 0.0):.0%} of "
            f"the window ({before:,} -> ~{estimate:,} tokens: {kept_tokens:,} kept verbatim "
            f"+ a ~{summary_budget:,}-token summary)"
            + ("" if request.force else
               f"; compression.min_saving_percent is {settings.min_saving_percent:.0%}"),
        )

    if cooling:
        left = math.ceil((request.guards.cooldown_until or 0) - request.guards.now)
        try:
            raw = summarizers.fallback().summarize(job)
        except Exception as exc:
            log.warning("offline summary during a cooldown failed: %s", type(exc).__name__)
            return unchanged("aborted", "summariser cooling down and the offline summary "
                             "failed; the window is unchanged")
        if raw.strip():
            return finish(raw, "fallback", 0, requests=0, extra=[
                f"summariser cooling down after a failure ({left} s left): summarised "
                "offline, the LLM summariser is tried again after the cooldown"])
        return unchanged("aborted", "summariser cooling down and the offline summary was "
                         "empty; the window is unchanged")

    primary: _Counted | None = None
    failure: SummaryError | None = None
    raw = ""
    try:
        if settings.micro_compact and not breaker.open(request.session_id):
            micro = _Counted(summarizers.micro(max_summary))
            try:
                raw = micro_summarize(
                    micro,
                    middle,
                    previous_summary=previous,
                    max_summary_tokens=max_summary,
                    max_exchanges=options.micro_max_exchanges,
                    max_turn_chars=options.max_turn_chars,
                    make_job=lambda t, m, p, n: make_job(t, m, p, n, cap=n),
                )
                breaker.record(request.session_id, ok=True)
                return finish(raw, "summarised", micro.calls, extra=["micro-compaction"],
                              requests=max(1, micro.calls))
            except Exception as exc:
                breaker.record(request.session_id, ok=False)
                notes.append(f"micro-compaction failed ({type(exc).__name__}); batch summary used")
                micro_calls = micro.calls
            primary = _Counted(summarizers.primary())
            primary.calls += micro_calls
        else:
            primary = _Counted(summarizers.primary())
        raw = primary.summarize(job)
        if not raw or not raw.strip():
            raise SummaryError("the summariser returned an empty summary")
    except SummaryError as exc:
        failure = exc
    except Exception as exc:  # a summariser bug must not lose the window
        failure = SummaryError(f"summariser error: {type(exc).__name__}")
    calls = primary.calls if primary else 0
    if failure is None:
        # provenance: an LLM may only name files from the prompt it was sent
        llm = primary is not None and primary.calls_llm
        seen = prompt
        if job.continuation:  # the LLM read the whole window, tool calls included
            seen = json.dumps(job.prefix, ensure_ascii=False) + "\n\n" + (job.instruction or "")
        return finish(raw, "summarised", calls, seen=seen if llm else None)

    transient = isinstance(failure, TransientSummaryError)
    cooldown = settings.cooldown_seconds if transient else None
    why = f"{'transient' if transient else 'permanent'} summariser failure: {redact(str(failure))}"
    asked = failure.retry_after if transient else None
    if asked is not None and cooldown is not None:
        # the provider's retry-after (already capped at MAX_RETRY_AFTER_SECONDS) lengthens the
        # cooldown, never shortens it
        cooldown = max(cooldown, asked)
        why += (f"; provider asked to retry after {asked:g} s"
                f" (cooldown {cooldown:g} s)")
    log.warning("summary failed for session %s: %s", request.session_id, why)
    if settings.abort_on_summary_failure:
        return CompressResult(
            messages=cleaned,
            outcome="aborted",
            llm_calls=calls,
            cooldown_seconds=cooldown,
            notes=[*notes, why, "abort_on_summary_failure: nothing summarised"],
        )
    try:
        fallback_raw = summarizers.fallback().summarize(job)
        if not fallback_raw.strip():
            raise SummaryError("empty fallback summary")
    except Exception as exc:
        log.warning("fallback summary failed too: %s", type(exc).__name__)
        return CompressResult(
            messages=cleaned,
            outcome="failed_transient" if transient else "failed_permanent",
            llm_calls=calls,
            cooldown_seconds=cooldown,
            notes=[*notes, why, "fallback summariser failed; window unchanged"],
        )
    return finish(
        fallback_raw, "fallback", calls, cooldown, extra=[why, "offline fallback summary used"]
    )
