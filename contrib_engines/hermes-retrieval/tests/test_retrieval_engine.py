"""The retrieval engine on its own, against a real SQLite FTS5 HistoryReader (R-11.3, R-3.1)."""

from __future__ import annotations

import copy
import time
from importlib.metadata import entry_points
from pathlib import Path

import pluggy
import pytest
from retrieval_helpers import SYSTEM, FtsHistory, assistant, user

from hermes_host import SelectRequest, SelectResult, hookspecs
from hermes_host.messages import SUMMARY_PREFIX, check_invariants, text_of
from hermes_host.tokens import count_messages, count_text
from hermes_retrieval import Retrieval, RetrievalOptionsError
from hermes_retrieval.engine import BLOCK_END, BLOCK_START, METADATA_KEY

FILLER = [
    "Let us look at the chart colours and the legend placement.",
    "The build passed on the second attempt after clearing the cache.",
    "I renamed the variable and re-ran the formatter on the module.",
    "The tooltip now shows the release name when hovering a bar.",
]


def _history(extra: list[tuple[str, dict, bool]] | None = None) -> FtsHistory:
    history = FtsHistory()
    rows = []
    for i in range(40):
        rows.append(("s1", user(f"step {i}: {FILLER[i % 4]}"), False))
        rows.append(("s1", assistant(f"done with step {i}. {FILLER[(i + 1) % 4]}"), False))
    history.add(rows + (extra or []))
    return history


def _request(window, history, budget=50_000, state=None) -> SelectRequest:
    return SelectRequest(
        session_id="s2",
        messages=window,
        incoming_message=window[-1] if window else None,
        budget_tokens=budget,
        history=history,
        state=state or {},
    )


NEEDLE = (
    "Traceback: AttributeError: module 'aider.main' has no attribute 'RepoMap' "
    "raised from aider/repomap.py line 88 in get_repo_map"
)


def _window(incoming: str):
    return [SYSTEM, user("please fix the chart"), assistant("Fixed the chart."), user(incoming)]


def test_injects_compacted_identifier_into_incoming_message_R_11_3():
    history = _history([("s1", {"role": "tool", "tool_call_id": "c1", "content": NEEDLE}, False)])
    window = _window("Why does aider/repomap.py fail again with that AttributeError?")
    before = copy.deepcopy(window)
    result = Retrieval().select_context(request=_request(window, history))

    assert isinstance(result, SelectResult)
    assert len(result.messages) == len(window), "no message is added (alternation, R-1.4)"
    assert result.messages[:-1] == before[:-1], "earlier messages untouched (caching, R-1.3)"
    last = result.messages[-1]
    text = text_of(last)
    assert text.startswith(BLOCK_START) and BLOCK_END in text
    assert "aider/repomap.py line 88" in text
    assert text.endswith(before[-1]["content"]), "the user's own words follow the block"
    assert "compacted" in text, "an archived row is labelled as such"
    assert check_invariants(result.messages) == []
    assert result.decision["engine"] == "retrieval"
    assert result.decision["injected"] >= 1
    assert last[METADATA_KEY]["hits"], "the block is marked with a metadata key"
    assert window == before, "the request's own list is not mutated"


def test_exact_identifier_outranks_keyword_matches_R_11_3():
    keyword_heavy = assistant(
        "The parse step of the config loader reads the config file and then parses the "
        "config again; parse config, parse file, config file, parse parse config."
    )
    exact = assistant("Moved the logic into load_settings_file() in settings/loader.py.")
    history = _history([("s1", keyword_heavy, False), ("s1", exact, False)])
    window = _window("does load_settings_file still parse the config file?")
    result = Retrieval({"max_hits": 1}).select_context(request=_request(window, history))
    text = text_of(result.messages[-1])
    assert "settings/loader.py" in text
    assert "parse parse config" not in text
    assert result.decision["injected"] == 1


def test_no_duplicate_of_what_the_window_already_holds_R_11_3():
    in_window = assistant("Set CACHE_DIR to build/cache_v2 in tools/build_cache.py.")
    history = _history([("s1", in_window, True)])
    window = [SYSTEM, user("where is the cache?"), copy.deepcopy(in_window), user(
        "change tools/build_cache.py to use CACHE_DIR from the environment")]
    result = Retrieval().select_context(request=_request(window, history))
    assert result.decision["skipped_in_window"] >= 1
    assert "build/cache_v2" not in text_of(result.messages[-1]).split(BLOCK_END)[0] or (
        not text_of(result.messages[-1]).startswith(BLOCK_START)
    )
    assert result.messages[:-1] == window[:-1]


