"""Fixtures of hermes-store-postgres's own tests (the server comes from its pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hermes_store_postgres import PostgresStore
from hermes_store_postgres.testing import TestServer


@pytest.fixture
def pg_url(hermes_postgres: TestServer) -> str:
    """A fresh, empty store's URL (its own schema, owned by the non-superuser role)."""
    return hermes_postgres.fresh_url()


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()
