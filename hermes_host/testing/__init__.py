"""Test helpers for hermes-host and for engine authors (loopback fake Anthropic and
OpenAI-compatible servers, secrets corpus)."""

# The engine conformance kit, also a pytest plugin (hermes_host.testing.pytest_plugin):
#
#     from hermes_host.testing import EngineConformance
#
#     class TestMyEngine(EngineConformance):
#         @pytest.fixture
#         def hermes_engine(self):
#             return MyEngine()


from __future__ import annotations

from typing import Any

_CONFORMANCE = (
    "CHECKS",
    "ConformanceFailure",
    "EngineConformance",
    "KitHistory",
    "Problem",
    "build_request",
    "check_hook",
    "engine_name",
    "load_engine",
)
_GENERATE = ("Session", "generated_sessions", "transcript_sessions")


def __getattr__(name: str) -> Any:
    # Imported lazily so that `import hermes_host.testing.<helper>` stays cheap.
    if name in _CONFORMANCE:
        from hermes_host.testing import conformance

        return getattr(conformance, name)
    if name in _GENERATE:
        from hermes_host.testing import generate

        return getattr(generate, name)
    raise AttributeError(f"module 'hermes_host.testing' has no attribute {name!r}")
