"""The Anthropic Messages API's wire form of an OpenAI-format request (:func:`to_anthropic`),
shared by ``hermes-host chat`` and the Anthropic summariser's continuation requests (issue
28: the summary request must repeat the chat's own request byte for byte)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_host.chat.model import tool_call_texts, tool_result_text
from hermes_host.messages import text_of
from hermes_host.models import Message

__all__ = ["to_anthropic"]


def _image_block(part: Mapping[str, Any]) -> dict[str, Any] | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        return None
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": head or
                                            "image/png", "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(message: Message) -> list[dict[str, Any]]:
    role = message.get("role")
    blocks: list[dict[str, Any]] = []
    if role == "tool":
        blocks.append({"type": "text", "text": tool_result_text(message)})
        return blocks
    content = message.get("content")
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "image_url":
                image = _image_block(part)
                if image is not None:
                    blocks.append(image)
            elif isinstance(part.get("text"), str):
                blocks.append({"type": "text", "text": part["text"]})
    blocks.extend({"type": "text", "text": t} for t in tool_call_texts(message))
    return [b for b in blocks if b.get("type") != "text" or str(b.get("text", "")).strip()]


def to_anthropic(request: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """An OpenAI-format request (as :meth:`Session.build_request` returns it) → the Messages
    API's ``system`` string and ``messages`` list.

    The chat declares no tools, and the API refuses ``tool_use`` blocks without tools, so
    tool calls and results of a resumed or imported session are shown as text.  Roles
    alternate strictly (neighbours of one role are joined), the first message is ``user``
    and no text block is empty — the API's own rules.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in request:
        role = message.get("role")
        if role == "system":
            text = text_of(message).strip()
            if text:
                system.append(text)
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        blocks = _blocks(message) or [{"type": "text", "text": "(empty)"}]
        if out and out[-1]["role"] == wire_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": wire_role, "content": blocks})
    if not out or out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [
            {"type": "text", "text": "(the conversation continues)"}]})
    return "\n\n".join(system), out
