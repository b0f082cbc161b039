"""Credential redaction: the one place that knows what a secret looks like (R-7.1, R-6.11).

Everything that may leave the process or be persisted as prose — a summariser prompt, a
summary, a log line, an error message — passes through :func:`redact` first.  A secret value
is replaced by :data:`REDACTED`; the *name* it was assigned to (``DB_PASSWORD=``,
``"api_key":``, ``Authorization: Bearer``) is kept, so a summary can still say that
credentials were present without carrying them.

Rules, chosen so ordinary text survives (tested on the real transcripts):

* Self-identifying tokens (``sk-ant-``, ``sk-proj-``, ``sk-``, ``ghp_``/``gho_``/``ghs_``/
  ``ghu_``, ``github_pat_``, ``AKIA``/``ASIA``, ``AIza``, ``xoxb-``, ``hf_``, ``glpat-``,
  ``sk_live_``/``rk_live_``, SendGrid ``SG.``, ``dop_v1_``, JWTs, PEM private-key blocks) are
  removed whole, wherever they are.
  Short or word-like look-alikes (``sk-learn``, ``hf_hub_download``) are not tokens: a token
  needs a minimum length and a random-looking body.
* Headers (``Authorization:``, ``x-api-key:``), URL userinfo (``scheme://user:pass@host``,
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
through the whole text: ~0.1 s for the largest real transcript (600 KB).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from hermes_host.models import Message

__all__ = [
    "REDACTED",
    "contains_secret",
    "redact",
    "redact_counted",
    "redact_messages",
    "redact_value",
]

REDACTED = "[REDACTED]"
"""What a secret value is replaced by."""

_Sub = Callable[[re.Match[str]], str]

# A left word boundary that also holds right after a JSON escape such as ``\n`` — secrets in
# JSON-encoded tool output start lines that are not real lines.
_B = r"(?:\b|(?<=\\[nrt]))"

# --------------------------------------------------------------------------------------------
# helpers deciding whether a candidate value is a secret


def _looks_random(value: str, *, min_len: int = 16) -> bool:
    """True for key-like strings: long enough, letters *and* digits, not a kebab/snake phrase.

    ``sk-learn-contrib-extra-v2`` has digits but its longest unbroken alphanumeric run is
    short; generated keys have long runs (or mixed case with digits).
    """
    if len(value) < min_len:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if not (has_digit and has_alpha):
        return False
    longest_run = max((len(r) for r in re.split(r"[^A-Za-z0-9]+", value)), default=0)
    if longest_run >= 12:
        return True
    mixed_case = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed_case and longest_run >= 8


_PLACEHOLDER_RE = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?        # $VAR / ${VAR}
      | \$\{\{.*  | \{\{.*\}\}?  | \$\(.*     # ${{ secrets.X }}, {{ var }}, $(cmd)
      | <[^<>]*>                              # <your-api-key>
      | \[[^\[\]]*\]                          # [REDACTED], [SEP]
      | %\(.*\)s? | %s | \{[A-Za-z_0-9]*\}    # printf / format placeholders
      | \*+ | x{3,} | X{3,} | \.{3,} | …      # masked
      | (?i:null|none|nil|true|false|yes|no|undefined|required|optional|string|str|bytes
             |env|secret|password|token|redacted|changeme_?please|your[_-].*|my[_-]?secret
             |example|sample|placeholder|dummy|test|todo|tbd|n/?a)
    )$""",
    re.VERBOSE,
)
_NUMBER_RE = re.compile(r"^[-+]?\d[\d_,]*(?:\.\d+)?(?:e[-+]?\d+)?[kKmMgG%]?$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z_]*$")
_CALL_RE = re.compile(r"[()\[\]{}]|^(?:os|process|self|env|settings|config)\.")
_DOTTED_RE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+$")


