"""What the chat controller needs from a model, whichever provider serves it: the
:class:`ChatModel` protocol, its :class:`ModelReply` and :class:`ModelError`, and the text
form of tool calls and results every provider's wire uses (the chat declares no tools, so a
resumed or imported session's tool traffic is shown as text)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_host.llm.base import shown_url
from hermes_host.messages import text_of
from hermes_host.models import Message


class ModelError(Exception):
    """The model call failed; ``str()`` is safe to show (status and error type only, and
    the URL it could not reach, without credentials)."""


def unreachable(provider: str, exc: BaseException, base_url: object,
                timeout: float) -> ModelError:
    """The one-line error for a server that did not answer: it names the URL the request
    went to (the SDK's request, else the client's base URL), as :func:`shown_url` shows it.
    ``exc`` is the SDK's connection or timeout error."""
    request = getattr(exc, "request", None)
    url = shown_url(getattr(request, "url", None) or base_url)
    if "Timeout" in type(exc).__name__:
        return ModelError(f"{provider}: no answer from {url} within {timeout:g}s "
                          f"({type(exc).__name__})")
    return ModelError(f"{provider}: cannot reach {url}: connection failed "
                      f"({type(exc).__name__})")


@dataclass
class ModelReply:
    text: str
    usage: Any = None
    """The provider's usage object (``input_tokens``, ``output_tokens``…), for end_turn."""
    stop_reason: str | None = None


class ChatModel(Protocol):
    """What the controller needs from a model."""

    name: str
    provider: str
    """The model provider's name (``anthropic``, ``openai``…), shown by ``/status``."""

    def respond(self, request: Sequence[Message], max_tokens: int) -> ModelReply:
        """Answer an OpenAI-format request (as :meth:`Session.build_request` returns it)."""
        ...


class StreamingChatModel(ChatModel, Protocol):
    """A model that can also stream: :meth:`respond_stream` hands each piece of the answer's
    text to ``on_text`` as it arrives, then returns the whole reply as :meth:`respond`
    does.  The controller streams when the model and the UI both can."""

    def respond_stream(self, request: Sequence[Message], max_tokens: int,
                       on_text: Callable[[str], None]) -> ModelReply:
        ...


def tool_result_text(message: Message) -> str:
    """A ``tool`` message as text: ``[tool result: NAME]`` and its output."""
    label = message.get("name") or message.get("tool_call_id") or "tool"
    return f"[tool result: {label}]\n{text_of(message)}"


def tool_call_texts(message: Message) -> list[str]:
    """An assistant message's tool calls as text: ``[called NAME(ARGUMENTS)]`` each."""
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            out.append(f"[called {fn.get('name')}({fn.get('arguments', '')})]")
    return out
