"""What a ``postgresql://`` store URL says: the libpq connection, plus hermes-host's own
query options, which are taken out before libpq sees the URL.

    postgresql://USER:PASSWORD@HOST:PORT/DATABASE?schema=hermes&pool_max=10

* ``schema`` — the schema holding the store's tables (default ``hermes``), so several
  deployments can share one database.  Lower-case letters, digits and ``_``.
* ``pool_min`` / ``pool_max`` — connections the pool keeps open / may open (default 1 / 10).
* ``pool_timeout`` — seconds to wait for a free connection (default 30).

Every other option (``sslmode``, ``connect_timeout``, ``options``, ``application_name`` …) is
libpq's and passes through unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from hermes_host.store import StoreError
from hermes_host.store.registry import redact_url

__all__ = ["DEFAULT_SCHEMA", "StoreSettings", "parse_url"]

DEFAULT_SCHEMA = "hermes"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_OURS = ("schema", "pool_min", "pool_max", "pool_timeout")


@dataclass(frozen=True)
class StoreSettings:
    conninfo: str
    """The URL as libpq gets it (hermes-host's options removed)."""
    shown: str
    """The URL as messages show it (password replaced by ``***``)."""
    schema: str
    pool_min: int = 1
    pool_max: int = 10
    pool_timeout: float = 30.0
    password: str | None = None
    """Kept only to scrub it from driver error text."""


def _number(name: str, text: str, low: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= low:
        raise StoreError(f"store URL option {name}={text!r}: expected a number >= {low:g}")
    return value


def parse_url(url: str) -> StoreSettings:
    """Split ``url`` into the libpq URL and the store's options (:class:`StoreError` for a
    bad option; the message shows the URL without its password)."""
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise StoreError(f"{shown}: not a postgresql:// URL")
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in _OURS}
    schema = ours.get("schema", DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.match(schema):
        raise StoreError(
            f"{shown}: schema={schema!r} is not a plain schema name (use lower-case letters, "
            "digits and _, starting with a letter or _)"
        )
    pool_min = int(_number("pool_min", ours.get("pool_min", "1"), 0))
    pool_max = int(_number("pool_max", ours.get("pool_max", "10"), 1))
    if pool_max < max(pool_min, 1):
        raise StoreError(f"{shown}: pool_max ({pool_max}) is below pool_min ({pool_min})")
    timeout = _number("pool_timeout", ours.get("pool_timeout", "30"), 0.1)
    rest = [(k, v) for k, v in query if k not in _OURS]
    conninfo = urlunsplit(
        ("postgresql", parts.netloc, parts.path, urlencode(rest), parts.fragment)
    )
    password = parts.password or dict(rest).get("password") or None
    return StoreSettings(
        conninfo=conninfo,
        shown=redact_url(urlunsplit(
            ("postgresql", parts.netloc, parts.path, urlencode(query), "")
        )),
        schema=schema,
        pool_min=pool_min,
        pool_max=pool_max,
        pool_timeout=timeout,
        password=password,
    )
