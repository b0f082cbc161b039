"""``hermes-host chat`` on the Anthropic Messages API: the wire conversion
(:func:`to_anthropic`) and :class:`AnthropicChatModel` on the real ``anthropic`` SDK (imported
when a model is built, so ``hermes-host --help`` stays light)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_host.chat.model import ModelError, ModelReply, unreachable
from hermes_host.llm.anthropic_summarizer import classify_status_error
from hermes_host.llm.anthropic_wire import to_anthropic
from hermes_host.models import Message

__all__ = ["AnthropicChatModel", "to_anthropic"]


class AnthropicChatModel:
    """The Messages API through the real ``anthropic`` SDK.

    The key is given explicitly (the CLI reads ``ANTHROPIC_API_KEY``); the endpoint is
    ``base_url``, else the SDK's own ``ANTHROPIC_BASE_URL`` handling.  Errors carry only the
    HTTP status and the API's error type, or the URL that could not be reached (without
    credentials) — never the key or the prompt."""

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
        self._timeout = timeout
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
        except anthropic.APIConnectionError as exc:  # APITimeoutError included
            raise unreachable("anthropic", exc, self._client.base_url, self._timeout) from None
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ModelError(f"anthropic: request failed ({type(exc).__name__})") from None
        text = "".join(
            getattr(b, "text", "") or "" for b in response.content or []
            if getattr(b, "type", None) == "text"
        )
        return ModelReply(text=text, usage=response.usage, stop_reason=response.stop_reason)