def test_block_stays_within_budget_share_R_11_3():
    big = [("s1", assistant(f"payload_builder.py chunk {i}: " + "x y z " * 300), False)
           for i in range(30)]
    history = _history(big)
    window = _window("what did payload_builder.py produce?")
    budget = count_messages(window) + 4000
    result = Retrieval({"budget_share": 0.25, "max_hits": 20}).select_context(
        request=_request(window, history, budget=budget)
    )
    added = count_text(text_of(result.messages[-1])) - count_text(window[-1]["content"])
    assert 0 < added <= 0.25 * 4000 + 8
    assert result.decision["block_budget"] == 1000


def test_no_budget_leaves_the_turn_unchanged():
    history = _history([("s1", assistant(NEEDLE), False)])
    window = _window("aider/repomap.py again?")
    result = Retrieval().select_context(
        request=_request(window, history, budget=count_messages(window) + 10)
    )
    assert result.messages == window
    assert result.decision["reason"] == "no_budget"


@pytest.mark.parametrize(
    ("window", "history", "reason"),
    [
        ([SYSTEM, assistant("calling")], "h", "no_user_message"),
        ([SYSTEM, user("aider/repomap.py?")], None, "no_history"),
        ([], "h", "no_user_message"),
    ],
)
def test_nothing_to_do_is_reported_not_raised(window, history, reason):
    h = _history() if history == "h" else None
    result = Retrieval().select_context(request=_request(window, h))
    assert result.messages == window
    assert result.decision["reason"] == reason


def test_list_content_gets_a_text_part_first():
    history = _history([("s1", assistant(NEEDLE), False)])
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    incoming = {"role": "user", "content": [{"type": "text", "text": "aider/repomap.py?"}, image]}
    window = [SYSTEM, user("hello"), assistant("hi"), incoming]
    result = Retrieval().select_context(request=_request(window, history))
    parts = result.messages[-1]["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith(BLOCK_START)
    assert parts[1:] == incoming["content"]


def test_lineage_hits_from_earlier_sessions_are_labelled():
    earlier = assistant("Deployed with deploy_prod.sh to eu-west-1.")
    history = _history([("s0-root", earlier, False)])
    window = _window("run deploy_prod.sh again like last time")
    result = Retrieval().select_context(request=_request(window, history))
    text = text_of(result.messages[-1])
    assert "session s0-root" in text and "eu-west-1" in text


def test_secrets_in_history_are_redacted_in_the_block():
    secret = "sk-ant-api03-" + "A1b2C3d4" * 4
    leaked = assistant(f"Configured client_config.py with api_key={secret} and password=hunter22x")
    history = _history([("s1", leaked, False)])
    window = _window("what did we put in client_config.py?")
    result = Retrieval().select_context(request=_request(window, history))
    text = text_of(result.messages[-1])
    assert "client_config.py" in text
    assert secret not in text and "hunter22x" not in text
    assert "[REDACTED]" in text
    assert secret not in repr(result.decision)


HOSTILE = [
    'what about "unterminated quote and NEAR(a b) AND OR NOT *',
    "'); DROP TABLE messages; -- aider/repomap.py",
    "^start -minus +plus {col}: x:y column:filter NEAR/3 \"\" '' ``",
    "emoji 🧨 and \u0000 nul and \udcff lone surrogate RepoMap",
    "a" * 100_000,
    "`` ` `a` ``` *** ((( ))) [[[ ]]] \\\\ //// ....",
    "SELECT * FROM messages_fts WHERE messages_fts MATCH 'x'",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise_nor_break_fts_R_11_3(query):
    history = _history([("s1", assistant(NEEDLE), False)])
    rows = history.count()
    window = _window(query)
    result = Retrieval().select_context(request=_request(window, history))
    assert isinstance(result, SelectResult)
    assert "search_errors" not in result.decision, history.queries
    assert check_invariants(result.messages) == []
    assert history.count() == rows
    assert result.messages[-1]["content"].endswith(query.rstrip("\n"))


def test_a_failing_history_handle_costs_only_the_failed_queries():
    class Flaky(FtsHistory):
        def search(self, query, *, limit=20, lineage=True):
            if "AttributeError" in query:
                raise RuntimeError("backend hiccup")
            return super().search(query, limit=limit, lineage=lineage)

    history = Flaky()
    history.add([("s1", assistant(NEEDLE), False)])
    window = _window("AttributeError in aider/repomap.py")
    result = Retrieval().select_context(request=_request(window, history))
    assert result.decision["search_errors"] == ["RuntimeError"]
    assert "line 88" in text_of(result.messages[-1])


def test_second_pass_does_not_stack_blocks():
    history = _history([("s1", assistant(NEEDLE), False)])
    window = _window("aider/repomap.py?")
    engine = Retrieval()
    first = engine.select_context(request=_request(window, history))
    second = engine.select_context(request=_request(first.messages, history))
    assert second.messages == first.messages
    assert second.decision["reason"] == "already_injected"


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"budget_shar": 0.2}, "engines.retrieval.budget_shar: unknown option; allowed:"),
        ({"budget_share": 2}, "engines.retrieval.budget_share"),
        ({"max_hits": "many"}, "engines.retrieval.max_hits"),
        ("nope", "must be a mapping"),
    ],
)
def test_bad_options_are_clear_errors_R_0_3(options, needle):
    with pytest.raises(RetrievalOptionsError) as info:
        Retrieval(options)
    assert needle in str(info.value)


