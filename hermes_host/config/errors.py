"""Errors that name the file, the key and the value, in bounded words (R-0.3)."""

from __future__ import annotations

import difflib
import reprlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["ConfigError", "did_you_mean"]


class ConfigError(Exception):
    """A config file could not be read or validated; ``str()`` is the user-facing message."""

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2


def _short(value: Any) -> str:
    """A bounded ``repr``: never builds the whole text of a huge value before cutting it."""
    return _REPR.repr(value)


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def did_you_mean(word: str, choices: Any, *, cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` naming the choice closest to ``word``, or ``""`` when none is
    close: the one wording of every "unknown name" error (config keys, hooks, engines)."""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_for(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str] | None:
    """Names the keys allowed at ``loc`` (for 'extra_forbidden' errors)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            current = field.annotation if field else None
        else:
            return None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None
