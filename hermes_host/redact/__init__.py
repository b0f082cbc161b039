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
on short texts, and a text holding none of the gates' words and no token trigger (most
texts of a session) is returned after two scans (``passes.might_change``).  About 1.7x
the CPU time of the rule set before issue 13 (which knew ~30 families) on the real
transcripts: ~0.9 s for all 3.5 MB of them (before the prefilter).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hermes_host.messages import copy_data
from hermes_host.models import Message
from hermes_host.redact.passes import redact_counted
from hermes_host.redact.values import REDACTED

__all__ = [
    "REDACTED",
    "contains_secret",
    "redact",
    "redact_counted",
    "redact_messages",
    "redact_output",
    "redact_value",
    "redacted_for_reading",
    "redaction_memo",
]


class _Memo:
    """What one :func:`redaction_memo` block has redacted already: text → result, and tool
    call arguments → result."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.arguments: dict[str, Any] = {}
        # id(message) -> what redacted_for_reading gave for it; ``seen`` keeps each such
        # message alive, so that its id is not reused by another object within the block
        self.read: dict[int, Message] = {}
        self.seen: list[Message] = []


_memo: ContextVar[_Memo | None] = ContextVar("hermes_host_redaction_memo", default=None)


@contextmanager
def redaction_memo() -> Iterator[None]:
    """Within the block, :func:`redact` (and :func:`redact_messages`) remember their results:
    a pass that redacts the same texts more than once — the compressor redacts the middle,
    then the summariser redacts its job again, as defence in depth — pays for each text once.
    The memory is the block's alone (a context variable; nested blocks share the outer one)
    and is freed when it ends.  Messages read with :func:`redacted_for_reading` are
    remembered by identity, so do not change a message in place within the block."""
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
    copies.  Within a :func:`redaction_memo` block each message is looked at once: reading
    the same messages (or this function's results) again costs a dictionary lookup each —
    the compressor reads its middle this way, then the offline summariser reads its job."""
    memo = _memo.get()
    out: list[Message] = []
    for message in messages:
        if memo is not None:
            hit = memo.read.get(id(message))
            if hit is not None:
                out.append(hit)
                continue
        if isinstance(message, dict) and _unchanged_by_redaction(message):
            clean = message
        else:
            clean = redact_messages([message])[0]
        if memo is not None:
            memo.read[id(message)] = clean
            memo.seen.append(message)
            if clean is not message:
                memo.read[id(clean)] = clean
                memo.seen.append(clean)
        out.append(clean)
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


def redact_output(value: Any) -> Any:
    """What a reader is shown of stored data — ``sessions show`` / ``search`` / ``export``
    output and every page of ``hermes-host browse`` (issue 31): ``value`` (a string, a
    message, a list or dict of them, a JSON payload) with every string redacted.  A dict
    with a ``role`` is a message: its tool-call arguments are redacted value by value
    (:func:`redacted_for_reading`), then its other fields (``name``, ``_`` metadata) too.
    Other types pass unchanged; the input is never changed in place."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [redact_output(v) for v in value]
    if isinstance(value, dict):
        if isinstance(value.get("role"), str):
            value = redacted_for_reading([value])[0]
        return {k: redact_output(v) for k, v in value.items()}
    return value


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
