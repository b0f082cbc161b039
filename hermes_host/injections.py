"""Turn-scoped injections (R-2.1, R-2.2): extras that go into ONE request and nowhere else.

Attachment text, ``@file`` references, out-of-band notes, todo state and images are added to
the request :meth:`hermes_host.host.Session.build_request` returns, never to the store and
never to the next request: the model sees them once.  Raw media bytes never enter the window
(an image is sent with the next call only).

They are attached to the newest message when it is a user message (text appended, images as
``image_url`` parts), else as one extra user message at the end, so role alternation holds.
"""

from __future__ import annotations

import base64
import copy
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes_host.messages import as_parts
from hermes_host.models import Message

__all__ = ["MAX_FILE_CHARS", "Injection", "InjectionError", "apply_injections"]

MAX_FILE_CHARS = 100_000
"""An ``@file`` larger than this is cut, with a note saying so."""

Kind = Literal["attachment", "file", "note", "todo", "image"]


class InjectionError(ValueError):
    """An injection cannot be built (unreadable ``@file``, image that is not an image)."""


@dataclass(frozen=True)
class Injection:
    """One turn-scoped extra.  Build them with the class methods."""

    kind: Kind
    text: str = ""
    name: str | None = None
    image_url: str | None = None

    @classmethod
    def note(cls, text: str) -> Injection:
        """An out-of-band note from the front end (``[note] ...``)."""
        return cls("note", text=text)

    @classmethod
    def attachment(cls, name: str, text: str) -> Injection:
        """Extracted text of an attached document (or a transcript of audio)."""
        return cls("attachment", text=text, name=name)

    @classmethod
    def document(cls, path: str | Path, note: str | None = None) -> Injection:
        """A document too large or binary to inline: its local path plus a short note, so
        the agent can open it with its tools (R-2.2)."""
        text = f"a document is available at {path}" + (f": {note}" if note else "")
        return cls("attachment", text=text, name=Path(path).name)

    @classmethod
    def audio(cls, name: str, transcript: str) -> Injection:
        """Audio is sent as its transcript, never as raw bytes (R-2.2)."""
        return cls("attachment", text=transcript, name=f"{name} (audio transcript)")

    @classmethod
    def file(cls, path: str | Path) -> Injection:
        """An ``@path`` reference: the file's text is read now and sent with this turn."""
        p = Path(path).expanduser()
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise InjectionError(f"@{path}: no such file") from None
        except IsADirectoryError:
            raise InjectionError(f"@{path}: is a directory, not a file") from None
        except OSError as exc:
            raise InjectionError(f"@{path}: cannot read: {exc.strerror or exc}") from None
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[... cut at {MAX_FILE_CHARS} characters]"
        return cls("file", text=text, name=str(path))

    @classmethod
    def todo(cls, items: Sequence[str | tuple[str, bool]]) -> Injection:
        """The agent's todo list; ``(text, done)`` pairs or plain strings (open items)."""
        lines = []
        for item in items:
            text, done = (item, False) if isinstance(item, str) else item
            lines.append(f"- [{'x' if done else ' '}] {text}")
        return cls("todo", text="\n".join(lines))

    @classmethod
    def image(cls, source: str | Path) -> Injection:
        """An image for the next model call only: a URL / ``data:`` URL, or a file path."""
        text = str(source)
        if text.startswith(("data:image/", "http://", "https://")):
            return cls("image", image_url=text)
        p = Path(source).expanduser()
        mime = mimetypes.guess_type(p.name)[0] or ""
        if not mime.startswith("image/"):
            raise InjectionError(f"{source}: not an image file (type {mime or 'unknown'})")
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InjectionError(f"{source}: cannot read: {exc.strerror or exc}") from None
        encoded = base64.b64encode(data).decode("ascii")
        return cls("image", image_url=f"data:{mime};base64,{encoded}", name=p.name)

    def render(self) -> str:
        """The text form of a non-image injection."""
        if self.kind == "note":
            return f"[note] {self.text}"
        if self.kind == "attachment":
            return f"[attachment: {self.name}]\n{self.text}"
        if self.kind == "file":
            return f"[@{self.name}]\n{self.text}"
        if self.kind == "todo":
            return f"[todo]\n{self.text}"
        return ""


def apply_injections(
    messages: Sequence[Message], injections: Sequence[Injection | str]
) -> list[Message]:
    """A copy of ``messages`` with ``injections`` attached (plain strings are notes)."""
    out = [copy.deepcopy(m) for m in messages]
    items = [Injection.note(i) if isinstance(i, str) else i for i in injections]
    if not items:
        return out
    texts = [i.render() for i in items if i.kind != "image"]
    images = [i.image_url for i in items if i.kind == "image" and i.image_url]
    if out and out[-1].get("role") == "user":
        target = out[-1]
    else:
        target = {"role": "user", "content": ""}
        out.append(target)
    content = target.get("content")
    if not images and (content is None or isinstance(content, str)):
        target["content"] = "\n\n".join([t for t in [content or "", *texts] if t])
        return out
    parts = as_parts(content)
    parts.extend({"type": "text", "text": t} for t in texts)
    parts.extend({"type": "image_url", "image_url": {"url": u}} for u in images)
    target["content"] = parts
    return out
