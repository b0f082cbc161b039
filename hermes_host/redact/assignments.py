"""Values a name declares secret: ``NAME=value`` (env, shell, ini, query strings),
``"name": "value"`` (JSON), ``name: value`` (YAML), password flags (``--password X``,
``mysql -pX``, ``sshpass -p X``, ``.netrc``) and a password stated in prose.  The name stays;
the value goes when it is plausibly a literal secret (R-7.1)."""

from __future__ import annotations

import re

from hermes_host.redact.values import (
    _PLACEHOLDER_RE,
    _WORDISH,
    REDACTED,
    _looks_random,
    _plausible_value,
)

# A password stated in prose: "the password is <value>", "my API key: <value>".  Unquoted,
# the value must look like a password (letters with digits or symbols): "the password is
# required" and "the token is expired" are sentences, not credentials.
_PROSE_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_])"
    r"((?:password|passphrase|passcode|passwd|api[ _\-]?key|secret[ _\-]?key|token|secret)"
    r"(?:\s+for\s+[\w.@\-]+(?:\s+[\w.@\-]+)?)?"
    r"(?:\s+(?:is|was|will\s+be|should\s+be)\s*:?|\s*:)\s+)"
    r"(?:(\\?[\"'`])([^\"'`\n]{6,80})\2|([^\s\"'`]{6,80}))"
)
_COLOR_RE = re.compile(r"#[0-9a-fA-F]{3,8}\b")  # pygments styles: ``Token: "#f8f8f2"``
_PROSE_SYMBOLS = frozenset("!#$%^&*+~@?=")


def _sub_prose(m: re.Match[str]) -> str:
    if m.group(3) is not None:
        value, quoted = m.group(3), True
    else:
        value, quoted = m.group(4).rstrip(".,;:!?)]}"), False
    if (REDACTED in value or _PLACEHOLDER_RE.match(value) or len(value) < 6
            or value.startswith(("!", "&", "*", "|", ">", "$", "%", "{"))
            or _COLOR_RE.fullmatch(value)):
        return m.group(0)  # YAML tags/anchors/block scalars, variables, templates, a colour
    # ``#`` inside a value is part of the password (``P@ss#1234``); a leading one counts
    # only with more after it (``#hashtag`` and ``#1234`` are not passwords)
    body = value[1:] if value.startswith("#") else value
    has_alpha = any(c.isalpha() for c in body)
    has_digit = any(c.isdigit() for c in body)
    has_symbol = any(c in _PROSE_SYMBOLS for c in body)
    if value.startswith("#") and not (has_alpha and has_digit):
        return m.group(0)
    if not quoted and not (has_alpha and (has_digit or has_symbol)):
        return m.group(0)
    if quoted and " " in value.strip() and not has_digit:
        return m.group(0)  # a quoted phrase
    if not quoted and ("/" in value or "(" in value or value.count(".") > 1):
        return m.group(0)  # a path, a call, a dotted name
    start, end = m.span(3) if quoted else (m.start(4), m.start(4) + len(value))
    return m.string[m.start():start] + REDACTED + m.string[end:m.end()]




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
    r"((?:mysql\w*|mariadb\w*)\b[^\n]*?\s-p[\"']?)(?!\s)([^\s\"']+)"
    r"|((?:sshpass|(?:docker|podman|helm|oras|az)\s+(?:registry\s+)?login)\b[^\n]*?\s-p\s+"
    r"[\"']?)"
    r"([^\s\"']+)"
    r"|(machine\s+\S+\s+login\s+\S+\s+password\s+)(\S+)"
)


def _sub_short_p(m: re.Match[str]) -> str:
    start = m.start()
    if (start and m.string[start - 1] in _WORDISH
            and not (start > 1 and m.string[start - 2] == "\\")):  # JSON ``\n`` escape
        return m.group(0)  # ``xmysql``: inside a longer word
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
    rf"(?i)(?:(?<![A-Za-z0-9_.\-\\])|(?<=\\[nrt]))(?P<lhs>(?:export\s+|set\s+)?(?P<name>{_NAME}))"
    r"(?P<eq>[ \t]*=[ \t]*)"  # never across a line: ``token=`` then a newline has no value
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