def _plausible_value(value: str, *, quoted: bool, name: str, strong: bool) -> bool:
    v = value.strip()
    if len(v) < 3 or REDACTED in v:
        return False
    if _PLACEHOLDER_RE.match(v) or _NUMBER_RE.match(v):
        return False
    if not strong:  # a generic *_KEY name: only random-looking values
        return _looks_random(v, min_len=12)
    if quoted:
        # A quoted literal is data, not code; only reject format/placeholders (above).
        return not v.startswith(("$", "{{", "%"))
    if _CALL_RE.search(v):
        return False  # ``os.environ["X"]``, ``getpass()``, ``Base.encode64(...)``
    if _DOTTED_RE.match(v) and not _looks_random(v, min_len=12):
        return False  # ``settings.SECRET_KEY``
    if _IDENT_RE.match(v) and not name.isupper():
        # ``password = password`` / ``token: token`` is code, not a credential.
        return False
    return True


# --------------------------------------------------------------------------------------------
# pattern families (order matters: structured ones first, so later passes see [REDACTED])

_PEM_RE = re.compile(
    r"(-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?)-----)"
    r"(?:(?P<body>.{0,20000}?)(?P<end>-----END (?P=kind)-----)"
    # no END marker (truncated output): only the key-shaped characters that follow
    r"|(?P<tail>(?:\\[nr]|[A-Za-z0-9+/=:,\- \t\r\n])*))",
    re.DOTALL,
)


def _sub_pem(m: re.Match[str]) -> str:
    body = m.group("body") if m.group("end") else m.group("tail")
    if not (body or "").strip() or (body or "").strip() == REDACTED:
        return m.group(0)  # nothing (left) to hide: keeps redact() idempotent
    return f"{m.group(1)}{REDACTED}{m.group('end') or ''}"


