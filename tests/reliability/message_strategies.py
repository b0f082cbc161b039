"""Hypothesis strategies for message lists, valid and invalid (issue 13's fuzz part).

:func:`message_lists` draws a well-formed conversation (system prompt, user turns with text
or image parts, assistant tool calls with JSON arguments, their results, answers) and then,
most of the time, breaks it in one or more of the ways real transcripts break: wrong or
missing roles, missing / duplicate / unknown tool-call ids, orphan results, ``None`` or
non-string content, malformed image parts, huge strings, lone surrogates (text that cannot
be encoded as UTF-8), deeply nested JSON arguments, stray keys.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

HUGE = "x" * 300_000 + " end of a very long tool output"
DEEP_ARGS = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a": ' * 3000 + "1" + "}" * 3000
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
       "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                min_size=0, max_size=40)
surrogates = st.text(alphabet=st.characters(categories=("Cs",)), min_size=1, max_size=4).map(
    lambda s: f"before {s} after")
texts = st.one_of(words, words, words, surrogates, st.just(HUGE), st.just(""),
                  st.just("sk-live-4f9a8b7c6d5e4f3a2b1c is my key"))
call_ids = st.sampled_from(["call_1", "call_2", "call_3", "call_dup", ""])

image_part = st.fixed_dictionaries(
    {"type": st.just("image_url"),
     "image_url": st.one_of(st.fixed_dictionaries({"url": st.just(PNG)}),
                            st.fixed_dictionaries({"url": st.just("data:image/png;base64,@@")}),
                            st.fixed_dictionaries({"url": words}), st.just(None), words)})
text_part = st.fixed_dictionaries({"type": st.just("text"), "text": texts})
bad_part = st.one_of(st.none(), st.integers(), words, st.fixed_dictionaries({"type": words}))
parts = st.lists(st.one_of(text_part, text_part, image_part, bad_part), min_size=0, max_size=3)
contents = st.one_of(texts, texts, parts, st.none(), st.integers(), st.booleans(),
                     st.dictionaries(words, words, max_size=2))
arguments = st.one_of(
    st.dictionaries(words, st.one_of(words, st.integers()), max_size=3).map(json.dumps),
    st.just(DEEP_ARGS), st.just(DEEP_OBJECT), words, st.just("{not json"),
    st.dictionaries(words, words, max_size=2))


def _call(call_id: str, args: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": "terminal", "arguments": args}}


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A well-formed conversation: every call answered once, roles alternating."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(words) or "You are terse."})
    for turn in range(draw(st.integers(1, 6))):
        user = draw(st.one_of(texts, st.lists(st.one_of(text_part, image_part), min_size=1,
                                                   max_size=2)))
        messages.append({"role": "user", "content": user})
        if draw(st.booleans()):
            n = draw(st.integers(1, 2))
            ids = [f"call_{turn}_{k}" for k in range(n)]
            messages.append({"role": "assistant", "content": draw(st.one_of(st.none(), words)),
                             "tool_calls": [_call(i, draw(arguments.filter(
                                 lambda a: isinstance(a, str)))) for i in ids]})
            for i in ids:
                messages.append({"role": "tool", "tool_call_id": i, "content": draw(texts),
                                 "name": "terminal"})
        messages.append({"role": "assistant", "content": draw(texts)})
    return messages


@st.composite
def broken(draw: st.DrawFn, messages: list[dict[str, Any]]) -> list[Any]:
    """``messages`` with 1–3 faults."""
    out: list[Any] = [dict(m) for m in messages]
    for _ in range(draw(st.integers(1, 3))):
        if not out:
            out.append(draw(st.one_of(st.none(), st.integers(), words)))
            continue
        i = draw(st.integers(0, len(out) - 1))
        kind = draw(st.sampled_from([
            "role", "no_role", "content", "orphan", "dup_id", "no_id", "unknown_id", "deep",
            "not_a_dict", "extra_key", "drop", "calls_not_list", "summary_flag"]))
        m = out[i] if isinstance(out[i], dict) else {}
        if kind == "role":
            m["role"] = draw(st.sampled_from(["developer", "function", "USER", "", "bot", None,
                                              7, "system"]))
        elif kind == "no_role":
            m.pop("role", None)
        elif kind == "content":
            m["content"] = draw(contents)
        elif kind == "orphan":
            out.insert(i, {"role": "tool", "tool_call_id": draw(call_ids),
                           "content": draw(texts)})
        elif kind == "dup_id":
            out.insert(i, {"role": "assistant", "content": None,
                           "tool_calls": [_call("call_dup", "{}"), _call("call_dup", "{}")]})
        elif kind == "no_id":
            out.insert(i, {"role": "assistant", "content": None,
                           "tool_calls": [{"type": "function",
                                           "function": {"name": "x", "arguments": "{}"}}]})
        elif kind == "unknown_id":
            m["tool_call_id"] = draw(st.one_of(call_ids, st.none(), st.integers()))
        elif kind == "deep":
            out.insert(i, {"role": "assistant", "content": None,
                           "tool_calls": [_call("call_deep", draw(st.sampled_from(
                               [DEEP_ARGS, DEEP_OBJECT])))]})
        elif kind == "not_a_dict":
            out[i] = draw(st.one_of(st.none(), st.integers(), words, st.lists(words,
                                                                             max_size=2)))
        elif kind == "extra_key":
            m[draw(st.sampled_from(["_private", "name", "weird", "tool_calls"]))] = draw(
                st.one_of(words, st.none(), st.integers(), st.lists(st.none(), max_size=2)))
        elif kind == "drop":
            out.pop(i)
        elif kind == "calls_not_list":
            m["tool_calls"] = draw(st.one_of(words, st.none(), st.dictionaries(words, words)))
        elif kind == "summary_flag":
            m["_compressed_summary"] = True
    return out


message_lists = st.one_of(
    conversations(),
    conversations().flatmap(broken),
    conversations().flatmap(broken),
    st.lists(st.one_of(st.none(), st.integers(), words,
                       st.dictionaries(words, contents, max_size=3)), max_size=4),
)
