"""Whether a candidate value is a secret: the replacement marker, key-likeness, and the
values that are not secrets (placeholders, numbers, code) — shared by every pattern family
(R-7.1)."""

from __future__ import annotations

import re
from collections.abc import Callable

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
      | [A-Za-z0-9_\-]{1,12}(?:\.{3}|…)       # elided: ``sk-...``, ``ghp_…``
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


_WORDISH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
