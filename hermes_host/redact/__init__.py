"""Credential redaction: the one place that knows what a secret looks like (R-7.1, R-6.11).

Everything that may leave the process or be persisted as prose — a summariser prompt, a
summary, a log line, an error message — passes through :func:`redact` first.  A secret value
is replaced by :data:`REDACTED`; the *name* it was assigned to (``DB_PASSWORD=``,
``"api_key":``, ``Authorization: Bearer``) is kept, so a summary can still say that
credentials were present without carrying them.

Rules, chosen so ordinary text survives (tested on the real transcripts):

* Self-identifying tokens (``sk-ant-``, ``sk-proj-``, ``sk-``, ``ghp_``/``gho_``/``ghs_``/
  ``ghu_``, ``github_pat_``, ``AKIA``/``ASIA``, ``AIza``, ``ya29.``, ``xoxb-``, ``hf_``,
  ``glpat-``, ``sk_live_``/``rk_live_``, SendGrid ``SG.``, ``dop_v1_``, Discord and Telegram
  bot tokens, Mailgun, Shopify, Perplexity, fal, Vault, … — docs/redaction.md lists them all),
  JWTs and PEM private-key blocks are removed whole, wherever they are.  A PEM block without
  its END line loses only its key-shaped lines: what follows is left to the other rules.
  Short or word-like look-alikes (``sk-learn``, ``hf_hub_download``) are not tokens: a token
  needs a minimum length and a random-looking body.
* Headers (``Authorization:`` with any scheme, a bare ``Bearer <token>``, ``x-api-key:``,
  ``Cookie:``/``Set-Cookie:`` values), connection strings (Azure ``AccountKey=``, ODBC
  ``PWD=``), docker ``config.json`` ``"auth"``, XML ``<password>``, a password stated in prose
  ("the password is …"), URL userinfo (``scheme://user:pass@host``,
  which covers postgres/mysql/mongodb/redis/amqp URLs), ``curl -u user:pass``, password flags
  (``--password X``, ``mysql -pX``, ``sshpass -p X``, ``docker login -p X``) and ``.netrc``
  lines keep the header / scheme / user / flag and lose the credential.
* Text inside JSON strings (``\\n``-escaped tool output) is handled: a JSON escape counts as a
  line/word boundary, and tool-call arguments are redacted value by value.
* ``NAME=value`` / ``"name": "value"`` / ``name: value`` assignments are redacted only when
  the name *ends* with a secret word (``token``, ``secret``, ``password``, ``passwd``,
  ``passphrase``, ``credential(s)``, ``api_key``, ``secret_key``, ``private_key``,
  ``access_key``, … — so ``token_count``, ``password_field`` and ``max_tokens`` are not), and
  the value is plausibly a literal secret: not a number, boolean, placeholder (``<key>``,
  ``${VAR}``, ``$VAR``, ``{{ x }}``, ``***``), code expression (``os.environ[...]``,
  ``getpass()``) or, for a lower-case name with an unquoted value, a bare identifier
  (``password = password`` is code, ``DB_PASSWORD=postgres`` is a .env line).

All patterns are compiled once at import.  Each family has a cheap gate (a substring test on
the lowered text) so most texts skip most patterns, and the case-insensitive assignment
patterns are only *matched* at the positions their gate found instead of being searched
through the whole text; the ~70 token patterns are skipped together by one trigger scan
on short texts.  About 1.7x the CPU time of the rule set before issue 13 (which knew ~30
families) on the real transcripts: ~0.9 s for all 3.5 MB of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hermes_host.messages import copy_data
from hermes_host.models import Message
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
from hermes_host.redact.vendor_tokens import _PEM_RE, _TOKEN_PATTERNS, _sub_pem, _token_sub
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

__all__ = [
    "REDACTED",
    "contains_secret",
    "redact",
    "redact_counted",
    "redact_messages",
    "redact_value",
    "redacted_for_reading",
    "redaction_memo",
]


# --------------------------------------------------------------------------------------------
# pattern families (order matters: structured ones first, so later passes see [REDACTED])





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
_HEADER_WORDS = ("api-key", "-token", "authorization")
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
    if start >= 2 and text[start - 1] == "\\" and text[start] in "nrt":
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


def redact_counted(text: str) -> tuple[str, int]:
    """Redact ``text`` and say how many secrets were replaced."""
    if not text:
        return text, 0
    total = 0
    lower = text.lower()
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


class _Memo:
    """What one :func:`redaction_memo` block has redacted already: text → result, and tool
    call arguments → result."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.arguments: dict[str, Any] = {}


