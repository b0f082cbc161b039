"""The conformance kit: run an engine through the real host fence and check every invariant.

For one engine, one lifecycle hook and one session, :func:`check_hook` builds the request the
host would build, calls the engine through :class:`hermes_host.fence.HookRunner` (snapshot,
daemon worker, time limit, validation — exactly as in production) and returns every broken
rule as a :class:`Problem`.  Each problem names its check:

=================  ==========================================================================
``fence``          the call raised (also when called again with its own ``state``), or was
                   refused for a reason not listed below
``time_limit``     the call did not answer within the hook's time limit (R-0.4, R-14.9)
``result_type``    the answer is not the hook's result type (or ``None``), is malformed, or
                   its ``state`` (``select_context``) is not JSON-serialisable
``alternation``    two consecutive ``user`` / ``assistant`` messages (R-1.4)
``tool_pairs``     a tool call without its result, or a result without its call (R-6.9)
``summary_count``  more than one summary block (R-6.6)
``wire_keys``      after ``sanitize_for_wire`` a ``_`` key is still present (nested in a tool
                   call or a content part) or the messages are not JSON-serialisable (R-7.5)
``system_prompt``  message 0 (the system prompt) was changed, removed or added (R-1.3) — by
                   any hook, ``compress`` included
``no_mutation``    the host's own request changed during the call (written through the
                   ``history`` handle or any other shared object) (R-10.2)
``deterministic``  an engine declaring ``deterministic = True`` answered the same request
                   twice with different results
=================  ==========================================================================

:class:`EngineConformance` wraps this in a pytest suite; :mod:`hermes_host.testing.generate`
supplies the sessions.
"""

from __future__ import annotations

import copy
import datetime as _dt
import importlib.metadata
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from hermes_host.config import HermesConfig, HooksSection
from hermes_host.fence import RESULT_TYPES, HookRunner, Provenance
from hermes_host.hookspecs import DEFAULT_TIMEOUTS, LIFECYCLE_HOOKS
from hermes_host.messages import check_invariants, sanitize_for_wire, text_of
from hermes_host.models import (
    CompressRequest,
    GuardState,
    Message,
    PruneRequest,
    SelectRequest,
    ShouldCompressRequest,
    SummarizerSettings,
)
from hermes_host.plugins import ENGINE_GROUP, implemented_hooks, new_plugin_manager
from hermes_host.testing.generate import Session
from hermes_host.tokens import count_messages

__all__ = [
    "CHECKS",
    "ConformanceFailure",
    "EngineConformance",
    "KitHistory",
    "Problem",
    "build_request",
    "check_hook",
    "engine_name",
    "load_engine",
]

CHECKS: tuple[str, ...] = (
    "fence",
    "time_limit",
    "result_type",
    "alternation",
    "tool_pairs",
    "summary_count",
    "wire_keys",
    "system_prompt",
    "no_mutation",
    "deterministic",
)

_NOW = 1_767_225_600.0  # a fixed clock: requests (and so deterministic answers) reproduce
_TODAY = _dt.date(2026, 1, 1)
_RULE_TO_CHECK = {
    "alternation": "alternation",
    "orphan_call": "tool_pairs",
    "orphan_result": "tool_pairs",
    "summary_count": "summary_count",
    "structure": "result_type",
}


class ConformanceFailure(AssertionError):
    """Raised by the suite; ``problems`` holds every broken rule of the failing call."""

    def __init__(self, message: str, problems: Sequence[Problem]) -> None:
        super().__init__(message)
        self.problems = list(problems)


@dataclass(frozen=True)
class Problem:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.detail}"


class KitHistory:
    """An in-memory :class:`hermes_host.HistoryReader` over the session's window.

    Like a store that caches rows, it hands out the host's *own* message dicts (the fence
    shares handles by reference): an engine that writes through it changes the host's data,
    and the ``no_mutation`` check sees it.  Engines must treat ``history`` as read-only.
    """

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def search(
        self, query: str, *, limit: int = 20, lineage: bool = True
    ) -> list[dict[str, Any]]:
        terms = [t for t in query.lower().split() if t]
        hits = []
        for index, message in enumerate(self._messages):
            text = text_of(message).lower()
            score = -sum(text.count(t) for t in terms)
            if terms and score < 0:
                hits.append(
                    {
                        "message_id": index + 1,
                        "session_id": "conformance",
                        "role": message.get("role"),
                        "content": text_of(message),
                        "score": float(score),
                        "active": True,
                    }
                )
        hits.sort(key=lambda h: (h["score"], h["message_id"]))
        return hits[:limit]

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        return list(self._messages)


