"""What a ``postgresql://`` store URL says: the libpq connection, plus hermes-host's own
query options, which are taken out before libpq sees the URL.

    postgresql://USER:PASSWORD@HOST:PORT/DATABASE?schema=hermes&pool_max=10

* ``schema`` — the schema holding the store's tables (default ``hermes``), so several
  deployments can share one database.  Lower-case letters, digits and ``_``.
* ``pool_min`` / ``pool_max`` — connections the pool keeps open / may open (default 1 / 10).
* ``pool_timeout`` — seconds a store call waits for a pooled connection before it opens a
  direct one (default 1).
* ``lock_timeout`` — seconds a statement may wait for a row or table lock another client
  holds (default 10; ``0`` = no limit).  Sent as ``-c lock_timeout=…`` *before* the URL's own
  ``options``, so ``options=-c%20lock_timeout%3D…`` overrides it too.
* ``statement_timeout`` — seconds one statement may run (default 30; ``0`` = the store sets
  none, and a value set on the server, database or role applies).  Sent as
  ``-c statement_timeout=…`` before the URL's own ``options`` (which win).  The client also
  gives the server this long plus :data:`ANSWER_GRACE` to answer a statement: a server that
  stops answering mid-statement (stopped, hung, network dropping packets) cannot end the
  statement itself, so the store closes the connection and says so.  Bulk work a user starts
  (an append of many messages, ``store migrate``, ``index_pending``) runs without either
  (:func:`hermes_store_postgres.bounded.bulk`).  A ``statement_timeout`` in ``options`` is
  read by PostgreSQL's own grammar (:func:`setting_seconds`).

Every other option (``sslmode``, ``connect_timeout``, ``options``, ``application_name`` …) is
libpq's and reaches libpq exactly as written in the URL: the query string is split on ``&``
and the store's options removed, nothing is decoded and re-encoded (``%20`` stays ``%20``; a
``+`` stays a ``+``, as libpq and psql read it).  ``connect_timeout`` defaults to 3 seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from psycopg.conninfo import conninfo_to_dict

from hermes_host.store import StoreError
from hermes_host.store.registry import redact_url

__all__ = [
    "ANSWER_GRACE",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_POOL_TIMEOUT",
    "DEFAULT_SCHEMA",
    "DEFAULT_STATEMENT_TIMEOUT",
    "StoreSettings",
    "parse_url",
    "server_setting",
    "setting_seconds",
]

DEFAULT_SCHEMA = "hermes"
DEFAULT_POOL_TIMEOUT = 1.0
"""Seconds a call waits for a pooled connection; then one direct connection is tried."""
DEFAULT_CONNECT_TIMEOUT = 3
"""libpq's ``connect_timeout`` unless the URL sets one (libpq's minimum is 2)."""
DEFAULT_LOCK_TIMEOUT = 10.0
"""Seconds a statement waits for a lock another client holds (``lock_timeout``)."""
DEFAULT_STATEMENT_TIMEOUT = 30.0
"""Seconds one statement may run (``statement_timeout``)."""
ANSWER_GRACE = 5.0
"""Seconds the client waits for an answer beyond the statement timeout in effect: the
server's own cancellation (an error the store reports as a statement timeout) comes first
when the server runs; past this, the server is not answering at all."""
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_OURS = ("schema", "pool_min", "pool_max", "pool_timeout", "lock_timeout",
         "statement_timeout")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class StoreSettings:
    conninfo: str
    """The URL as libpq gets it (hermes-host's options removed, the rest as written)."""
    shown: str
    """The URL as messages show it (password replaced by ``***``)."""
    schema: str
    pool_min: int = 1
    pool_max: int = 10
    pool_timeout: float = DEFAULT_POOL_TIMEOUT
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT
    """``?statement_timeout=`` (seconds; 0: the store sets none)."""
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
    """libpq's ``connect_timeout`` in effect (the URL's, else the default)."""
    server: str = ""
    """``host:port`` (comma-separated when the URL names several) — what messages name."""
    options: str = ""
    """The URL's own libpq ``options`` (decoded), e.g. ``-c statement_timeout=500``."""
    password: str | None = None
    """Kept only to scrub it from driver error text."""

    @property
    def statement_limit(self) -> float | None:
        """Seconds a statement may run as the server is told: the URL ``options``' own
        ``statement_timeout`` if it sets one (``None`` when it cannot be read), else
        ``?statement_timeout=``; ``0``: none the store knows of."""
        own = server_setting(self.options, "statement_timeout")
        return self.statement_timeout if own is None else setting_seconds(own)

    @property
    def answer_within(self) -> float | None:
        """Seconds the client waits for the server's answer to one statement:
        :attr:`statement_limit` + :data:`ANSWER_GRACE`; ``None`` (no limit) when the
        store knows of no statement timeout."""
        limit = self.statement_limit
        return limit + ANSWER_GRACE if limit else None


def _number(name: str, text: str, low: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= low:
        raise StoreError(f"store URL option {name}={text!r}: expected a number >= {low:g}")
    return value


def _server(params: dict[str, str]) -> str:
    """``host:port`` of every host libpq would try (a socket directory is shown as is)."""
    hosts = (params.get("host") or params.get("hostaddr") or "localhost").split(",")
    ports = (params.get("port") or "").split(",")
    shown = []
    for n, host in enumerate(hosts):
        port = ports[n] if n < len(ports) else ports[-1]
        shown.append(f"{host or 'localhost'}:{port or '5432'}")
    return ",".join(shown)


def _option_words(options: str) -> list[str]:
    """A libpq ``options`` string split as the server splits it (``pg_split_opts``): at
    whitespace, a backslash taking the next character literally (``5\\ min``)."""
    words: list[str] = []
    word: list[str] = []
    escaped = started = False
    for char in options:
        if escaped:
            word.append(char)
            escaped = False
        elif char == "\\":
            escaped = started = True
        elif char in " \t\n\r\f\v":
            if started:
                words.append("".join(word))
                word, started = [], False
            continue
        else:
            word.append(char)
        started = True
    if started:
        words.append("".join(word))
    return words


def server_setting(options: str, name: str) -> str | None:
    """The value of the last ``-c NAME=VALUE`` (``-cNAME=VALUE``, ``--NAME=VALUE``) in a
    libpq ``options`` string, read as the server reads it: words split at unescaped
    whitespace, the name case-insensitive with ``-`` for ``_``."""
    found = None
    words = _option_words(options)
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word == "-c" and at < len(words):
            setting = words[at]
            at += 1
        elif word.startswith("-c"):
            setting = word[2:]
        elif word.startswith("--"):
            setting = word[2:]
        else:
            continue
        key, equals, value = setting.partition("=")
        if equals and key.replace("-", "_").lower() == name:
            found = value
    return found


_INTEGER = re.compile(r"[ \t\n\r\f\v]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_REAL = re.compile(r"[ \t\n\r\f\v]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def setting_seconds(value: str) -> float | None:
    """A PostgreSQL time setting in milliseconds (``statement_timeout``, ``lock_timeout``)
    read by the server's own grammar (``parse_int`` in ``guc.c``), in seconds: a number —
    decimal, ``0x`` hexadecimal or ``0`` octal, or with a fraction or exponent (``1.5``,
    ``1e3``) — then, after optional whitespace, an optional unit ``us``, ``ms``, ``s``,
    ``min``, ``h`` or ``d`` (case-sensitive; none: milliseconds), rounded to whole
    milliseconds as the server rounds.  ``None`` when the server would refuse it."""
    whole = _INTEGER.match(value)
    number: float
    if whole and value[whole.end():whole.end() + 1] not in (".", "e", "E"):
        digits = whole[2]
        base = 16 if digits[:2] in ("0x", "0X") else 8 if len(digits) > 1 and \
            digits[0] == "0" else 10
        number = int(digits, base) * (-1 if whole[1] == "-" else 1)
        end = whole.end()
    else:
        real = _REAL.match(value)
        if not real:
            return None
        number, end = float(real[0]), real.end()
    unit = value[end:].strip(" \t\n\r\f\v") or "ms"
    if unit not in _UNITS:
        return None
    milliseconds = round(number * _UNITS[unit] * 1000)
    return milliseconds / 1000 if 0 <= milliseconds <= 2**31 - 1 else None


def parse_url(url: str) -> StoreSettings:
    """Split ``url`` into the libpq URL and the store's options (:class:`StoreError` for a
    bad option; the message shows the URL without its password)."""
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise StoreError(f"{shown}: not a postgresql:// URL")
    ours: dict[str, str] = {}
    rest: list[str] = []
    for piece in parts.query.split("&"):
        if not piece:
            continue
        key, _, value = piece.partition("=")
        if unquote(key) in _OURS:
            ours[unquote(key)] = unquote(value)
        else:
            rest.append(piece)  # libpq's: passed on exactly as written
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
    timeout = _number("pool_timeout", ours.get("pool_timeout", f"{DEFAULT_POOL_TIMEOUT:g}"),
                      0.1)
    lock_timeout = _number(
        "lock_timeout", ours.get("lock_timeout", f"{DEFAULT_LOCK_TIMEOUT:g}"), 0)
    statement_timeout = _number(
        "statement_timeout",
        ours.get("statement_timeout", f"{DEFAULT_STATEMENT_TIMEOUT:g}"), 0)
    conninfo = urlunsplit(
        ("postgresql", parts.netloc, parts.path, "&".join(rest), parts.fragment)
    )
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
    except Exception as exc:  # libpq's own parser refused it: say so, without the password
        text = " ".join(str(exc).split())
        if parts.password:
            text = text.replace(parts.password, "***")
        raise StoreError(f"{shown}: libpq cannot read this URL ({text})") from None
    connect_timeout = params.get("connect_timeout") or str(DEFAULT_CONNECT_TIMEOUT)
    try:
        connect = int(float(connect_timeout))
    except ValueError:
        raise StoreError(
            f"{shown}: connect_timeout={connect_timeout!r}: expected whole seconds"
        ) from None
    password = params.get("password") or parts.password or None
    return StoreSettings(
        conninfo=conninfo,
        shown=redact_url(urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, ""))),
        schema=schema,
        pool_min=pool_min,
        pool_max=pool_max,
        pool_timeout=timeout,
        lock_timeout=lock_timeout,
        statement_timeout=statement_timeout,
        connect_timeout=connect,
        server=_server(params),
        options=str(params.get("options") or ""),
        password=password,
    )
