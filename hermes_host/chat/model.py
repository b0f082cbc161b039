"""What the chat controller needs from a model, whichever provider serves it: the
:class:`ChatModel` protocol, its :class:`ModelReply` and :class:`ModelError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_host.models import Message


class ModelError(Exception):
    """The model call failed; ``str()`` is safe to show (status and error type only)."""


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