def engine_name(engine: object) -> str:
    """The name the host would give ``engine``: the entry-point name of the installed engine
    whose class it is (``compressor``), else its ``name`` attribute when that is a string,
    else its class name.  Only modules already imported are looked at: nothing is imported."""
    cls = type(engine)
    for ep in importlib.metadata.entry_points(group=ENGINE_GROUP):
        module = sys.modules.get(ep.module)
        if module is None:
            continue
        target: Any = module if ep.attr else None  # a module entry point is no class
        for part in (ep.attr or "").split("."):
            target = getattr(target, part, None)
        if target is cls:
            return ep.name
    name = getattr(engine, "name", None)
    return name if isinstance(name, str) and name.strip() else cls.__name__


def build_request(hook: str, session: Session) -> BaseModel:
    """The request the host would send ``hook`` for ``session`` (a fresh object each time).

    The context length is set so the window is past the default trigger (compression is
    due) and the ``select_context`` budget is half the window (selection must choose).
    Compression uses the offline summariser: the kit never calls a network.
    """
    messages = copy.deepcopy(session.messages)
    tokens = count_messages(messages)
    context_length = max(1024, int(tokens * 1.6))
    guards = GuardState(now=_NOW)
    sid = f"conformance-{session.id}"
    if hook == "should_compress":
        return ShouldCompressRequest(
            session_id=sid,
            messages=messages,
            prompt_tokens=tokens,
            current_tokens=tokens,
            context_length=context_length,
            model="claude-sonnet-4-5",
            guards=guards,
        )
    if hook == "compress":
        return CompressRequest(
            session_id=sid,
            messages=messages,
            current_tokens=tokens,
            context_length=context_length,
            model="claude-sonnet-4-5",
            guards=guards,
            today=_TODAY,
            summarizer=SummarizerSettings(provider="offline"),
        )
    if hook == "select_context":
        last = messages[-1] if messages else None
        request = SelectRequest(
            session_id=sid,
            messages=messages,
            incoming_message=copy.deepcopy(last) if last and last["role"] == "user" else None,
            budget_tokens=max(64, tokens // 2),
        )
        request.history = KitHistory(request.messages)
        return request
    if hook == "prune_tool_results_only":
        return PruneRequest(
            session_id=sid,
            messages=messages,
            current_tokens=tokens,
            context_length=context_length,
            min_output_chars=2_000,
            min_reclaim_tokens=256,
        )
    raise ValueError(f"unknown lifecycle hook {hook!r}; allowed: {', '.join(LIFECYCLE_HOOKS)}")


# --- the checks ---------------------------------------------------------------------------


def _nested_private_keys(messages: list[Message]) -> list[str]:
    found = []
    for i, message in enumerate(messages):
        for key in message:
            if isinstance(key, str) and key.startswith("_"):
                found.append(f"message {i}: top-level key {key!r}")
        for j, call in enumerate(message.get("tool_calls") or []):
            if isinstance(call, dict):
                for key, value in call.items():
                    if isinstance(key, str) and key.startswith("_"):
                        found.append(f"message {i}: tool_calls[{j}].{key}")
                    if isinstance(value, dict):
                        found += [
                            f"message {i}: tool_calls[{j}].{key}.{k}"
                            for k in value
                            if isinstance(k, str) and k.startswith("_")
                        ]
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict):
                    found += [
                        f"message {i}: content[{j}].{k}"
                        for k in part
                        if isinstance(k, str) and k.startswith("_")
                    ]
    return found


def _system_prompt_problem(before: list[Message], after: list[Message]) -> str | None:
    had = bool(before) and before[0].get("role") == "system"
    has = bool(after) and isinstance(after[0], dict) and after[0].get("role") == "system"
    if had and not has:
        return "the system prompt (message 0) was removed"
    if has and not had:
        return "a system message was added at index 0 where the window had none"
    if had and sanitize_for_wire([after[0]]) != sanitize_for_wire([before[0]]):
        return "the system prompt (message 0) was changed; it is immutable (R-1.3)"
    return None


