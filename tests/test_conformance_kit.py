"""The conformance kit (R-0.5): it checks what it claims, and each check can fail."""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conformance_helpers import broken_engine, run, transcripts_dir

from hermes_host import SelectRequest, SelectResult, hookimpl
from hermes_host.fence import HookRunner, Provenance
from hermes_host.hookspecs import LIFECYCLE_HOOKS
from hermes_host.messages import DANGLING_RESULT, check_invariants, text_of
from hermes_host.plugins import new_plugin_manager
from hermes_host.scaffold import render
from hermes_host.testing import CHECKS, build_request, check_hook, generated_sessions
from hermes_host.testing.generate import transcript_sessions

SESSIONS = {s.id: s for s in generated_sessions()}


# --- the generated sessions ---------------------------------------------------------------


def test_generated_sessions_cover_the_promised_shapes_R_0_5() -> None:
    s = SESSIONS
    for session in s.values():
        assert check_invariants(session.messages) == [], session.id
    coding = s["coding"].messages
    assert sum(1 for m in coding if m.get("tool_calls")) >= 10
    assert any(len(m.get("tool_calls") or []) >= 2 for m in coding), "parallel calls"
    assert max(len(text_of(m)) for m in s["long_outputs"].messages) >= 60_000
    assert all(m["role"] != "user" for m in s["no_user_turn"].messages)
    assert s["multi_topic"].messages[0]["role"] != "system"
    assert any(isinstance(m["content"], list) for m in s["list_content"].messages)
    assert any(m.get("content") == DANGLING_RESULT for m in s["dangling_calls_closed"].messages)
    assert max(len(text_of(m)) for m in s["huge_output"].messages) >= 600_000
    assert any(m.get("content") in ("", None) for m in s["empty_content"].messages)
    assert any("👩‍👩‍👧‍👦" in text_of(m) for m in s["unicode"].messages)
    assert sum(1 for m in s["summarised"].messages if m.get("_compressed_summary")) == 1


def test_generation_is_seeded_R_0_5() -> None:
    again = {x.id: x.messages for x in generated_sessions()}
    assert again == {k: v.messages for k, v in SESSIONS.items()}
    other = {x.id: x.messages for x in generated_sessions(seed=7)}
    assert other["coding"] != SESSIONS["coding"].messages


def test_transcript_sessions_are_valid_windows_R_0_5() -> None:
    folder = transcripts_dir()
    if not folder.is_dir():
        pytest.skip(f"real transcripts not found at {folder} (set HERMES_HOST_TRANSCRIPTS)")
    sessions = transcript_sessions(folder)
    usable = [s for s in sessions if not s.skip_reason]
    assert len(usable) >= len(list(folder.glob("*.jsonl")))
    for session in usable:
        assert check_invariants(session.messages) == [], session.id


def test_transcript_folder_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no \*\.jsonl files"):
        transcript_sessions(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"role": "user", "content": "hi"}\nnot json\n')
    (bad,) = transcript_sessions(tmp_path)
    assert bad.skip_reason and "bad.jsonl:2" in bad.skip_reason


# --- every check can fail (the broken engine) ----------------------------------------------

BROKEN = [
    # (mode, hook, session, expected check)
    ("fence", "select_context", "coding", "fence"),
    ("time_limit", "select_context", "coding", "time_limit"),
    ("result_type", "select_context", "coding", "result_type"),
    ("alternation", "select_context", "coding", "alternation"),
    ("tool_pairs", "select_context", "coding", "tool_pairs"),
    ("summary_count", "select_context", "coding", "summary_count"),
    ("wire_keys", "select_context", "multi_topic", "wire_keys"),
    ("system_prompt", "select_context", "coding", "system_prompt"),
    ("system_prompt_compress", "compress", "coding", "system_prompt"),
    ("no_mutation", "select_context", "coding", "no_mutation"),
    ("deterministic", "select_context", "coding", "deterministic"),
    ("state_not_json", "select_context", "coding", "result_type"),
    ("state_crash", "select_context", "coding", "fence"),
]


