"""The store contract suite's plumbing (issue 16): which backends to test, and a fresh,
empty store of one for each test.

A backend *spec* is ``sqlite`` (a file in the test's own directory), the URL scheme of an
installed backend whose distribution provides a ``hermes_<scheme>_url_factory`` fixture
(hermes-store-postgres does: it starts a real server), or a URL template in which ``{name}``
is replaced by a fresh name per test (a third-party store under test).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hermes_host.store import DEFAULT_LEASE_TTL, StateStore, open_store
from hermes_host.store.registry import installed_stores, url_scheme

__all__ = ["BackendSpec", "StoreFactory", "backend_specs"]

_ALIASES = {"postgres": "postgresql"}


@dataclass(frozen=True)
class BackendSpec:
    id: str
    """The test id part (``sqlite``, ``postgresql``, a template's scheme)."""
    scheme: str
    template: str | None = None


def backend_specs(given: list[str] | None) -> list[BackendSpec]:
    """The specs of ``--hermes-store`` (or the default: sqlite and every installed backend,
    each once)."""
    if not given:
        schemes = {_ALIASES.get(b.scheme, b.scheme) for b in installed_stores()}
        given = ["sqlite", *sorted(schemes - {"sqlite"})]
    specs = []
    for spec in given:
        if "://" in spec:
            scheme = url_scheme(spec) or "store"
            if "{name}" not in spec:
                raise pytest.UsageError(
                    f"--hermes-store {spec}: a URL template needs {{name}} (replaced by a fresh "
                    "name per test, so every test starts from an empty store)"
                )
            specs.append(BackendSpec(scheme, scheme, spec))
        else:
            scheme = _ALIASES.get(spec.lower(), spec.lower())
            specs.append(BackendSpec(scheme, scheme))
    return specs


@dataclass
class StoreFactory:
    """A fresh store location for one test; calling it opens a store there."""

    backend: BackendSpec
    url: str
    """Where the store lives (a file path for SQLite): give it to another process."""
    opened: list[StateStore] = field(default_factory=list)

    @classmethod
    def for_backend(
        cls, backend: BackendSpec, request: pytest.FixtureRequest, tmp_path: Path
    ) -> StoreFactory:
        if backend.template is not None:
            return cls(backend, backend.template.format(name=f"t_{secrets.token_hex(5)}"))
        if backend.scheme == "sqlite":
            return cls(backend, str(tmp_path / "state.db"))
        fixture = f"hermes_{backend.scheme}_url_factory"
        try:
            make_url = request.getfixturevalue(fixture)
        except pytest.FixtureLookupError:
            pytest.skip(
                f"{backend.scheme} store tests skipped: no {fixture} fixture (install the "
                f"distribution of the {backend.scheme}:// store, or pass --hermes-store with "
                "a URL template)"
            )
        return cls(backend, str(make_url()))

    def __call__(self, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> StateStore:
        store = open_store(self.url, lease_ttl=lease_ttl)
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self.opened:
            try:
                store.close()
            except Exception:
                pass
        self.opened.clear()

    def details(self) -> dict[str, Any]:
        return {"backend": self.backend.id, "url": self.url}