def result_problems(hook: str, value: Any, request: BaseModel) -> list[Problem]:
    """Every rule the answer ``value`` breaks (``None`` is always a valid answer)."""
    if value is None:
        return []
    model = RESULT_TYPES[hook]
    if isinstance(value, dict):
        return [
            Problem(
                "result_type",
                f"returned a plain dict, expected {model.__name__} or None (build the result "
                f"with {model.__name__}(...); the host never adopts a dict)",
            )
        ]
    if not isinstance(value, model):
        return [
            Problem(
                "result_type",
                f"returned {type(value).__name__}, expected {model.__name__} or None",
            )
        ]
    messages = getattr(value, "messages", None)
    if messages is None:
        return []
    if not isinstance(messages, list):
        return [Problem("result_type", f"messages is {type(messages).__name__}, not a list")]
    problems = [
        Problem(_RULE_TO_CHECK.get(v.rule, "result_type"), str(v))
        for v in check_invariants(messages)
    ]
    if any(p.check == "result_type" for p in problems):
        return problems  # structure is broken: the other checks would only add noise
    try:
        wire = sanitize_for_wire(messages)
        json.dumps(wire, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(Problem("wire_keys", f"messages are not JSON-serialisable: {exc}"))
    else:
        for where in _nested_private_keys(wire):
            problems.append(
                Problem("wire_keys", f"{where} survives sanitize_for_wire (strict gateways "
                        "reject unknown fields; only top-level '_' keys are stripped)")
            )
    change = _system_prompt_problem(getattr(request, "messages", []), messages)
    if change:
        problems.append(Problem("system_prompt", change))
    return problems


def _canonical(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, default=repr)


def _plain(request: BaseModel) -> dict[str, Any]:
    return request.model_dump(exclude={"history"})


def check_hook(
    engine: object,
    hook: str,
    session: Session,
    *,
    timeouts: Mapping[str, float] | None = None,
    runner: HookRunner | None = None,
    name: str | None = None,
) -> list[Problem]:
    """Call ``engine``'s ``hook`` on ``session`` through the fence; every broken rule.

    The engine is registered under ``name`` (default :func:`engine_name`: its entry-point
    name), so the fence's messages name it as the host would.  With ``runner``, ``engine``
    must already be registered there under that name.  An engine that does not implement
    ``hook`` has nothing to break: ``[]``.
    """
    if hook not in LIFECYCLE_HOOKS:
        raise ValueError(f"unknown lifecycle hook {hook!r}; allowed: {', '.join(LIFECYCLE_HOOKS)}")
    if name is None:
        name = engine_name(engine)
    if runner is None:
        pm = new_plugin_manager()
        pm.register(engine, name=name)
        runner = HookRunner(pm, HooksSection(timeouts=dict(timeouts or {})), trace=False)
    limit = runner.timeout_for(hook)
    request = build_request(hook, session)
    before = _plain(request)
    # The fence may swap the request's messages for read-only twins (issue 15), so the
    # history handle's own rows are compared too: they are what a write through it changes.
    history = request.__dict__.get("history")
    rows = history._messages if isinstance(history, KitHistory) else None
    rows_before = copy.deepcopy(rows)
    fenced = runner.call(name, hook, request)
    problems: list[Problem] = []
    if _plain(request) != before or rows != rows_before:
        problems.append(
            Problem("no_mutation", f"{hook} changed the host's request (it wrote through a "
                    "shared object such as request.history); treat the request as read-only")
        )
    if fenced.provenance is Provenance.TIMEOUT:
        problems.append(Problem("time_limit", f"no answer within {limit:g}s: {fenced.error}"))
        return problems
    if fenced.provenance is Provenance.ERROR:
        problems.append(Problem("fence", fenced.error or "the call raised"))
        return problems
    if fenced.provenance is Provenance.INVALID:
        # The fence discarded the answer; re-run the call directly to name each broken rule
        # (it answered in time a moment ago).  If that differs, the fence's reason stands.
        try:
            raw = getattr(engine, hook)(request=build_request(hook, session))
            named = result_problems(hook, raw, request)
        except Exception:
            named = []
        problems += named or [Problem("result_type", fenced.error or "rejected by the fence")]
        return problems
    if fenced.provenance is Provenance.BREAKER_OPEN:
        problems.append(Problem("fence", fenced.error or "circuit breaker open"))
        return problems
    if fenced.duration > limit:
        problems.append(Problem("time_limit", f"took {fenced.duration:.2f}s, limit {limit:g}s"))
    problems += result_problems(hook, fenced.value, request)
    state = getattr(fenced.value, "state", None)
    if state is not None and not problems:
        problems += _state_problems(runner, name, hook, session, state)
    if getattr(engine, "deterministic", False) is True and not problems:
        again = runner.call(name, hook, build_request(hook, session))
        if again.provenance is not fenced.provenance or _canonical(again.value) != _canonical(
            fenced.value
        ):
            problems.append(
                Problem("deterministic", f"{type(engine).__name__} declares deterministic = "
                        f"True but two identical {hook} requests gave different answers")
            )
    return problems


def _state_problems(
    runner: HookRunner, name: str, hook: str, session: Session, state: Any
) -> list[Problem]:
    """``SelectResult.state`` is persisted by the host (JSON) and handed back next turn: it
    must serialise, and the engine must still keep every rule when it receives it."""
    try:
        restored = json.loads(json.dumps(state, allow_nan=False))
    except (TypeError, ValueError) as exc:
        return [Problem("result_type", f"SelectResult.state is not JSON-serialisable: {exc}")]
    request = build_request(hook, session)
    request.state = restored  # type: ignore[attr-defined]
    before = _plain(request)
    # The fence may swap the request's messages for read-only twins (issue 15), so the
    # history handle's own rows are compared too: they are what a write through it changes.
    history = request.__dict__.get("history")
    rows = history._messages if isinstance(history, KitHistory) else None
    rows_before = copy.deepcopy(rows)
    fenced = runner.call(name, hook, request)
    problems: list[Problem] = []
    if _plain(request) != before or rows != rows_before:
        problems.append(Problem("no_mutation", f"{hook} with state changed the host's request"))
    if fenced.provenance in (Provenance.ERROR, Provenance.TIMEOUT, Provenance.INVALID):
        problems.append(
            Problem("fence", f"called again with its own state, the engine failed: {fenced.error}")
        )
    else:
        problems += result_problems(hook, fenced.value, request)
    return problems


def load_engine(name: str, options: Mapping[str, Any] | None = None) -> object:
    """Instantiate the installed engine ``name`` exactly as the host does (entry point,
    ``options=``), with no memory provider."""
    from hermes_host.plugins import load_plugins

    config = HermesConfig.model_validate(
        {
            "context": {"engine": name},
            "engines": {name: dict(options or {})},
            "memory": {"providers": []},
        }
    )
    return load_plugins(config).engines[name]


# --- the pytest suite ---------------------------------------------------------------------


def _fail(engine: object, hook: str, session: Session, problems: Sequence[Problem]) -> None:
    __tracebackhide__ = True  # the report names the rule; the kit's frames are noise
    name, cls = engine_name(engine), type(engine).__name__
    label = repr(name) if name == cls else f"{name!r} ({cls})"
    lines = [
        f"engine {label} broke {len(problems)} host rule(s) in {hook} on "
        f"session {session.id!r} ({session.description}, {len(session.messages)} messages):"
    ]
    lines += [f"  {p}" for p in problems]
    raise ConformanceFailure("\n".join(lines), problems)


class EngineConformance:
    """Subclass in your tests and provide the ``hermes_engine`` fixture::

        class TestMyEngine(EngineConformance):
            @pytest.fixture
            def hermes_engine(self):
                return MyEngine()

    The plugin parametrises ``hermes_session`` with every generated session (and, with
    ``--hermes-transcripts DIR``, every transcript in DIR); ``test_hook`` runs each lifecycle
    hook the engine implements on each session.  Override ``hermes_timeouts`` to give a slow
    hook more time than the host's default (document it for your users: they must configure
    the same limit in ``hooks.timeouts``).
    """

    hermes_timeouts: ClassVar[dict[str, float]] = {}

    def test_registers_with_known_hooks(self, hermes_engine: object) -> None:
        """R-14.3: the engine registers with the host's hookspecs, implements at least one
        lifecycle hook, and no hook name is misspelled."""
        hooks = implemented_hooks(hermes_engine)
        unknown = [h for h in hooks if h not in DEFAULT_TIMEOUTS]
        if unknown:
            raise ConformanceFailure(
                f"{type(hermes_engine).__name__} implements unknown hook(s) "
                f"{', '.join(unknown)}; known: {', '.join(DEFAULT_TIMEOUTS)}",
                [],
            )
        if not set(hooks) & set(LIFECYCLE_HOOKS):
            raise ConformanceFailure(
                f"{type(hermes_engine).__name__} implements no lifecycle hook "
                f"({', '.join(LIFECYCLE_HOOKS)}); decorate methods with @hookimpl",
                [],
            )
        pm = new_plugin_manager()
        pm.register(hermes_engine, name=engine_name(hermes_engine))
        pm.check_pending()

    def test_hook(self, hermes_engine: object, hermes_hook: str, hermes_session: Session) -> None:
        """Every host invariant after a fenced call of ``hermes_hook`` on ``hermes_session``."""
        import pytest

        if hermes_session.skip_reason:
            pytest.skip(hermes_session.skip_reason)
        if hermes_hook not in implemented_hooks(hermes_engine):
            pytest.skip(f"{type(hermes_engine).__name__} does not implement {hermes_hook}")
        problems = check_hook(
            hermes_engine, hermes_hook, hermes_session, timeouts=self.hermes_timeouts
        )
        if problems:
            _fail(hermes_engine, hermes_hook, hermes_session, problems)
