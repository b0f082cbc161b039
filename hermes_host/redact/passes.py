"""The pass over a text: every pattern family in order (structured ones first, so later
passes see ``[REDACTED]``), each behind a cheap gate on the lowered text, the
case-insensitive assignment patterns matched only where their gate hit, and the ~70 token
patterns skipped together by one trigger scan on short texts (R-7.1)."""

from __future__ import annotations

import re
from collections.abc import Callable

from hermes_host.redact.assignments import (
    _ASSIGN_COLON_RE,
    _ASSIGN_EQ_RE,
    _ASSIGN_JSON_RE,
    _FLAG_RE,
    _PROSE_RE,
    _SHORT_P_RE,
    _sub_assign_colon,
    _sub_assign_eq,
    _sub_assign_json,
    _sub_flag,
    _sub_prose,
    _sub_short_p,
)
from hermes_host.redact.values import (
    REDACTED,
    _Sub,
)
from hermes_host.redact.vendor_tokens import (
    _B64_PEM_RE,
    _PEM_RE,
    _TOKEN_PATTERNS,
    _sub_b64_pem,
    _sub_pem,
    _token_sub,
)
from hermes_host.redact.wire import (
    _AUTH_HEADER_RE,
    _AWS_SECRET_RE,
    _BEARER_RE,
    _CONN_KEY_RE,
    _COOKIE_RE,
    _CURL_COOKIE_RE,
    _CURL_USER_RE,
    _DOCKER_AUTH_RE,
    _KEY_HEADER_RE,
    _KEY_TOKEN_RE,
    _URL_USERINFO_RE,
    _XML_SECRET_RE,
    _sub_auth_header,
    _sub_bearer,
    _sub_cookie,
    _sub_curl_user,
    _sub_docker_auth,
    _sub_key_header,
    _sub_pair,
    _sub_userinfo,
    _sub_xml_secret,
)

_Gate = Callable[[str, str], bool]


class _Hit(int):
    """A position found by :class:`_Literals` (quacks like a match: ``.start()``)."""

    def start(self) -> int:
        return int(self)


class _Literals:
    """A finder over literal words of the lowered text: C-speed ``str.find`` loops instead of
    a regex scan, for gates whose words are common (``token``) but whose pattern is rare."""

    def __init__(self, *words: str) -> None:
        self.words = words

    def finditer(self, lower: str) -> list[_Hit]:
        hits: list[_Hit] = []
        for word in self.words:
            i = lower.find(word)
            while i >= 0:
                hits.append(_Hit(i))
                i = lower.find(word, i + 1)
        return sorted(hits)


def _here(text: str, at: int) -> int:
    return at


_KW = r"(?:key|secret|token|passw|passphrase|credential|_pwd|_pass)[a-z0-9_.\-]*"
_EQ_GATE = re.compile(_KW + r"\\?[\"']?\s*=")
_COLON_GATE = re.compile(_KW + r"\\?[\"']?\s*:")
_HEADER_WORDS = ("api-key", "-token", "-key", "-secret", "authorization")
_FLAG_WORDS = tuple(f"--{w}" for w in ("password", "passwd", "token", "api-key", "apikey",
                                       "secret", "access-token", "auth-token", "client-secret"))
_CONN_WORDS = ("accountkey", "sharedaccesskey", "primarykey", "secondarykey", "sig=", ";pwd",
               "; pwd")
_XML_NAMES = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api_key",
              "clientsecret", "client_secret", "privatekey", "private_key", "accesstoken",
              "access_token")
_XML_WORDS = (*(f"<{n}>" for n in _XML_NAMES), "<add key=")
_PROSE_FINDER = _Literals("passw", "passphrase", "passcode", "api key", "api_key", "api-key",
                          "apikey", "secret", "token")
