"""Message dict ⇄ ``messages`` row, losslessly.

The store must give back exactly the dict it was given (R-1.2: "keeps everything"), including
``_``-prefixed metadata such as ``_compressed_summary`` and keys it has never heard of, while
still putting the R-9.2 fields in real columns so they can be indexed and searched.

Encoding: each key whose value fits its column (a string for text columns, a list for
``tool_calls`` …) goes to that column.  Everything else — unknown keys, values of an
unexpected type, strings that are not valid UTF-8 (lone surrogates) — goes to the JSON
``extra`` column as ``{"x": {key: value}}``.  When the original key order differs from the
canonical order the columns imply (or a key is absent that the canonical form would show,
e.g. a message with no ``content`` key) ``extra`` also records ``{"o": [keys…]}``.  A plain
message therefore costs no ``extra`` at all, and decoding is exact in every case.

The ``content`` column always holds the searchable text (text parts joined for a list
content), so the FTS indexes never see JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_host.messages import text_of
from hermes_host.models import Message
from hermes_host.store.base import StoredMessage, StoreError

__all__ = [
    "MSG_COLS",
    "ROW_COLUMNS",
    "STORED_COLUMNS",
    "WINDOW_ORDER",
    "EncodedMessage",
    "decode_row",
    "encode_message",
    "safe_text",
    "stored_from_row",
]

# key -> (column, kind).  "name" maps to tool_name only on tool messages (see _column_for).
_KEYMAP: dict[str, tuple[str, str]] = {
    "role": ("role", "text"),
    "content": ("content", "text"),
    "tool_calls": ("tool_calls", "json_list"),
    "tool_call_id": ("tool_call_id", "text"),
    "name": ("tool_name", "text"),
    "finish_reason": ("finish_reason", "text"),
    "reasoning": ("reasoning", "text"),
    "reasoning_details": ("reasoning_details", "json_any"),
    "api_content": ("api_content", "text"),
    "platform_message_id": ("platform_message_id", "text"),
    "observed": ("observed", "bool"),
}
_OPTIONAL_ORDER = tuple(_KEYMAP)[2:]  # every key after role and content, in that order

ROW_COLUMNS = (
    "role",
    "content",
    "tool_calls",
    "tool_name",
    "tool_call_id",
    "finish_reason",
    "reasoning",
    "reasoning_details",
    "api_content",
    "platform_message_id",
    "observed",
    "extra",
)
"""The message columns :func:`decode_row` reads, in this order."""


def _utf8_ok(text: str) -> bool:
    """Storable as a text column by every backend: valid UTF-8 and no NUL (PostgreSQL's
    ``text`` cannot hold one).  Other strings travel JSON-escaped in ``extra``."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """``text`` with anything a store cannot keep in a text column (lone surrogates, NUL)
    replaced: the searchable copy of a message whose original travels in ``extra``."""
    if _utf8_ok(text):
        return text
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _dumps(value: Any) -> str | None:
    """Compact JSON that SQLite can store; ``None`` if ``value`` is not representable."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if _utf8_ok(text) else None


@dataclass(frozen=True, slots=True)
class EncodedMessage:
    """Column values for one row (``ROW_COLUMNS`` order)."""

    values: tuple[Any, ...]


def _column_for(key: str, role: Any) -> tuple[str, str] | None:
    if key == "name" and role != "tool":
        return None
    return _KEYMAP.get(key)