def test_entry_point_and_pluggy_registration_R_14_2():
    (ep,) = [e for e in entry_points(group="hermes_host.context_engines") if e.name == "retrieval"]
    assert ep.value == "hermes_retrieval.engine:Retrieval"
    engine_cls = ep.load()
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(engine_cls(options={"max_hits": 2}), name="retrieval")
    pm.check_pending()
    history = _history([("s1", assistant(NEEDLE), False)])
    result = pm.hook.select_context(request=_request(_window("aider/repomap.py?"), history))
    assert isinstance(result, SelectResult) and result.decision["injected"] == 1


def test_100k_message_history_answers_within_the_hook_timeout(tmp_path: Path):
    """R-11.3 with a real SQLite file of 100,000 messages: well inside the 5 s default."""
    history = FtsHistory(tmp_path / "big.db")
    words = ["alpha", "render", "bucket", "window", "tooltip", "legend", "schema", "parser"]
    rows = []
    for i in range(100_000):
        body = (f"turn {i} {words[i % 8]} {words[(i * 7) % 8]} update file "
                f"src/mod_{i % 500}/part_{i % 37}.py and check render output")
        rows.append((f"s{i // 20_000}", user(body) if i % 2 else assistant(body), i > 95_000))
    rows.append(("s0", assistant("The flaky_cache_key bug is in src/mod_7/part_3.py:412"), False))
    history.add(rows)
    window = _window("the render of src/mod_7/part_3.py: is flaky_cache_key still wrong?")
    started = time.monotonic()
    result = Retrieval().select_context(request=_request(window, history))
    elapsed = time.monotonic() - started
    assert elapsed < 5.0, elapsed
    assert "src/mod_7/part_3.py:412" in text_of(result.messages[-1])


def _call(call_id: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}


def test_tool_continuation_sends_reuse_the_turn_block_for_prompt_caching_R_1_3():
    history = _history([("s1", assistant(NEEDLE), False)])
    window = _window("Why does aider/repomap.py fail?")
    engine = Retrieval()
    first = engine.select_context(request=_request(window, history))
    assert first.decision["reason"] == "injected" and first.state["block"]
    queries = len(history.queries)
    window += [_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "ran it"}]
    second = engine.select_context(request=_request(window, history, state=first.state))
    assert second.decision["reason"] == "reused"
    assert len(history.queries) == queries, "no search on a continuation send"
    assert second.messages[: len(first.messages)] == first.messages, "identical prefix"
    assert second.messages[-2:] == window[-2:]
    assert check_invariants(second.messages) == []