_SHORT_P_WORDS = ("mysql", "mariadb", "sshpass", " login", "machine ")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_start(text: str, at: int) -> int:
    """Where the assignment name containing position ``at`` begins (after a JSON escape)."""
    start = at
    floor = max(0, at - 64)
    while start > floor and text[start - 1] in _NAME_CHARS:
        start -= 1
    if start >= 1 and text[start - 1] == "\\" and text[start] in "nrt":
        start += 1  # ``\nDB_PASSWORD=...`` inside a JSON string
    return start


def _quote_start(text: str, at: int) -> int:
    start = _name_start(text, at)
    if start >= 1 and text[start - 1] == '"':
        return start - 2 if start >= 2 and text[start - 2] == "\\" else start - 1
    return -1


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


_Anchor = Callable[[str, int], int]




def _always(text: str, lower: str) -> bool:
    return True


def _literal_gate(literals: tuple[str, ...] | re.Pattern[str]) -> _Gate:
    """A gate that passes when one of ``literals`` occurs (a C-speed substring test), or when
    a literal-first regex matches (fast to search, unlike a pattern starting with a class)."""
    if isinstance(literals, re.Pattern):
        search = literals.search
        return lambda text, lower: search(text) is not None

    if len(literals) == 1:
        (only,) = literals
        return lambda text, lower: only in text

    def gate(text: str, lower: str) -> bool:
        return any(lit in text for lit in literals)

    return gate


# (pattern, replacement, gate on (text, lowered text), anchor): the gates are cheap scans of
# the lowered text, so most messages skip the case-insensitive patterns entirely.  With an
# anchor, the pattern is only *matched* where its gate hits (anchor = where a match would
# start) instead of being searched through the whole text: the assignment patterns are
# case-insensitive with a lazy name prefix, which is slow to scan for.
_Finder = re.Pattern[str] | _Literals
_Pass = tuple[re.Pattern[str], _Sub, _Gate, tuple[_Finder, _Anchor] | None]
_TOKEN_PASSES: list[_Pass] = [
    (p, _token_sub(r), _literal_gate(lits), None) for p, r, lits in _TOKEN_PATTERNS
]
# One scan says whether any token pattern can match at all: most texts contain none of the
# prefixes, and skipping ~70 gates one by one costs more than the scan (short messages).
_TOKEN_TRIGGER = re.compile("|".join(
    lits.pattern if isinstance(lits, re.Pattern) else "|".join(map(re.escape, lits))
    for _, _, lits in _TOKEN_PATTERNS
))
_TRIGGER_MAX = 2048
_TOKENS = object()  # where the token passes run, in _PASSES
_PASSES: list[_Pass | object] = [
    (_PEM_RE, _sub_pem, lambda t, low: "PRIVATE KEY" in t, None),
    (_B64_PEM_RE, _sub_b64_pem, lambda t, low: "LS0tLS1CRUdJTi" in t, None),
    (_AUTH_HEADER_RE, _sub_auth_header, lambda t, low: "authorization" in low, None),
    (_KEY_HEADER_RE, _sub_key_header, lambda t, low: any(w in low for w in _HEADER_WORDS),
     None),
    (_URL_USERINFO_RE, _sub_userinfo, lambda t, low: "://" in t, None),
    (_CURL_USER_RE, _sub_curl_user, lambda t, low: "curl" in low, None),
    (_COOKIE_RE, _sub_cookie, lambda t, low: "cookie" in low, None),
    (_CURL_COOKIE_RE, _sub_cookie, lambda t, low: " -b" in t or "--cookie" in low, None),
    (_CONN_KEY_RE, _sub_pair, lambda t, low: any(w in low for w in _CONN_WORDS), None),
    (_DOCKER_AUTH_RE, _sub_docker_auth,
     lambda t, low: any(w in t for w in ('"auth', '"identitytoken', '"registrytoken')), None),
    (_XML_SECRET_RE, _sub_xml_secret, _always, (_Literals(*_XML_WORDS), _here)),
    (_KEY_TOKEN_RE, _sub_pair, lambda t, low: "sk-" in t, None),
    _TOKENS,
    (
        _AWS_SECRET_RE,
        lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}",
        lambda t, low: "secret" in low,
        None,
    ),
    (_FLAG_RE, _sub_flag, lambda t, low: any(w in low for w in _FLAG_WORDS), None),
    (_SHORT_P_RE, _sub_short_p, lambda t, low: any(w in low for w in _SHORT_P_WORDS), None),
    (_BEARER_RE, _sub_bearer, lambda t, low: "bearer" in low, None),
    (_ASSIGN_JSON_RE, _sub_assign_json, _always, (_COLON_GATE, _quote_start)),
    (_ASSIGN_EQ_RE, _sub_assign_eq, _always, (_EQ_GATE, _name_start)),
    (_ASSIGN_COLON_RE, _sub_assign_colon, _always, (_COLON_GATE, _line_start)),
    (_PROSE_RE, _sub_prose, _always, (_PROSE_FINDER, _here)),
]


