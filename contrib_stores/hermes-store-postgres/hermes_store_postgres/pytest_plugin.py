"""pytest plugin of hermes-store-postgres (entry point ``pytest11``): the session-scoped
``hermes_postgres`` fixture — a real PostgreSQL server for the tests
(:class:`hermes_store_postgres.testing.TestServer`), started once and stopped at the end —
and ``hermes_postgresql_url_factory``, which the store contract suite of hermes-host uses to
give each test a fresh store (a new schema owned by a non-superuser role)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from hermes_store_postgres.testing import ServerUnavailable, TestServer


@pytest.fixture(scope="session")
def hermes_postgres() -> Iterator[TestServer]:
    """A running PostgreSQL server (or ``$HERMES_HOST_TEST_POSTGRES_URL``'s)."""
    try:
        server = TestServer.start()
    except ServerUnavailable as exc:
        pytest.skip(f"PostgreSQL tests skipped: no server could be started ({exc})")
    try:
        yield server
    finally:
        server.drop()
        server.stop()


@pytest.fixture(scope="session")
def hermes_postgresql_url_factory(hermes_postgres: TestServer) -> Callable[[], str]:
    """``() -> url`` of a fresh, empty PostgreSQL store."""
    return hermes_postgres.fresh_url