def test_a_rewritten_window_recomputes_the_block():
    history = _history([("s1", assistant(NEEDLE), False)])
    window = _window("Why does aider/repomap.py fail?")
    engine = Retrieval()
    first = engine.select_context(request=_request(window, history))
    compacted = [SYSTEM, {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\nfix"},
                 assistant("ok"), window[-1]]
    again = engine.select_context(request=_request(compacted, history, state=first.state))
    assert again.decision["reason"] == "injected"
    assert again.state["prefix_key"] != first.state["prefix_key"]


def test_after_compaction_the_block_lists_names_the_window_lost():
    compacted = [
        ("s1", assistant("Edited lib/charts/blame_chart.js and fixed TooltipFormatter."), False),
        ("s1", assistant("The fix for lib/charts/blame_chart.js used aider_total."), False),
        ("s1", assistant("Still visible: render_legend in the window."), False),
    ]
    history = _history(compacted)
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\ncharts"}
    window = [SYSTEM, summary, assistant("Continuing; render_legend is next."),
              user("make the bars thinner")]
    result = Retrieval().select_context(request=_request(window, history))
    text = text_of(result.messages[-1])
    assert "Names the compacted part" in text
    names = text.split("most mentioned first):", 1)[1]
    assert names.index("lib/charts/blame_chart.js") < names.index("aider_total")
    assert "TooltipFormatter" in names
    assert "render_legend" not in names, "already visible in the window"
    assert result.decision["names"] >= 3
    assert text.endswith("make the bars thinner")


def test_agent_loop_without_a_user_request_gets_the_block_after_the_last_tool_result():
    """After a compaction of an agent run, the only user message may be the summary; the
    block then follows the newest tool output and alternation still holds (R-1.4)."""
    history = _history([("s1", assistant(NEEDLE), False)])
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\nfix repomap"}
    window = [SYSTEM, summary, _call("c9"),
              {"role": "tool", "tool_call_id": "c9", "content": "grep aider/repomap.py: 3 hits"}]
    result = Retrieval().select_context(request=_request(window, history))
    last = result.messages[-1]
    assert last["role"] == "tool" and last["tool_call_id"] == "c9"
    assert last["content"].startswith("grep aider/repomap.py: 3 hits")
    assert "line 88" in last["content"] and BLOCK_END in last["content"]
    assert result.messages[:-1] == window[:-1]
    assert check_invariants(result.messages) == []


def test_names_index_scans_the_lineage_once_per_window_epoch():
    class Counting(FtsHistory):
        scans = 0

        def messages(self, *, include_inactive=True):
            Counting.scans += 1
            return super().messages(include_inactive=include_inactive)

    history = Counting()
    edited = assistant("Edited lib/charts/blame_chart.js for TooltipFormatter.")
    history.add([("s1", edited, False)])
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\n## Goal\ncharts"}
    window = [SYSTEM, summary, assistant("Continuing."), user("make the bars thinner")]
    engine = Retrieval()
    first = engine.select_context(request=_request(window, history))
    assert "lib/charts/blame_chart.js" in text_of(first.messages[-1])
    window += [assistant("Done."), user("and now the legend colours")]
    second = engine.select_context(request=_request(window, history, state=first.state))
    assert second.decision["reason"] == "injected", "a new user turn recomputes the block"
    assert "lib/charts/blame_chart.js" in text_of(second.messages[-1])
    assert Counting.scans == 1, "the ranked names came from state"


def test_a_block_that_fits_its_budget_exactly_is_sent_R_11_3():
    """The frame (header, end marker) is paid for once: a budget just big enough for the
    block a roomy budget produces still gets that same block (found in review)."""
    history = _history([("s1", assistant(f"payload_builder.py wrote {NEEDLE}"), False)])
    window = _window("what did payload_builder.py produce?")
    engine = Retrieval({"budget_share": 0.5, "names_index": False})
    roomy = engine.select_context(request=_request(window, history))
    block = count_text(text_of(roomy.messages[-1])) - count_text(window[-1]["content"])
    assert block > 0
    # block_budget = the block + 12 tokens of slack (separators are costed a little high);
    # the frame alone is 67 tokens, so charging it twice would leave no room for the excerpt
    tight = count_messages(window) + 2 * (block + 12)
    result = engine.select_context(request=_request(window, history, budget=tight))
    assert result is not None and result.messages[-1] == roomy.messages[-1]