def _anchored_subn(
    pattern: re.Pattern[str], repl: _Sub, text: str, lower: str,
    finder: _Finder, anchor: _Anchor,
) -> tuple[str, int]:
    out: list[str] = []
    last = 0
    n = 0
    tried: set[int] = set()
    for hit in finder.finditer(lower):
        start = anchor(text, hit.start())
        if start < last or start in tried:
            continue
        tried.add(start)
        m = pattern.match(text, start)
        if m is None or m.end() <= hit.start():
            continue
        out.append(text[last:m.start()])
        out.append(repl(m))
        last = m.end()
        n += 1
    if not n:
        return text, 0
    out.append(text[last:])
    return "".join(out), n


# Every gate of _PASSES needs one of these words in the lowered text (the anchored finders'
# words and _EQ_GATE/_COLON_GATE's keywords included), and every token pass needs a hit of
# _TOKEN_TRIGGER: a text with neither cannot change, and two scans say so (most texts of a
# session are such texts).  A new pass must add its gate's words here;
# tests/test_redact_prefilter.py checks that the prefilter never skips a text the passes
# change, on every documented form and the generated corpus.
_PREFILTER_WORDS = (
    "key", "token", "secret", "passw", "passphrase", "passcode", "_pwd", "_pass",
    "credential", "sig=", ";pwd", "; pwd", "authorization", "://", "curl", "cookie", " -b",
    '"auth', "sk-", "mysql", "mariadb", "sshpass", " login", "machine ", "bearer",
    "ls0tls1crudjti",
)
_PREFILTER = re.compile("|".join(map(re.escape, _PREFILTER_WORDS)))


def might_change(text: str, lower: str | None = None) -> bool:
    """False when no pass can change ``text`` (``lower`` is ``text.lower()`` if known)."""
    if _PREFILTER.search(text.lower() if lower is None else lower) is not None:
        return True
    return _TOKEN_TRIGGER.search(text) is not None


def redact_counted(text: str) -> tuple[str, int]:
    """Redact ``text`` and say how many secrets were replaced."""
    if not text:
        return text, 0
    lower = text.lower()
    if not might_change(text, lower):
        return text, 0
    return _all_passes(text, lower)


def _all_passes(text: str, lower: str) -> tuple[str, int]:
    """Every pass over ``text``, without the prefilter (its tests compare against this)."""
    total = 0
    for entry in _PASSES:
        if entry is _TOKENS:
            # the trigger scan beats ~70 gates on short texts; long ones take the C-speed
            # substring gates one by one
            if len(text) < _TRIGGER_MAX and _TOKEN_TRIGGER.search(text) is None:
                continue
            passes: list[_Pass] = _TOKEN_PASSES
        else:
            passes = [entry]  # type: ignore[list-item]
        for pattern, repl, gate, anchored in passes:
            if not gate(text, lower):
                continue
            if anchored is not None and len(lower) == len(text):
                text, n = _anchored_subn(pattern, repl, text, lower, *anchored)
            else:
                text, n = pattern.subn(repl, text)
            if n:
                total += n
                lower = text.lower()
    if total:
        # subn counts matches that a callback left unchanged; count real replacements.
        return text, text.count(REDACTED)
    return text, 0