def test_every_check_has_a_broken_mode() -> None:
    assert {expected for *_, expected in BROKEN} == set(CHECKS)


@pytest.mark.parametrize(
    ("mode", "hook", "session", "expected"), BROKEN, ids=[b[0] for b in BROKEN]
)
def test_broken_engine_trips_exactly_its_check_R_0_5(
    mode: str, hook: str, session: str, expected: str
) -> None:
    # Only the time_limit mode gets a short limit: the others must not trip it under load.
    timeouts = {"select_context": 0.3} if mode == "time_limit" else {}
    problems = check_hook(broken_engine(mode), hook, SESSIONS[session], timeouts=timeouts)
    assert {p.check for p in problems} == {expected}, problems


def test_registration_check_catches_a_misspelled_or_missing_hook() -> None:
    from hermes_host.testing import ConformanceFailure, EngineConformance

    class Typo:
        @hookimpl
        def should_compres(self, request: Any) -> None:
            return None

    class Nothing:
        def select_context(self, request: Any) -> None:  # no @hookimpl: never called
            return None

    suite = EngineConformance()
    with pytest.raises(ConformanceFailure, match=r"unknown hook.*should_compres"):
        suite.test_registers_with_known_hooks(Typo())
    with pytest.raises(ConformanceFailure, match="implements no lifecycle hook"):
        suite.test_registers_with_known_hooks(Nothing())
    suite.test_registers_with_known_hooks(broken_engine("fence"))  # a real engine passes


def test_a_conforming_answer_passes_every_check() -> None:
    """The checks do not fire on a correct answer: the identity selection, deterministic."""

    class Identity:
        deterministic = True

        @hookimpl
        def select_context(self, request: SelectRequest) -> SelectResult:
            return SelectResult(messages=request.messages, decision={"kept": len(request.messages)})

    for session in SESSIONS.values():
        assert check_hook(Identity(), "select_context", session) == [], session.id


def test_mutating_the_private_copy_is_allowed_R_10_2() -> None:
    """The request an engine receives is its own copy: editing it is not a violation; only
    writing host data through a shared handle is (see the no_mutation mode above)."""

    class Scribbler:
        @hookimpl
        def select_context(self, request: SelectRequest) -> None:
            for message in request.messages:
                message["content"] = "scribbled"
            request.messages.clear()

    assert check_hook(Scribbler(), "select_context", SESSIONS["coding"]) == []


def test_the_kit_calls_through_the_real_fence_R_0_4() -> None:
    """build_request + HookRunner: the engine sees a snapshot, and the fence stamps the call."""
    seen: list[Any] = []

    class Spy:
        @hookimpl
        def select_context(self, request: SelectRequest) -> None:
            seen.append(request)

    pm = new_plugin_manager()
    pm.register(Spy(), name="spy")
    request = build_request("select_context", SESSIONS["coding"])
    fenced = HookRunner(pm).call("spy", "select_context", request)
    assert fenced.provenance is Provenance.NONE
    assert seen and seen[0] is not request and seen[0].messages == request.messages
    assert seen[0].history is request.history  # handles are shared: hence no_mutation


def test_kit_history_says_itself_whether_it_was_written_through_R_10_2() -> None:
    """Issue 15 review: the no_mutation check asks the history handle (the fence may give the
    engine frozen twins of the request's messages, so the request alone cannot tell)."""
    request = build_request("select_context", SESSIONS["coding"])
    history = request.history
    mark = history.checkpoint()
    history.messages()[1]["content"] = "written through the handle"
    assert history.changed_since(mark)
    assert not history.changed_since(history.checkpoint())
    clean = build_request("select_context", SESSIONS["coding"]).history
    mark = clean.checkpoint()
    clean.messages().append({"role": "user", "content": "a copy of the list"})
    clean.search("module")
    assert not clean.changed_since(mark)