def encode_message(message: Message, index: int = 0) -> EncodedMessage:
    """Split one message dict into column values.  Raises :class:`StoreError` naming the
    message index when it is not a dict with a string ``role`` or is not JSON-representable."""
    if not isinstance(message, dict):
        raise StoreError(f"message {index}: expected an object, got {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str):
        raise StoreError(f"message {index}: needs a string 'role'")
    cols: dict[str, Any] = {}
    extra_values: dict[str, Any] = {}
    for key, value in message.items():
        if not isinstance(key, str):
            raise StoreError(f"message {index}: keys must be strings, got {key!r}")
        spec = _column_for(key, role)
        if spec is None:
            extra_values[key] = value
            continue
        column, kind = spec
        if value is None:
            cols[column] = None
            continue
        if kind == "text":
            if isinstance(value, str) and _utf8_ok(value):
                cols[column] = value
                continue
        elif kind == "json_list":
            if isinstance(value, list):
                dumped = _dumps(value)
                if dumped is not None:
                    cols[column] = dumped
                    continue
        elif kind == "json_any":
            dumped = _dumps(value)
            if dumped is not None:
                cols[column] = dumped
                continue
        elif kind == "bool" and isinstance(value, bool):
            cols[column] = int(value)
            continue
        extra_values[key] = value
    if "role" in extra_values:
        cols["role"] = safe_text(role)
    if "content" in extra_values:
        # Keep the original in extra; the column carries searchable text only.
        cols["content"] = safe_text(text_of(message)) or None

    canonical = ["role", "content"] + [
        k for k in _OPTIONAL_ORDER if cols.get(_KEYMAP[k][0]) is not None and k in message
    ]
    extra: dict[str, Any] = {}
    if list(message) != canonical:
        extra["o"] = list(message)
    if extra_values:
        extra["x"] = extra_values
    extra_json: str | None = None
    if extra:
        try:
            # ensure_ascii keeps lone surrogates as \\udXXX escapes: exact round trip.
            # allow_nan=False: what the store keeps must export as valid JSON.
            extra_json = json.dumps(
                extra, ensure_ascii=True, separators=(",", ":"), allow_nan=False
            )
        except ValueError as exc:
            if "Out of range float" not in str(exc):
                raise StoreError(f"message {index}: not JSON-serialisable ({exc})") from None
            raise StoreError(
                f"message {index}: holds a non-finite number (NaN or Infinity), which JSON "
                "cannot carry"
            ) from None
        except TypeError as exc:
            raise StoreError(f"message {index}: not JSON-serialisable ({exc})") from None
    values = (*tuple(cols.get(c) for c in ROW_COLUMNS[:-1]), extra_json)
    return EncodedMessage(values)


def _decode_column(kind: str, raw: Any) -> Any:
    if raw is None:
        return None
    if kind in ("json_list", "json_any"):
        return json.loads(raw)
    if kind == "bool":
        return bool(raw)
    return raw


def decode_row(row: Sequence[Any]) -> Message:
    """Rebuild the original message dict from ``ROW_COLUMNS`` values."""
    by_col = dict(zip(ROW_COLUMNS, row, strict=True))
    role = by_col["role"]
    extra = json.loads(by_col["extra"]) if by_col["extra"] else {}
    extra_values: dict[str, Any] = extra.get("x", {})
    order: list[str] | None = extra.get("o")
    if order is None:
        order = ["role", "content"] + [
            k for k in _OPTIONAL_ORDER if by_col[_KEYMAP[k][0]] is not None
        ]
    message: Message = {}
    for key in order:
        if key in extra_values:
            message[key] = extra_values[key]
            continue
        spec = _column_for(key, role)
        message[key] = None if spec is None else _decode_column(spec[1], by_col[spec[0]])
    return message


MSG_COLS = ", ".join(ROW_COLUMNS)
"""The SELECT (and INSERT) list of a row's message columns, what :func:`decode_row` reads."""
WINDOW_ORDER = "ORDER BY seq, id"
"""A session's rows in window order (archived rows before the window that replaced them)."""
STORED_COLUMNS = "id, session_id, active, compacted, token_count, timestamp, " + ", ".join(
    ROW_COLUMNS
)
"""The SELECT list :func:`stored_from_row` reads."""


def stored_from_row(row: Sequence[Any]) -> StoredMessage:
    """A :class:`StoredMessage` from a ``STORED_COLUMNS`` row."""
    return StoredMessage(
        id=row[0],
        session_id=row[1],
        active=bool(row[2]),
        compacted=bool(row[3]),
        token_count=row[4],
        timestamp=row[5],
        message=decode_row(row[6:]),
    )
