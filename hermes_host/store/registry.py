"""Store backends are plugins (issue 16): a URL scheme names a :class:`StateStore` class.

A distribution adds a backend with an entry point in the ``hermes_host.stores`` group whose
name is the URL scheme and whose value is the store class::

    [project.entry-points."hermes_host.stores"]
    postgresql = "hermes_store_postgres:PostgresStore"

The class has a classmethod ``from_url(url, *, lease_ttl)`` returning an open store.  SQLite
is built in (``sqlite:///path`` or a plain file path) and the default.  URLs may carry a
password, so this module never lets one reach a message: :func:`redact_url` is what every
error, listing and log line shows.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import re
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any, Protocol

from hermes_host.store.base import StateStore, StoreError

__all__ = [
    "ENTRY_POINT_GROUP",
    "StoreBackend",
    "StoreClass",
    "installed_stores",
    "load_store_class",
    "redact_url",
    "url_scheme",
]

ENTRY_POINT_GROUP = "hermes_host.stores"
_BUILT_IN = {"sqlite": "hermes_host.store.sqlite:SQLiteStore"}
_SHIPS_SEPARATELY = {"postgresql": "hermes-store-postgres", "postgres": "hermes-store-postgres"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*):[^/?#@]*@")
_QUERY_SECRET = re.compile(r"(?i)([?&](?:password|passwd|pwd|sslpassword)=)[^&#]*")


class StoreClass(Protocol):
    """What a ``hermes_host.stores`` entry point names."""

    @classmethod
    def from_url(cls, url: str, *, lease_ttl: float) -> StateStore: ...


@dataclass(frozen=True)
class StoreBackend:
    """One installed backend, as ``engines list`` and ``doctor`` show it."""

    scheme: str
    target: str
    """``module:Class`` the scheme resolves to."""
    distribution: str | None
    """The distribution that registered it (``None`` for the built-in SQLite fallback)."""
    version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "target": self.target,
                "distribution": self.distribution, "version": self.version}


def url_scheme(url: str) -> str | None:
    """The scheme of ``scheme://…`` (lower-cased), or ``None`` for a plain path."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def redact_url(url: str | os.PathLike[str]) -> str:
    """``url`` with any password (``user:secret@`` or ``?password=``) replaced by ``***``."""
    text = os.fspath(url)
    text = _PASSWORD.sub(r"\1:***@", text)
    return _QUERY_SECRET.sub(r"\1***", text)


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name.lower(), ep)
    return found


def installed_stores() -> list[StoreBackend]:
    """Every URL scheme this environment can open, sorted by scheme."""
    backends = {
        scheme: StoreBackend(scheme, ep.value, ep.dist.name if ep.dist else None,
                             ep.dist.version if ep.dist else None)
        for scheme, ep in _entry_points().items()
    }
    for scheme, target in _BUILT_IN.items():
        backends.setdefault(scheme, StoreBackend(scheme, target, None))
    return [backends[s] for s in sorted(backends)]


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def load_store_class(url: str) -> Any:
    """The store class for ``url``'s scheme.  Raises :class:`StoreError` naming the
    distribution to install (a known scheme shipped separately) or the schemes that are
    installed, with a did-you-mean for a near miss."""
    scheme = url_scheme(url) or "sqlite"
    eps = _entry_points()
    if scheme in eps:
        try:
            return eps[scheme].load()
        except Exception as exc:  # a broken plugin says so instead of a traceback
            dist = eps[scheme].dist
            raise StoreError(
                f"the store backend for {scheme}:// ({eps[scheme].value}"
                f"{', from ' + dist.name if dist else ''}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    if scheme in _BUILT_IN:
        return _import(_BUILT_IN[scheme])
    known = sorted({b.scheme for b in installed_stores()})
    if scheme in _SHIPS_SEPARATELY:
        needed = _SHIPS_SEPARATELY[scheme]
        raise StoreError(
            f"store URL scheme {scheme}:// needs the {needed} distribution, which is not "
            f"installed: install {needed} (pip install {needed}); installed schemes: "
            + ", ".join(f"{s}://" for s in known)
        )
    close = difflib.get_close_matches(scheme, [*known, *_SHIPS_SEPARATELY], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}://?" if close else ""
    raise StoreError(  # the URL itself is not repeated: it may carry a password
        f"unknown store URL scheme {scheme}://{hint} installed schemes: "
        + ", ".join(f"{s}://" for s in known)
        + " (a plain file path is SQLite)"
    )
