"""The conformance kit names the real engine and refuses a plain ``dict`` (issue 12).

The engine is a real installed distribution (``plugins_helpers.FakeInstall``) loaded the way
``--hermes-engine NAME`` loads it; before the fix every message called it
``engine_under_test`` and a ``dict`` answer passed as ``ok``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from plugins_helpers import (
    ENGINE_GROUP,
    FLAKY_SECRET,
    FLAKY_SOURCE,
    FakeDist,
    FakeInstall,
    fake_installation,
)

from hermes_host.testing import (
    ConformanceFailure,
    EngineConformance,
    check_hook,
    engine_name,
    generated_sessions,
    load_engine,
)

SESSION = next(s for s in generated_sessions() if s.id == "coding")

fake = pytest.fixture(fake_installation, name="fake")


@pytest.fixture
def flaky(fake: FakeInstall) -> Iterator[FakeInstall]:
    fake.add(FakeDist("acme-flaky", "1.0", {ENGINE_GROUP: {"flaky": "acme_flaky:Flaky"}},
                      {"acme_flaky": FLAKY_SOURCE}))
    fake.activate()
    try:
        yield fake
    finally:
        module = sys.modules.get("acme_flaky")
        if module is not None:
            module.RELEASE.set()


def test_the_kit_names_an_installed_engine_by_its_entry_point(flaky: FakeInstall) -> None:
    engine = load_engine("flaky", {"mode": "raise"})
    assert engine_name(engine) == "flaky"
    assert engine_name(type(engine)(options={"mode": "raise"})) == "flaky"  # built directly
    problems = check_hook(engine, "select_context", SESSION)
    assert [p.check for p in problems] == ["fence"]
    detail = problems[0].detail
    assert detail.startswith("plugin 'flaky' hook 'select_context' raised RuntimeError:"), detail
    assert "engine_under_test" not in detail and FLAKY_SECRET not in detail
    with pytest.raises(ConformanceFailure) as failure:
        EngineConformance().test_hook(engine, "select_context", SESSION)
    assert str(failure.value).startswith("engine 'flaky' (Flaky) broke 1 host rule(s) in "
                                         "select_context on session 'coding'")


def test_an_engine_that_is_not_installed_is_named_by_its_name_or_class() -> None:
    class Local:
        pass

    class Named:
        name = "my-engine"

    assert engine_name(Local()) == "Local"
    assert engine_name(Named()) == "my-engine"


@pytest.mark.parametrize("hook", ["select_context", "should_compress"])
def test_the_kit_refuses_a_plain_dict_answer(flaky: FakeInstall, hook: str) -> None:
    engine = load_engine("flaky", {"mode": "dict"})
    problems = check_hook(engine, hook, SESSION)
    model = {"select_context": "SelectResult", "should_compress": "CompressDecision"}[hook]
    assert [p.check for p in problems] == ["result_type"], problems
    assert f"returned a plain dict, expected {model} or None" in problems[0].detail
