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

import importlib.metadata
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from hermes_host.config import HermesConfig, HooksSection
from hermes_host.fence import Fenced, HookRunner, Provenance
from hermes_host.hookspecs import DEFAULT_TIMEOUTS, LIFECYCLE_HOOKS
from hermes_host.plugins import ENGINE_GROUP, implemented_hooks, new_plugin_manager
from hermes_host.testing.conformance.checks import CHECKS, Problem, _canonical, result_problems
from hermes_host.testing.conformance.history import KitHistory
from hermes_host.testing.conformance.requests import build_request
from hermes_host.testing.generate import Session

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


class ConformanceFailure(AssertionError):
    """Raised by the suite; ``problems`` holds every broken rule of the failing call."""

    def __init__(self, message: str, problems: Sequence[Problem]) -> None:
        super().__init__(message)
        self.problems = list(problems)


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


def _plain(request: BaseModel) -> dict[str, Any]:
    return request.model_dump(exclude={"history"})


def _watched_call(
    runner: HookRunner, name: str, hook: str, request: BaseModel
) -> tuple[Fenced[Any], bool]:
    """The fenced call, and whether the host's request changed during it (R-10.2): its
    fields, and the rows behind its ``history`` handle, which the handle reports itself."""
    before = _plain(request)
    history = request.__dict__.get("history")
    mark = history.checkpoint() if isinstance(history, KitHistory) else None
    fenced = runner.call(name, hook, request)
    changed = _plain(request) != before or (
        isinstance(history, KitHistory) and mark is not None and history.changed_since(mark)
    )
    return fenced, changed


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
    fenced, changed = _watched_call(runner, name, hook, request)
    problems: list[Problem] = []
    if changed:
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
    fenced, changed = _watched_call(runner, name, hook, request)
    problems: list[Problem] = []
    if changed:
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