# Literal-first patterns (no leading ``\b``) let the regex engine scan for the prefix fast;
# the left word boundary is checked in the callback instead.
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], bool, tuple[str, ...]]] = [
    # (pattern, needs a random-looking body, literal substrings one of which must occur)
    (re.compile(r"sk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}"), False, ("sk-ant-",)),
    (re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}"), True, ("sk-ant-",)),
    (re.compile(r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"), True, ("sk-",)),
    (re.compile(r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{19,}"), True, ("sk-",)),
    (re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}\b"), False,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), False, ("github_pat_",)),
    (re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA)[A-Z0-9]{16}\b"), False,
     ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA")),
    (re.compile(r"AIza[0-9A-Za-z_\-]{35}"), False, ("AIza",)),
    (re.compile(r"xox[abposr]-[A-Za-z0-9][A-Za-z0-9\-]{9,}"), True, ("xox",)),
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"), False,
     ("hooks.slack.com",)),
    (re.compile(r"hf_[A-Za-z0-9]{30,}\b"), False, ("hf_",)),
    (re.compile(r"glpat-[A-Za-z0-9_\-]{20,}"), False, ("glpat-",)),
    (re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"), False, ("k_live_", "k_test_")),
    (re.compile(r"whsec_[A-Za-z0-9+/=]{20,}"), False, ("whsec_",)),
    (re.compile(r"npm_[A-Za-z0-9]{36}\b"), False, ("npm_",)),
    (re.compile(r"pypi-AgE[A-Za-z0-9_\-]{20,}"), False, ("pypi-AgE",)),
    (re.compile(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"), False, ("SG.",)),
    (re.compile(r"dop_v1_[a-f0-9]{64}"), False, ("dop_v1_",)),
    (re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), False,
     ("eyJ",)),
]
_WORDISH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _token_sub(needs_random: bool) -> _Sub:
    def sub(m: re.Match[str]) -> str:
        start = m.start()
        if (start and m.string[start - 1] in _WORDISH and not m.group(0).startswith("https")
                and not (start > 1 and m.string[start - 2] == "\\")):  # JSON ``\n`` escape
            return m.group(0)  # inside a longer word: ``my-sk-...``, ``xghp_...``
        if needs_random and not _looks_random(m.group(0)):
            return m.group(0)
        return REDACTED

    return sub


_AWS_SECRET_RE = re.compile(
    r"(?i)(aws_secret_access_key|aws_secret_key|secret_access_key|secretaccesskey)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)

_AUTH_HEADER_RE = re.compile(
    rf"(?i){_B}((?:proxy-)?authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    r"(?:(bearer|basic|token|digest|apikey|api-key|key|sso-key|otp)(\s+))?"
    r"([^\s\"'\\,;]+)"
)


def _sub_auth_header(m: re.Match[str]) -> str:
    scheme, space, value = m.group(2), m.group(3), m.group(4)
    if REDACTED in value or _PLACEHOLDER_RE.match(value):
        return m.group(0)
    if scheme is None and not _looks_random(value, min_len=12):
        return m.group(0)  # prose: "authorization: required for ..."
    return f"{m.group(1)}{scheme or ''}{space or ''}{REDACTED}"


_KEY_HEADER_RE = re.compile(
    rf"(?i){_B}((?:x-api-key|x-goog-api-key|x-auth-token|x-access-token|x-api-token|api-key"
    r"|private-token|x-vault-token)\\?[\"']?\s*:\s*\\?[\"']?)([^\s\"'\\,;]+)"
)


def _sub_key_header(m: re.Match[str]) -> str:
    value = m.group(2)
    if REDACTED in value or _PLACEHOLDER_RE.match(value) or len(value) < 6:
        return m.group(0)
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
    r"(?=[\"']?(?:\s|$))"
)


def _sub_curl_user(m: re.Match[str]) -> str:
    if m.group(3) == REDACTED or _PLACEHOLDER_RE.match(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}:{REDACTED}"


_FLAG_RE = re.compile(
    r"(?i)((?:^|\s|\\[nrt])--(?:password|passwd|token|api-key|apikey|secret|access-token|auth-token"
    r"|client-secret)(?:=|\s+)[\"']?)([^\s\"']+)"
)


def _sub_flag(m: re.Match[str]) -> str:
    value = m.group(2)
    if value.startswith("-") or not _plausible_value(
        value, quoted=False, name="FLAG", strong=True
    ):
        return m.group(0)
    return f"{m.group(1)}{REDACTED}"


# Short password flags of specific tools: ``mysql -pS3cret``, ``sshpass -p pw``,
# ``docker login -u me -p pw``; and ``.netrc`` lines (``machine h login u password pw``).
_SHORT_P_RE = re.compile(
    r"((?:\bmysql\w*|\bmariadb\w*)\b[^\n]*?\s-p[\"']?)(?!\s)([^\s\"']+)"
    r"|((?:\bsshpass|\b(?:docker|podman|helm|oras)\s+(?:registry\s+)?login)\b[^\n]*?\s-p\s+"
    r"[\"']?)"
    r"([^\s\"']+)"
    r"|(\bmachine\s+\S+\s+login\s+\S+\s+password\s+)(\S+)"
)


def _sub_short_p(m: re.Match[str]) -> str:
    for head, value in ((1, 2), (3, 4), (5, 6)):
        if m.group(head) is not None:
            if m.group(value) == REDACTED or _PLACEHOLDER_RE.match(m.group(value)):
                return m.group(0)
            return f"{m.group(head)}{REDACTED}"
    return m.group(0)


# Names that mark a value as a secret when they END the assignment's key.
_STRONG_WORDS = (
    r"api[_\-]?key|apikey|api[_\-]?secret|api[_\-]?token|secret[_\-]?key|private[_\-]?key"
    r"|access[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|auth[_\-]?key"
    r"|client[_\-]?secret|secret|token|password|passwd|passphrase|credentials?|_pwd|_pass"
)
_NAME = rf"[A-Za-z0-9_.\-]{{0,60}}?(?:{_STRONG_WORDS}|_key)"

# NAME=value  (env / shell / ini / query strings / kwargs)
_ASSIGN_EQ_RE = re.compile(
    rf"(?i)(?:(?<![A-Za-z0-9_.\-\\])|(?<=\\[nrt]))(?P<lhs>(?:export\s+|set\s+)?(?P<name>{_NAME}))(?P<eq>\s*=\s*)"
    r"(?:(?P<dq>\\?\")(?P<dv>(?:[^\"\\\n]|\\(?!\"))*)(?P<dqc>\\?\")"
    r"|'(?P<sv>[^'\n]*)'"
    r"|(?P<uv>[^\s\"'`,;&|<>)]+))"
)
# "name": "value"  (JSON, incl. JSON escaped inside a JSON string)
_ASSIGN_JSON_RE = re.compile(
    rf"(?i)(\\?\"({_NAME})\\?\"\s*:\s*)(\\?\")((?:[^\"\\\n]|\\(?!\"))*)(\\?\")"
)
# name: value  (YAML / headers / prose) — unquoted value must be the rest of the line
_ASSIGN_COLON_RE = re.compile(
    rf"(?im)^([ \t\-]*(?:[\"']?)({_NAME})[\"']?[ \t]*:[ \t]*)"
    r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"'#][^\s#]*))[ \t]*(?:\#.*)?$"
)


_GENERIC_KEY_RE = re.compile(r"(?i)key$")
_STRONG_KEY_RE = re.compile(
    r"(?i)(?:api|secret|private|access|signing|encryption|master|auth)[_\-]?key$"
)


def _is_strong(name: str) -> bool:
    """``*_KEY`` alone (``cache_key``, ``SORT_KEY``) is weak: only random values count."""
    return not _GENERIC_KEY_RE.search(name) or bool(_STRONG_KEY_RE.search(name))


def _sub_assign_eq(m: re.Match[str]) -> str:
    name = m.group("name")
    if name.lower() in ("pwd", "oldpwd"):
        return m.group(0)
    head = m.group("lhs") + m.group("eq")
    if m.group("dq") is not None:
        value, quoted = m.group("dv"), True
        open_q, close_q = m.group("dq"), m.group("dqc")
    elif m.group("sv") is not None:
        value, quoted, open_q, close_q = m.group("sv"), True, "'", "'"
    else:
        value, quoted, open_q, close_q = m.group("uv"), False, "", ""
    if not _plausible_value(value, quoted=quoted, name=name, strong=_is_strong(name)):
        return m.group(0)
    return f"{head}{open_q}{REDACTED}{close_q}"


def _sub_assign_json(m: re.Match[str]) -> str:
    name, value = m.group(2), m.group(4)
    if not _plausible_value(value, quoted=True, name=name, strong=_is_strong(name)):
        return m.group(0)
    return f"{m.group(1)}{m.group(3)}{REDACTED}{m.group(5)}"


def _sub_assign_colon(m: re.Match[str]) -> str:
    name = m.group(2)
    strong = _is_strong(name)
    if m.group(3) is not None or m.group(4) is not None:
        value = m.group(3) if m.group(3) is not None else m.group(4)
        quoted = True
    else:
        value, quoted = m.group(5), False
    if value.startswith(("|", ">", "!", "&", "*")):  # YAML block scalars, tags, anchors
        return m.group(0)
    if not quoted and not _looks_random(value, min_len=6) and not _ends_strong_word(name):
        return m.group(0)
    if not _plausible_value(value, quoted=quoted, name=name, strong=strong):
        return m.group(0)
    start, end = m.span(3) if m.group(3) is not None else (
        m.span(4) if m.group(4) is not None else m.span(5))
    base = m.start(0)
    whole = m.group(0)
    return whole[: start - base] + REDACTED + whole[end - base :]


def _ends_strong_word(name: str) -> bool:
    return bool(re.search(r"(?i)(password|passwd|passphrase|secret|api[_\-]?key)$", name))


_Gate = Callable[[str, str], bool]
_KW = r"(?:key|secret|token|passw|passphrase|credential|_pwd|_pass)[a-z0-9_.\-]*"
_EQ_GATE = re.compile(_KW + r"\\?[\"']?\s*=")
_COLON_GATE = re.compile(_KW + r"\\?[\"']?\s*:")
_HEADER_WORDS = ("api-key", "-token", "authorization")
_FLAG_WORDS = tuple(f"--{w}" for w in ("password", "passwd", "token", "api-key", "apikey",
                                       "secret", "access-token", "auth-token", "client-secret"))
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


def _literal_gate(literals: tuple[str, ...]) -> _Gate:
    """A gate that passes when one of ``literals`` occurs (a C-speed substring test)."""

    def gate(text: str, lower: str) -> bool:
        return any(lit in text for lit in literals)

    return gate


# (pattern, replacement, gate on (text, lowered text), anchor): the gates are cheap scans of
# the lowered text, so most messages skip the case-insensitive patterns entirely.  With an
# anchor, the pattern is only *matched* where its gate hits (anchor = where a match would
# start) instead of being searched through the whole text: the assignment patterns are
# case-insensitive with a lazy name prefix, which is slow to scan for.
_PASSES: list[tuple[re.Pattern[str], _Sub, _Gate, tuple[re.Pattern[str], _Anchor] | None]] = [
    (_PEM_RE, _sub_pem, lambda t, low: "PRIVATE KEY" in t, None),
    (_AUTH_HEADER_RE, _sub_auth_header, lambda t, low: "authorization" in low, None),
    (_KEY_HEADER_RE, _sub_key_header, lambda t, low: any(w in low for w in _HEADER_WORDS),
     None),
    (_URL_USERINFO_RE, _sub_userinfo, lambda t, low: "://" in t, None),
    (_CURL_USER_RE, _sub_curl_user, lambda t, low: "curl" in low, None),
    *((p, _token_sub(r), _literal_gate(lits), None) for p, r, lits in _TOKEN_PATTERNS),
    (
        _AWS_SECRET_RE,
        lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}",
        lambda t, low: "secret" in low,
        None,
    ),
    (_FLAG_RE, _sub_flag, lambda t, low: any(w in low for w in _FLAG_WORDS), None),
    (_SHORT_P_RE, _sub_short_p, lambda t, low: any(w in low for w in _SHORT_P_WORDS), None),
    (_ASSIGN_JSON_RE, _sub_assign_json, _always, (_COLON_GATE, _quote_start)),
    (_ASSIGN_EQ_RE, _sub_assign_eq, _always, (_EQ_GATE, _name_start)),
    (_ASSIGN_COLON_RE, _sub_assign_colon, _always, (_COLON_GATE, _line_start)),
]


def _anchored_subn(
    pattern: re.Pattern[str], repl: _Sub, text: str, lower: str,
    finder: re.Pattern[str], anchor: _Anchor,
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
    for pattern, repl, gate, anchored in _PASSES:
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


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret value replaced by ``[REDACTED]``.

    Key names, header names, URL schemes/users/hosts are kept so the reader knows that a
    credential was present and where.  Idempotent: ``redact(redact(t)) == redact(t)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    return redact_counted(text)[0]


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
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return redact(arguments)
    cleaned = redact_value(decoded)
    if cleaned == decoded:
        return redact(arguments)
    return redact(json.dumps(cleaned, ensure_ascii=False))


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


def redact_messages(messages: Iterable[Message]) -> list[Message]:
    """A deep copy of ``messages`` with secrets removed from every text a model would read.

    Redacted: ``content`` (strings and the text of list parts), reasoning text, and each
    tool call's ``arguments`` (string or JSON object).  Untouched: roles, tool names, ids and
    ``_`` metadata keys — they are structure, and changing them would break tool pairing.
    """
    result: list[Message] = []
    for message in messages:
        m = copy.deepcopy(message)
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