@pytest.mark.parametrize("hook", LIFECYCLE_HOOKS)
def test_requests_are_valid_for_every_hook_and_session(hook: str) -> None:
    for session in SESSIONS.values():
        request = build_request(hook, session)
        assert request.messages == session.messages
        assert request.messages is not session.messages


# --- the scaffolded engine conforms, and really does something ---------------------------


def test_scaffold_engine_conforms_on_every_session(tmp_path: Path) -> None:
    _, root, _ = render("kit-probe", tmp_path)
    sys.path.insert(0, str(root))
    try:
        from hermes_kit_probe import KitProbeEngine  # type: ignore[import-not-found]

        engine = KitProbeEngine()
        for session in SESSIONS.values():
            for hook in LIFECYCLE_HOOKS:
                assert check_hook(engine, hook, session) == [], (session.id, hook)
        pm = new_plugin_manager()
        pm.register(engine, name="spy")
        request = build_request("select_context", SESSIONS["long_outputs"])
        fenced = HookRunner(pm).call("spy", "select_context", request)
        assert fenced.adopted and fenced.value is not None, "it elides over budget"
        assert fenced.value.decision["elided_tool_outputs"] >= 1
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.startswith("hermes_kit_probe")]:
            del sys.modules[name]


# --- the pytest plugin, end to end --------------------------------------------------------

_BROKEN_SUITE = """
import sys
import pytest
from hermes_host.testing import EngineConformance
sys.path.insert(0, {folder!r})
from broken_engine import BrokenEngine


class TestBroken(EngineConformance):
    @pytest.fixture
    def hermes_engine(self):
        return BrokenEngine(options={{"mode": "tool_pairs"}})
"""


def test_pytest_plugin_reports_the_broken_rule(tmp_path: Path) -> None:
    """A subclass of EngineConformance, run by pytest: fails, naming the rule and session."""
    folder = str(Path(__file__).parent / "fixtures" / "broken_engine")
    (tmp_path / "test_broken.py").write_text(_BROKEN_SUITE.format(folder=folder))
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_broken.py",
         "-k", "coding and select_context"],
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[tool_pairs]" in proc.stdout and "orphan_result" in proc.stdout
    assert "session 'coding'" in proc.stdout
    assert "1 failed" in proc.stdout


def test_pytest_plugin_runs_an_installed_engine_by_name(tmp_path: Path) -> None:
    """``--pyargs hermes_host.testing.suite --hermes-engine NAME`` with real transcripts."""
    pytest.importorskip("hermes_retrieval", reason="hermes-retrieval is not installed")
    folder = transcripts_dir()
    if not folder.is_dir():
        pytest.skip(f"real transcripts not found at {folder} (set HERMES_HOST_TRANSCRIPTS)")
    sample = tmp_path / "transcripts"
    sample.mkdir()
    for name in sorted(p.name for p in folder.glob("*.jsonl"))[:2]:
        shutil.copy(folder / name, sample / name)
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "--pyargs", "hermes_host.testing.suite", "--hermes-engine", "retrieval",
         "--hermes-transcripts", str(sample), "-k", "select_context"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed = int(proc.stdout.rsplit(" passed", 1)[0].split()[-1])
    assert passed >= len(SESSIONS) + 2, proc.stdout


def test_pytest_plugin_unknown_engine_is_a_usage_error(tmp_path: Path) -> None:
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--pyargs", "hermes_host.testing.suite", "--hermes-engine", "no_such_engine",
         "-k", "registers"],
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert "no_such_engine" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_pytest_plugin_bad_transcripts_folder_is_a_usage_error(tmp_path: Path) -> None:
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--pyargs", "hermes_host.testing.suite", "--hermes-transcripts", str(tmp_path / "nope")],
        cwd=tmp_path,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "is not a folder" in proc.stderr


def test_request_is_built_fresh_each_time() -> None:
    a = build_request("compress", SESSIONS["coding"])
    b = build_request("compress", SESSIONS["coding"])
    assert a == b and a is not b and a.messages is not b.messages
    assert copy.deepcopy(a) == a
