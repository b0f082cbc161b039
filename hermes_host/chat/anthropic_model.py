"""``hermes-host chat`` on the Anthropic Messages API: the wire conversion
(:func:`to_anthropic`) and :class:`AnthropicChatModel` on the real ``anthropic`` SDK (imported
when a model is built, so ``hermes-host --help`` stays light)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
        try:
            response = self._client.messages.create(**self._params(system, messages, max_tokens))
        except Exception as exc:
            raise self._failure(exc) from None
        return self._reply(response)

    def respond_stream(self, request: Sequence[Message], max_tokens: int,
                       on_text: Callable[[str], None]) -> ModelReply:
        """:meth:`respond` over ``messages.stream``: each text delta goes to ``on_text`` as
        it arrives; the final message gives the usage and stop reason."""
        system, messages = to_anthropic(request)
        try:
            with self._client.messages.stream(
                **self._params(system, messages, max_tokens)
            ) as stream:
                for text in stream.text_stream:
                    on_text(text)
                response = stream.get_final_message()
        except Exception as exc:
            raise self._failure(exc) from None
        return self._reply(response)

    def _params(self, system: str, messages: list[dict[str, Any]],
                max_tokens: int) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.name, "max_tokens": max_tokens, "messages": messages,
        }
        if system:
            params["system"] = system
        return params

    def _failure(self, exc: Exception) -> ModelError:
        """Any failure of an SDK call as a one-line, key-free :class:`ModelError`."""
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            return ModelError(str(classify_status_error(exc)))
        if isinstance(exc, anthropic.APIConnectionError):  # APITimeoutError included
            return unreachable("anthropic", exc, self._client.base_url, self._timeout)
        if isinstance(exc, anthropic.AnthropicError | ValueError):
            return ModelError(f"anthropic: request failed ({type(exc).__name__})")
        # a stream cut off mid-answer surfaces as the transport's own error
        return ModelError(f"anthropic: the answer broke off ({type(exc).__name__})")

    @staticmethod
    def _reply(response: Any) -> ModelReply:
        text = "".join(
            getattr(b, "text", "") or "" for b in response.content or []
            if getattr(b, "type", None) == "text"
        )
        return ModelReply(text=text, usage=response.usage, stop_reason=response.stop_reason)
