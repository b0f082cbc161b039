"""Read-only messages shared across the fence and splice validation (issue 15, R-10.2, R-1.4)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fence_helpers import Returns, make_pm, select_request, window

from hermes_host import hookimpl
from hermes_host.fence import HookRunner, Provenance
from hermes_host.messages import check_invariants
from hermes_host.models import SelectRequest, SelectResult

WRITES = {
    "nested content block": lambda m: m[1]["content"][0].__setitem__("text", "x")
    if isinstance(m[1]["content"], list) else m[1].__setitem__("content", "x"),
    "tool-call arguments": lambda m: m[2]["tool_calls"][0]["function"].__setitem__(
        "arguments", "{}"),
    "dict inside a list": lambda m: m[2]["tool_calls"][0].__setitem__("id", "other"),
    "append to tool calls": lambda m: m[2]["tool_calls"].append({}),
    "del a key": lambda m: m[1].__delitem__("role"),
    "setdefault": lambda m: m[1].setdefault("name", "x"),
}


class Writer:
    read_only_messages = True

    def __init__(self, write: Any) -> None:
        self.write = write

    @hookimpl
    def select_context(self, request: SelectRequest) -> SelectResult:
        self.write(request.messages)
        return SelectResult(messages=request.messages)


@pytest.mark.parametrize("what", sorted(WRITES))
def test_issue15_a_write_into_a_shared_message_fails_loudly_and_the_caller_is_untouched(
    what: str,
) -> None:
    request = select_request()
    before = request.model_dump(exclude={"history"})
    fenced = HookRunner(make_pm(w=Writer(WRITES[what]))).call("w", "select_context", request)
    assert fenced.provenance is Provenance.ERROR
    assert fenced.error is not None and "read-only" in fenced.error
    assert request.model_dump(exclude={"history"}) == before


def test_issue15_documented_read_patterns_work_and_copies_are_mutable() -> None:
    seen: dict[str, Any] = {}

    class Reader:
        read_only_messages = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            messages = list(request.messages)
            seen["content"] = messages[1]["content"]
            seen["json"] = json.dumps(messages)
            copied = copy.deepcopy(messages[2])
            copied["tool_calls"][0]["function"]["arguments"] = "{}"
            spread = {**messages[1], "content": "edited"}
            messages[1] = spread
            return SelectResult(messages=messages)

    request = select_request()
    fenced = HookRunner(make_pm(r=Reader())).call("r", "select_context", request)
    assert fenced.adopted, fenced.error
    assert seen["content"] == window()[1]["content"]
    assert json.loads(seen["json"]) == window()
    assert fenced.value.messages[1]["content"] == "edited"
    assert request.messages == window()


def _edits() -> dict[str, list[dict[str, Any]]]:
    w = window()
    return {
        "unchanged": w,
        "drop the oldest turn": [w[0], *w[3:]] if len(w) > 3 else w,
        "orphan tool result": [*w, {"role": "tool", "tool_call_id": "ghost", "content": "x"}],
        "two users in a row": [*w[:2], {"role": "user", "content": "again"}, *w[1:]],
        "two summaries": [w[0], *[{"role": "user", "content": "[summary]",
                                   "_summary": True}] * 2, *w[1:]],
        "system moved": [*w[1:2], w[0], *w[2:]],
    }


@pytest.mark.parametrize("edit", sorted(_edits()))
def test_issue15_splice_validation_agrees_with_the_full_invariant_check(edit: str) -> None:
    """The change-only check adopts exactly what the full check on the whole list accepts."""
    messages = _edits()[edit]
    request = select_request()
    fenced = HookRunner(make_pm(e=Returns(SelectResult(messages=messages)))).call(
        "e", "select_context", request)
    full = check_invariants(messages)
    if full or messages[:1] != window()[:1]:
        assert fenced.provenance is Provenance.INVALID, edit
    else:
        assert fenced.adopted, fenced.error
        assert fenced.value.messages == messages
    assert request.messages == window()


def test_issue15_only_an_engine_that_declares_read_only_messages_gets_shared_ones() -> None:
    """R-10.2 keeps its promise to every other engine: a private, editable deep copy.  An
    engine with ``read_only_messages = True`` gets the caller's (frozen) message objects
    themselves; one without it may edit its copy, and the caller never sees either."""
    seen: dict[str, Any] = {}

    class Editor:
        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            for message in request.messages[1:]:  # the system prompt is immutable
                message["content"] = "edited"  # its own copy: allowed
            seen["editor"] = request.messages
            return SelectResult(messages=request.messages)

    class Sharer:
        read_only_messages = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> None:
            seen["sharer"] = request.messages

    request = select_request()
    before = request.model_dump(exclude={"history"})
    runner = HookRunner(make_pm(editor=Editor(), sharer=Sharer()))
    assert runner.call("editor", "select_context", request).provenance is Provenance.OK
    assert request.model_dump(exclude={"history"}) == before
    assert all(m["content"] == "edited" for m in seen["editor"][1:])
    assert not any(a is b for a, b in zip(seen["editor"], request.messages, strict=True))
    assert runner.call("sharer", "select_context", request).provenance is Provenance.NONE
    assert all(a is b for a, b in zip(seen["sharer"], request.messages, strict=True))


# --- a new list of fresh dicts per request: rebased on the last window (issue 15) ----------


def _fresh(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return json.loads(json.dumps(messages))  # what a host builds per request: new dicts


@pytest.mark.parametrize("edit", sorted(_edits()))
def test_issue15_a_rebased_window_knows_what_a_fresh_build_knows(edit: str) -> None:
    """A window built from the previous one (shared messages, the change checked alone)
    reports the same violations, sizes and summary count as one built from scratch: a
    cached "valid" is never reused for a window that changed."""
    from hermes_host.fence.windows import Window, window_of

    first = window_of(_fresh(window()))
    assert first.violations == []
    messages = _fresh(_edits()[edit])
    rebased = window_of(messages)
    built = Window.build(_fresh(_edits()[edit]))
    assert rebased.ref == messages
    assert rebased.violations == check_invariants(messages) == built.violations
    assert (rebased.sizes, rebased.total) == (built.sizes, built.total)
    assert (rebased.summaries, rebased.summary_count) == (built.summaries, built.summary_count)
    assert rebased.items is messages or rebased.items == messages


def test_issue15_fresh_requests_are_checked_again_each_time_through_the_runner() -> None:
    """The same engine, three requests built afresh: valid, then broken (two user messages
    in a row), then valid again — each judged on its own window, never the last one's."""

    class Echo:
        read_only_messages = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            return SelectResult(messages=request.messages)

    runner = HookRunner(make_pm(echo=Echo()))

    def ask(messages: list[dict[str, Any]]) -> Any:
        request = SelectRequest(session_id="s-1", messages=_fresh(messages), budget_tokens=4000)
        return runner.call("echo", "select_context", request)

    w = window()
    assert ask(w).adopted
    broken = ask([*w, {"role": "user", "content": "and again"}])
    assert broken.provenance is Provenance.INVALID
    assert broken.error is not None and "invariant" in broken.error
    grown = [*w, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    again = ask(grown)
    assert again.adopted, again.error
    assert again.value.messages == grown


def test_issue15_a_changed_message_in_a_fresh_request_reaches_the_engine_as_changed() -> None:
    """Sharing the previous window's messages is by equality: an edited message (same
    place, new text) is the new text, for the engine and in the adopted result."""
    seen: list[Any] = []

    class Reader:
        read_only_messages = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            seen.append(request.messages[1]["content"])
            return SelectResult(messages=request.messages)

    runner = HookRunner(make_pm(r=Reader()))
    w = window()
    for text in ("list the files", "list the folders"):
        w[1] = {"role": "user", "content": text}
        request = SelectRequest(session_id="s-1", messages=_fresh(w), budget_tokens=4000)
        fenced = runner.call("r", "select_context", request)
        assert fenced.adopted, fenced.error
        assert fenced.value.messages[1]["content"] == text
    assert seen == ["list the files", "list the folders"]


def test_issue15_a_request_list_changed_in_place_is_seen_as_changed() -> None:
    from hermes_host.fence.windows import window_of

    messages = _fresh(window())
    first = window_of(messages)
    assert first.violations == []
    messages.append({"role": "user", "content": "twice"})  # the caller edits its own list
    second = window_of(messages)
    assert second is not first
    assert second.ref == messages
    assert second.violations == check_invariants(messages) != []


# --- results keep the shared messages: checked by identity, O(change) (issue 15) ----------


def test_issue15_a_result_keeps_shared_messages_and_copies_only_the_others() -> None:
    from hermes_host.fence.frozen import FrozenDict, freeze

    shared = [freeze({"role": "system", "content": "s"}), freeze({"role": "user", "content": "q"})]
    kept = SelectResult(messages=shared)
    assert all(a is b for a, b in zip(kept.messages, shared, strict=True))
    assert kept.messages is not shared  # the list is the result's own
    plain = {"role": "assistant", "content": "a"}
    mixed = SelectResult(messages=[*shared, plain])
    assert mixed.messages[0] is shared[0] and mixed.messages[1] is shared[1]
    assert mixed.messages[2] == plain and mixed.messages[2] is not plain
    assert type(mixed.messages[2]) is dict and type(mixed.messages[0]) is FrozenDict
    with pytest.raises(ValueError, match=r"messages\.2"):  # the others are still validated
        SelectResult(messages=[*shared, {"role": "assistant", 3: "bad key"}])


def test_issue15_a_read_only_engine_hands_back_the_very_objects_and_they_are_adopted() -> None:
    seen: dict[str, Any] = {}

    class Echo:
        read_only_messages = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            result = SelectResult(messages=request.messages)
            seen["same"] = all(
                a is b for a, b in zip(result.messages, request.messages, strict=True)
            )
            return result

    request = select_request()
    fenced = HookRunner(make_pm(echo=Echo())).call("echo", "select_context", request)
    assert fenced.provenance is Provenance.OK and seen["same"]
    assert fenced.value is not None
    assert fenced.value.messages == request.messages


# --- issue 32: what an unchanged window costs is one compare, not a pass -------------------


def test_issue32_a_handed_out_list_comes_back_as_the_fences_own_messages() -> None:
    """An engine that answers with the very list it was handed is recognised by identity;
    a list it changed is validated like any other."""
    from hermes_host.fence.frozen import FrozenDict
    from hermes_host.fence.windows import hand_out, window_of

    win = window_of(_fresh(window()))
    handed = hand_out(win)
    assert handed is not win.ref  # the engine's own list
    kept = SelectResult(messages=handed)
    assert all(a is b for a, b in zip(kept.messages, win.ref, strict=True))
    assert kept.messages is not handed and kept.messages is not win.ref

    grown = hand_out(win)
    grown.append({"role": "user", "content": "added by the engine"})
    result = SelectResult(messages=grown)
    assert len(result.messages) == len(win.ref) + 1
    assert type(result.messages[-1]) is dict and result.messages[-1] is not grown[-1]

    swapped = hand_out(win)
    swapped[1] = {"role": "user", 3: "bad key"}  # not the fence's message any more
    with pytest.raises(ValueError, match=r"messages\.1"):
        SelectResult(messages=swapped)
    assert all(type(m) is FrozenDict for m in win.ref)


def test_issue32_a_callers_own_list_is_known_again_until_it_changes() -> None:
    """The same list passed again, unchanged, gives the same window (one compare); appended
    to in place, a new window that holds the new message."""
    from hermes_host.fence.windows import window_of

    messages = _fresh(window())
    first = window_of(messages)
    assert window_of(messages) is first
    messages.append({"role": "user", "content": "one more"})
    second = window_of(messages)
    assert second is not first and second.ref == messages
    assert window_of(messages) is second
    messages[-1] = {"role": "user", "content": "edited in place"}
    third = window_of(messages)
    assert third is not second and third.ref[-1] == {"role": "user", "content": "edited in place"}
