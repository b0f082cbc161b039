"""``hermes-host chat`` on an OpenAI-compatible server: the Chat Completions wire format.

:class:`OpenAIChatModel` is what the ``openai`` model provider builds for ``model.provider:
openai`` (see :mod:`hermes_host.llm.providers`); the REPL itself is
:mod:`hermes_host.chat.controller`.
The chat declares no tools, so :func:`to_openai` shows the tool calls and results of a resumed
or imported session as text (a server may refuse ``tool`` messages without ``tools``), drops
the host's ``_`` metadata keys and empty messages, and keeps text and image parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_host.chat.model import (
    ModelError,
    ModelReply,
    tool_call_texts,
    tool_result_text,
    unreachable,
)
from hermes_host.llm.openai_summarizer import is_reasoning_model, sdk_error
from hermes_host.messages import text_of
from hermes_host.models import Message

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChatModel", "to_openai", "usage_of"]


def _parts(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "image_url" and part.get("image_url"):
            parts.append({"type": "image_url", "image_url": part["image_url"]})
        elif isinstance(part.get("text"), str) and part["text"].strip():
            parts.append({"type": "text", "text": part["text"]})
    if parts and all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def to_openai(request: Sequence[Message]) -> list[dict[str, Any]]:
    """An OpenAI-format request from :meth:`Session.build_request` → tool-less wire messages."""
    out: list[dict[str, Any]] = []
    for message in request:
        role = message.get("role")
        if role == "tool":
            out.append({"role": "user", "content": tool_result_text(message)})
            continue
        content = _parts(message.get("content"))
        if role == "assistant":
            text = text_of(message) if not isinstance(content, str) else content
            shown = tool_call_texts(message)
            content = "\n".join(t for t in [text, *shown] if t and t.strip())
        wire_role = role if role in ("system", "assistant") else "user"
        if content:
            out.append({"role": wire_role, "content": content})
    return out


def usage_of(usage: Any) -> dict[str, int] | None:
    """The provider-reported usage in the host's names (prompt, completion, cached and
    reasoning tokens), for :meth:`Session.end_turn`."""
    if usage is None:
        return None

    def num(obj: Any, name: str) -> int:
        value = getattr(obj, name, None) if obj is not None else None
        return int(value) if isinstance(value, int) else 0

    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return {
        "prompt_tokens": num(usage, "prompt_tokens"),
        "completion_tokens": num(usage, "completion_tokens"),
        "cache_read_tokens": num(prompt_details, "cached_tokens"),
        "reasoning_tokens": num(completion_details, "reasoning_tokens"),
    }


class OpenAIChatModel:
    """Chat Completions through the real ``openai`` SDK.  Errors carry only the HTTP status
    and the API's error type — never the key or the prompt."""

    provider = "openai"

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
        import openai

        self.name = name
        self.base_url = base_url
        self._timeout = timeout
        self._client: openai.OpenAI = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=dict(headers or {}) or None,
        )

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatModel(name={self.name!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the SDK client's connection pool."""
        self._client.close()

    def respond(self, request: Sequence[Message], max_tokens: int) -> ModelReply:
        try:
            response = self._client.chat.completions.create(**self._params(request, max_tokens))
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError):
            raise ModelError("openai: malformed response (no choices)") from None
        except Exception as exc:  # every SDK failure becomes a one-line, key-free error
            raise self._failure(exc) from None
        return ModelReply(text=text, usage=usage_of(response.usage), stop_reason=finish)

    def respond_stream(self, request: Sequence[Message], max_tokens: int,
                       on_text: Callable[[str], None]) -> ModelReply:
        """:meth:`respond` with ``stream=True``: each content delta goes to ``on_text`` as it
        arrives; the usage comes from the last chunk (``stream_options.include_usage``)."""
        params = self._params(request, max_tokens)
        params.update(stream=True, stream_options={"include_usage": True})
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        try:
            with self._client.chat.completions.create(**params) as stream:
                for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or []:
                        piece = choice.delta.content if choice.delta is not None else None
                        if piece:
                            parts.append(piece)
                            on_text(piece)
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except (AttributeError, TypeError):
            raise ModelError("openai: malformed stream chunk") from None
        except Exception as exc:
            raise self._failure(exc) from None
        return ModelReply(text="".join(parts), usage=usage_of(usage), stop_reason=finish)

    def _params(self, request: Sequence[Message], max_tokens: int) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.name, "messages": to_openai(request)}
        params["max_completion_tokens" if is_reasoning_model(self.name) else "max_tokens"] = (
            max_tokens
        )
        return params

    def _failure(self, exc: Exception) -> ModelError:
        import openai

        if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
            return unreachable("openai", exc, self._client.base_url, self._timeout)
        return ModelError(str(sdk_error(exc, self._timeout)))
