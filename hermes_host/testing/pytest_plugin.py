"""pytest plugin of the conformance kit (entry point ``pytest11: hermes_host``).

Installed with hermes-host, so every engine author already has it.  It is inert unless a
test asks for its fixtures.  It adds:

* ``--hermes-engine NAME`` — the installed engine to test (entry-point name, as in
  ``config.yaml``); the default ``hermes_engine`` fixture loads it the way the host does.
  Run the whole suite against it without writing a test::

      pytest --pyargs hermes_host.testing.suite --hermes-engine NAME

* ``--hermes-transcripts DIR`` — also run every hook on each ``*.jsonl`` transcript in DIR
  (default: ``$HERMES_HOST_TRANSCRIPTS`` when that names an existing folder).
* ``--hermes-seed N`` — seed of the generated sessions (default fixed, so failures reproduce).
* fixtures ``hermes_engine`` (override it to return your instance), ``hermes_session`` and
  ``hermes_hook`` (parametrised: every session × every lifecycle hook).

Subclass :class:`hermes_host.testing.EngineConformance` to get the suite in your own tests.

For store backends (issue 16) it adds the store contract suite's fixtures:

* ``--hermes-store SPEC`` (repeatable) — the backends ``store_factory`` is parametrised
  over: ``sqlite``, an installed scheme whose distribution provides a
  ``hermes_<scheme>_url_factory`` fixture (``postgresql`` does), or a URL template in which
  ``{name}`` becomes a fresh name per test.  Default: ``sqlite`` plus every installed
  backend.  Run the whole contract against your store in one command::

      pytest --pyargs hermes_host.testing.store_suite --hermes-store 'mystore://host/db?ns={name}'

* fixture ``store_factory`` — a :class:`hermes_host.testing.stores.StoreFactory` for a fresh,
  empty store of the backend under test (call it to open the store; call it again for a
  second handle on the same store, as a second process would).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The kit (fence, plugins, generator) is imported only when a test asks for it: this plugin
# loads in every pytest run of an environment that has hermes-host.


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hermes_host", "hermes-host engine conformance kit")
    group.addoption(
        "--hermes-engine",
        metavar="NAME",
        default=None,
        help="installed engine (entry-point name) the hermes_engine fixture loads",
    )
    group.addoption(
        "--hermes-transcripts",
        metavar="DIR",
        default=None,
        help="also run the conformance suite on every *.jsonl transcript in DIR",
    )
    group.addoption(
        "--hermes-store",
        metavar="SPEC",
        action="append",
        default=None,
        help="store backend for the store contract suite: sqlite, an installed scheme, or a "
        "URL template with {name} (repeatable; default: sqlite and every installed backend)",
    )
    group.addoption(
        "--hermes-seed",
        metavar="N",
        type=int,
        default=None,
        help="seed for the generated sessions (default: a fixed seed)",
    )


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("--hermes-transcripts", default=None)
    if folder and not Path(folder).is_dir():
        raise pytest.UsageError(f"--hermes-transcripts: {folder} is not a folder")


def _env_transcripts() -> str | None:
    """``$HERMES_HOST_TRANSCRIPTS`` (the project's convention) when it is a folder; a stale
    value is ignored rather than failing every engine's test run."""
    folder = os.environ.get("HERMES_HOST_TRANSCRIPTS")
    return folder if folder and Path(folder).is_dir() else None


def _sessions(config: pytest.Config) -> list[Any]:
    from hermes_host.testing.generate import DEFAULT_SEED, generated_sessions, transcript_sessions

    cached = getattr(config, "_hermes_sessions", None)
    if cached is not None:
        return list(cached)
    seed = config.getoption("--hermes-seed")
    sessions = generated_sessions(DEFAULT_SEED if seed is None else seed)
    folder = config.getoption("--hermes-transcripts") or _env_transcripts()
    if folder:
        try:
            sessions += transcript_sessions(folder)
        except FileNotFoundError as exc:
            raise pytest.UsageError(str(exc)) from None
    config._hermes_sessions = sessions  # type: ignore[attr-defined]
    return list(sessions)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hermes_store_backend" in metafunc.fixturenames:
        from hermes_host.testing.stores import backend_specs

        specs = backend_specs(metafunc.config.getoption("--hermes-store"))
        metafunc.parametrize("hermes_store_backend", specs, ids=[s.id for s in specs])
    if "hermes_session" in metafunc.fixturenames:
        sessions = _sessions(metafunc.config)
        metafunc.parametrize("hermes_session", sessions, ids=[s.id for s in sessions])
    if "hermes_hook" in metafunc.fixturenames:
        from hermes_host.hookspecs import LIFECYCLE_HOOKS

        metafunc.parametrize("hermes_hook", list(LIFECYCLE_HOOKS))


@pytest.fixture
def hermes_engine(request: pytest.FixtureRequest) -> object:
    """The engine under test: ``--hermes-engine NAME`` loaded as the host loads it.

    Override this fixture (in your test class, module or conftest) to return an instance.
    """
    name = request.config.getoption("--hermes-engine")
    if not name:
        pytest.skip(
            "no engine to test: pass --hermes-engine NAME or override the hermes_engine fixture"
        )
    from hermes_host.plugins import PluginError
    from hermes_host.testing.conformance import load_engine

    try:
        return load_engine(name)
    except PluginError as exc:
        raise pytest.UsageError(f"--hermes-engine {name}: {exc}") from None


@pytest.fixture
def store_factory(
    hermes_store_backend: Any, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Any]:
    """A fresh, empty store of the backend under test (issue 16's contract suite)."""
    from hermes_host.testing.stores import StoreFactory

    factory = StoreFactory.for_backend(hermes_store_backend, request, tmp_path)
    yield factory
    factory.close_all()
