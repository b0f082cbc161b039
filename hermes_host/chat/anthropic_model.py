"""``hermes-host chat`` on the Anthropic Messages API: the wire conversion
(:func:`to_anthropic`) and :class:`AnthropicChatModel` on the real ``anthropic`` SDK (imported
when a model is built, so ``hermes-host --help`` stays light)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_host.chat.model import ModelError, ModelReply, tool_call_texts, tool_result_text
from hermes_host.llm.anthropic_summarizer import classify_status_error
from hermes_host.messages import text_of
from hermes_host.models import Message


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



class AnthropicChatModel:
    """The Messages API through the real ``anthropic`` SDK.

    The key is given explicitly (the CLI reads ``ANTHROPIC_API_KEY``); the endpoint is
    ``base_url``, else the SDK's own ``ANTHROPIC_BASE_URL`` handling.  Errors carry only the
    HTTP status and the API's error type — never the key or the prompt."""

    provider = "anthropic"

    def __init__(
        self,
        name: str,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 2,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        import anthropic

        self.name = name
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=dict(headers or {}) or None,
        )

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicChatModel(name={self.name!r})"

    def close(self) -> None:
        """Close the SDK client's connection pool."""
        self._client.close()

    def respond(self, request: Sequence[Message], max_tokens: int) -> ModelReply:
        system, messages = to_anthropic(request)
        return self.complete(system, messages, max_tokens)

    def complete(
        self, system: str, messages: list[dict[str, Any]], max_tokens: int
    ) -> ModelReply:
        import anthropic

        params: dict[str, Any] = {
            "model": self.name, "max_tokens": max_tokens, "messages": messages,
        }
        if system:
            params["system"] = system
        try:
            response = self._client.messages.create(**params)
        except anthropic.APIStatusError as exc:
            raise ModelError(str(classify_status_error(exc))) from None
        except anthropic.APITimeoutError:
            raise ModelError("anthropic: request timed out (APITimeoutError)") from None
        except anthropic.APIConnectionError:
            raise ModelError("anthropic: connection failed (APIConnectionError)") from None
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ModelError(f"anthropic: request failed ({type(exc).__name__})") from None
        text = "".join(
            getattr(b, "text", "") or "" for b in response.content or []
            if getattr(b, "type", None) == "text"
        )
        return ModelReply(text=text, usage=response.usage, stop_reason=response.stop_reason)
