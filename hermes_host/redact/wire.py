"""Credentials in wire and configuration formats: HTTP headers (``Authorization``, a bare
``Bearer``, ``x-api-key``), cookies, URL userinfo and ``curl -u``, connection strings, docker
``config.json``, XML password elements, the AWS secret key.  The header, scheme, user or
element name stays; the credential goes (R-7.1)."""

from __future__ import annotations

import base64
import re

from hermes_host.redact.values import _B, _NUMBER_RE, _PLACEHOLDER_RE, REDACTED, _looks_random

_AWS_SECRET_RE = re.compile(
    r"(?i)(aws_secret_access_key|aws_secret_key|secret_access_key|secretaccesskey"
    r"|secret access key(?: \[[^\]\n]{0,40}\])?)"  # ``aws configure``'s prompt
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)

_AUTH_SCHEMES = frozenset(
    "bearer basic token digest apikey api-key key sso-key otp bot ssws hmac".split()
)
_AUTH_HEADER_RE = re.compile(
    rf"(?i){_B}((?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?)"
    # RFC 7235: ``<scheme> <credentials>``; any scheme name, or ``key=`` (FCM legacy keys);
    # a header never continues on the next line (its value is not the next line's text)
    r"(?:([a-z][a-z0-9_\-]{1,24})([ \t]+)|(key=))?"
    r"([^\s\"'\\,;]+)"
)


def _sub_auth_header(m: re.Match[str]) -> str:
    scheme, space, value = m.group(2) or m.group(4), m.group(3), m.group(5)
    if REDACTED in value or _PLACEHOLDER_RE.match(value):
        return m.group(0)
    known = scheme is not None and (scheme.lower() in _AUTH_SCHEMES or scheme == "key=")
    if not known and not _looks_random(value, min_len=12):
        return m.group(0)  # prose: "authorization: required for ..."
    return f"{m.group(1)}{scheme or ''}{space or ''}{REDACTED}"


# A bare ``Bearer <token>`` (RFC 6750 §2.1) outside an Authorization header: log lines, prose.
_BEARER_RE = re.compile(rf"{_B}((?i:bearer)\s+)([A-Za-z0-9\-._~+/]{{16,}}=*)")


def _sub_bearer(m: re.Match[str]) -> str:
    if not _looks_random(m.group(2)):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


# Cookies (RFC 6265): the ``Cookie:`` / ``Set-Cookie:`` header line, ``curl -b`` / ``--cookie``,
# and a HAR entry's ``{"name": "cookie", "value": "…"}``.  Each cookie *value* goes; names and
# Set-Cookie attributes (``Path=/``, ``HttpOnly``) stay.
_COOKIE_RE = re.compile(
    rf"(?i)({_B}(?:set-)?cookie\\?[\"']?\s*:\s*\\?[\"']?)([^\n\r\"'\\]+)"
    r"|(\\?\"name\\?\"\s*:\s*\\?\"(?:set-)?cookie\\?\"\s*,\s*\\?\"value\\?\"\s*:\s*\\?\")"
    r"((?:[^\"\\]|\\(?!\"))*)"
)
_CURL_COOKIE_RE = re.compile(rf"({_B}curl\b[^\n]*?\s(?:-b|--cookie)\s*[\"']?)([^\s\"']+)")
_COOKIE_PAIR_RE = re.compile(r"([A-Za-z0-9_.$!#%&*+^`|~\-]+=)([^;,\s]*)")
_COOKIE_ATTRIBUTES = frozenset(
    "path domain expires max-age samesite secure httponly priority partitioned version comment"
    .split()
)


def _sub_cookie(m: re.Match[str]) -> str:
    head = next(h for h in range(1, len(m.groups()), 2) if m.group(h) is not None)

    def pair(p: re.Match[str]) -> str:
        name, val = p.group(1)[:-1], p.group(2)
        if (name.lower() in _COOKIE_ATTRIBUTES or len(val) < 6 or REDACTED in val
                or _PLACEHOLDER_RE.match(val) or _NUMBER_RE.match(val)):
            return p.group(0)
        return f"{p.group(1)}{REDACTED}"

    return m.group(head) + _COOKIE_PAIR_RE.sub(pair, m.group(head + 1))


