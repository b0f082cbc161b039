"""The ``hermes-host chat`` REPL, without the terminal: command parsing, turns, slash commands.

Why separate from :mod:`hermes_host.cli.chat`: everything here takes a line and reports
through a small :class:`ChatUI` protocol, so it can be driven by a test, another front end,
or the terminal loop alike.  The model is behind :class:`ChatModel`, built by the
``model.provider`` plugin: :class:`AnthropicChatModel` (the ``anthropic`` SDK, here) or
:class:`hermes_host.chat.openai_model.OpenAIChatModel` (the ``openai`` SDK, its own module).

A turn (:meth:`ChatController.send`)::

    session.add_user(line) → session.build_request()
    → model.respond(request, max_tokens)  (each model converts to its own wire format)
    → session.add_assistant(text)
    → session.end_turn(usage) → show outcome.events (R-10.4 markers, compaction notes)
    → one warning line if an engine hook failed during the turn (``/status`` lists them all)

Slash commands (R-12.1) are listed in :data:`COMMANDS`; ``/help`` prints them.
"""

from __future__ import annotations

from hermes_host.chat.anthropic_model import AnthropicChatModel, to_anthropic
from hermes_host.chat.commands import (
    COMMANDS,
    Command,
    CommandError,
    CommandSpec,
    CompressArgs,
    parse_command,
    parse_compress_args,
)
from hermes_host.chat.controller import (
    DEFAULT_MAX_TOKENS as DEFAULT_MAX_TOKENS,
)
from hermes_host.chat.controller import (
    DEFAULT_SYSTEM_PROMPT,
    ChatController,
)
from hermes_host.chat.model import ChatModel, ModelError, ModelReply
from hermes_host.chat.ui import ChatUI
from hermes_host.messages import turn_starts

__all__ = [
    "COMMANDS",
    "DEFAULT_SYSTEM_PROMPT",
    "AnthropicChatModel",
    "ChatController",
    "ChatModel",
    "ChatUI",
    "Command",
    "CommandError",
    "CommandSpec",
    "CompressArgs",
    "ModelError",
    "ModelReply",
    "parse_command",
    "parse_compress_args",
    "to_anthropic",
    "turn_starts",
]