_memo: ContextVar[_Memo | None] = ContextVar("hermes_host_redaction_memo", default=None)


@contextmanager
def redaction_memo() -> Iterator[None]:
    """Within the block, :func:`redact` (and :func:`redact_messages`) remember their results:
    a pass that redacts the same texts more than once — the compressor redacts the middle,
    then the summariser redacts its job again, as defence in depth — pays for each text once.
    The memory is the block's alone (a context variable; nested blocks share the outer one)
    and is freed when it ends."""
    if _memo.get() is not None:
        yield
        return
    token = _memo.set(_Memo())
    try:
        yield
    finally:
        _memo.reset(token)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret value replaced by ``[REDACTED]``.

    Key names, header names, URL schemes/users/hosts are kept so the reader knows that a
    credential was present and where.  Idempotent: ``redact(redact(t)) == redact(t)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    memo = _memo.get()
    if memo is None:
        return redact_counted(text)[0]
    out = memo.texts.get(text)
    if out is None:
        out = memo.texts[text] = redact_counted(text)[0]
    return out


def contains_secret(text: str) -> bool:
    """True when :func:`redact` would change ``text``."""
    if not text:
        return False
    return redact_counted(text)[0] != text


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists); other types unchanged."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


def _redact_arguments(arguments: Any) -> Any:
    """Tool-call arguments: a JSON string is redacted value by value (escapes hide the line
    structure the patterns rely on) and re-encoded only when something changed."""
    if not isinstance(arguments, str):
        return redact_value(arguments)
    memo = _memo.get()
    if memo is not None:
        hit = memo.arguments.get(arguments)
        if hit is None:
            hit = memo.arguments[arguments] = _redact_argument_text(arguments)
        return hit
    return _redact_argument_text(arguments)


def _redact_argument_text(arguments: str) -> Any:
    try:
        decoded = json.loads(arguments)
        cleaned = redact_value(decoded)
        if cleaned == decoded:
            return redact(arguments)
        return redact(json.dumps(cleaned, ensure_ascii=False))
    except (ValueError, RecursionError):  # not JSON, or nested too deep: redact the text
        return redact(arguments)


_TEXT_KEYS = ("content", "reasoning_content", "reasoning", "thinking")


def _redact_content(content: Any) -> Any:
    if isinstance(content, str):
        return redact(content)
    if isinstance(content, list):
        out: list[Any] = []
        for part in content:
            if isinstance(part, dict):
                part = dict(part)
                for key in ("text", "thinking", "content"):
                    if isinstance(part.get(key), str):
                        part[key] = redact(part[key])
                    elif key == "content" and isinstance(part.get(key), list):
                        part[key] = _redact_content(part[key])
                out.append(part)
            elif isinstance(part, str):
                out.append(redact(part))
            else:
                out.append(part)
        return out
    return content


def redacted_for_reading(messages: Iterable[Message]) -> list[Message]:
    """Like :func:`redact_messages`, for a reader that does not change what it gets: a
    message with nothing to redact is returned as is (no copy), the others are redacted
    copies.  (The offline summariser reads its job this way: within a
    :func:`redaction_memo` block an already redacted middle then costs dictionary lookups.)"""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, dict) and _unchanged_by_redaction(message):
            out.append(message)
        else:
            out.extend(redact_messages([message]))
    return out


def _unchanged_by_redaction(message: Message) -> bool:
    for key in _TEXT_KEYS:
        value = message.get(key)
        if isinstance(value, str):
            if redact(value) != value:
                return False
        elif value is not None and _redact_content(value) != value:
            return False
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and "arguments" in fn and \
                    _redact_arguments(fn["arguments"]) != fn["arguments"]:
                return False
    return True


def redact_messages(messages: Iterable[Message]) -> list[Message]:
    """A deep copy of ``messages`` with secrets removed from every text a model would read.

    Redacted: ``content`` (strings and the text of list parts), reasoning text, and each
    tool call's ``arguments`` (string or JSON object).  Untouched: roles, tool names, ids and
    ``_`` metadata keys — they are structure, and changing them would break tool pairing.
    """
    result: list[Message] = []
    for message in messages:
        m = copy_data(message)
        if not isinstance(m, dict):
            result.append(m)
            continue
        for key in _TEXT_KEYS:
            if key in m:
                m[key] = _redact_content(m[key])
        calls = m.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and "arguments" in fn:
                    fn["arguments"] = _redact_arguments(fn["arguments"])
        result.append(m)
    return result