# Connection strings: Azure ``AccountKey=`` / ``SharedAccessKey=`` (base64), a SAS ``sig=``,
# and docker ``config.json`` ``"auth"`` (base64 of ``user:password``) / identity tokens.
_CONN_KEY_RE = re.compile(
    r"(?i)((?<![A-Za-z0-9])(?:Account|SharedAccess|Primary|Secondary)Key\s*=\s*)"
    r"([A-Za-z0-9+/]{20,}={0,2})"
    r"|([?&]sig=)([A-Za-z0-9%+/=]{20,})"
    r"|((?<=;)\s*PWD\s*=\s*)([^;\s\"']{3,})(?=;|$)"
)
_DOCKER_AUTH_RE = re.compile(
    r"(\\?\"(?:auth|identitytoken|registrytoken)\\?\"\s*:\s*\\?\")([A-Za-z0-9+/=._\-]{8,})(?=\\?\")"
)


def _sub_pair(m: re.Match[str]) -> str:
    """Keep the first non-None group of a (head, value) pair, replace the value."""
    groups = m.groups()
    for i in range(0, len(groups), 2):
        if groups[i] is not None:
            return f"{groups[i]}{REDACTED}"
    return m.group(0)


def _sub_docker_auth(m: re.Match[str]) -> str:
    value = m.group(2)
    if not (_base64_has_colon(value) or _looks_random(value, min_len=12)):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


def _base64_has_colon(value: str) -> bool:
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except ValueError:
        return False


# A key passed under a bare ``key=`` that is a self-identifying token, however short
# (``?key=sk-abc123``): the generic assignment rule needs a secret word in the name.
_KEY_TOKEN_RE = re.compile(
    r"(?i)((?<![A-Za-z0-9_])key\\?[\"']?\s*[=:]\s*\\?[\"']?)((?-i:sk-)[A-Za-z0-9_\-]{8,})"
)

# Passwords in XML: Maven ``<password>…</password>``, NuGet ``<add key="Password" value="…"/>``.
_XML_SECRET_RE = re.compile(
    r"(?i)(<(password|passwd|passphrase|secret|token|apikey|api_key|clientsecret|client_secret"
    r"|privatekey|private_key|accesstoken|access_token)>)([^<\s][^<\n]{2,})(?=</\2>)"
    r"|(<add\s+key=\\?\"(?:cleartext)?password\\?\"\s+value=\\?\")([^\"\\]{3,})(?=\\?\")"
)


def _sub_xml_secret(m: re.Match[str]) -> str:
    head, value = (m.group(1), m.group(3)) if m.group(1) else (m.group(4), m.group(5))
    if REDACTED in value or _PLACEHOLDER_RE.match(value):
        return m.group(0)
    return f"{head}{REDACTED}"


_KEY_HEADER_RE = re.compile(
    rf"(?i){_B}((?:x-api-key|x-goog-api-key|x-auth-token|x-access-token|x-api-token|api-key"
    r"|private-token|x-vault-token"
    # any other vendor's ``X-…-Token`` / ``-Key`` / ``-Secret`` header (Postmark's
    # ``X-Postmark-Server-Token``, Cloudflare's ``X-Auth-Key``, Algolia's ``X-Algolia-API-Key``)
    r"|(?P<generic>x-[a-z0-9\-]{1,40}?-(?:token|key|secret)))"
    r"\\?[\"']?[ \t]*:[ \t]*\\?[\"']?)([^\s\"'\\,;]+)"
)


def _sub_key_header(m: re.Match[str]) -> str:
    if m.string.endswith("://", 0, m.start()):
        return m.group(0)  # ``https://x-access-token:<token>@host``: URL userinfo, later
    value = m.group(3)
    if REDACTED in value or _PLACEHOLDER_RE.match(value) or len(value) < 6:
        return m.group(0)
    if m.group("generic") and not _looks_random(value, min_len=12):
        return m.group(0)  # ``X-Cache-Key: /index.html``: only a key-like value
    return f"{m.group(1)}{REDACTED}"


_URL_USERINFO_RE = re.compile(
    rf"{_B}([a-zA-Z][a-zA-Z0-9+.\-]{{1,20}}://)([^\s:/@\"'<>]*):([^\s@/\"'<>]+)@(?=[^\s@/\"'<>])"
)


def _sub_userinfo(m: re.Match[str]) -> str:
    password = m.group(3)
    if password == REDACTED or _PLACEHOLDER_RE.match(password):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}:{REDACTED}@"


_CURL_USER_RE = re.compile(
    rf"({_B}curl\b[^\n]*?\s(?:-u|--user)\s*[\"']?)([A-Za-z0-9_.@+\-]+):([^\s\"']+)"
    r"(?=[\"']?(?:\s|$|[,}\]]))"  # a shell line, or one inside a JSON string
)


def _sub_curl_user(m: re.Match[str]) -> str:
    if m.group(3) == REDACTED or _PLACEHOLDER_RE.match(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}:{REDACTED}"
