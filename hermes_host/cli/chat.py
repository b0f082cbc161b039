"""``hermes-host chat``: an interactive session with a real model (R-12.1, R-14.5).

The terminal part only: read lines with ``input()``, print with rich, and hand every line to
:class:`hermes_host.chat.ChatController`.  The model comes from the ``model.provider`` plugin
(``anthropic`` by default, ``openai`` for any OpenAI-compatible server).  Without the API key
the command says which variable to set and exits 2; a bad config, store or unknown session is
a one-line error too (exit 2, or 1 for a session that does not exist), never a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import click
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hermes_host.chat import DEFAULT_SYSTEM_PROMPT, ChatController, ChatModel
from hermes_host.host import ContextHost
from hermes_host.llm.base import SummaryError
from hermes_host.llm.providers import load_provider
from hermes_host.plugins import PluginError
from hermes_host.store import SessionNotFoundError, StoreError

from .config_cmd import config_option, fail, load_config_or_fail
from .output import console as shared_console

__all__ = ["RichChatUI", "chat"]

PROMPT = "you> "


class RichChatUI:
    """:class:`hermes_host.chat.ChatUI` on a rich console."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or shared_console(highlight=False)
        self._streaming = False
        """A streamed answer's line is open (ended by reply_end, or by any other output)."""
        self._column = 0
        """Where the streamed answer's cursor is, in terminal cells."""

    def reply(self, text: str) -> None:
        self._end_stream()
        self.console.print(Text("assistant> ", style="bold cyan") + Text(text))

    def reply_chunk(self, text: str) -> None:
        """Print the next piece of a streamed answer at once, on the answer's line; a word
        that would cross the right edge starts the next line (as rich wraps a whole reply),
        unless it is wider than the screen."""
        if not self._streaming:
            self._streaming = True
            self._column = cell_len("assistant> ")
            self.console.print(Text("assistant> ", style="bold cyan"), end="")
        width = self.console.width
        out: list[str] = []
        for token in re.findall(r"\n|[^\S\n]+|\S+", text):
            if token == "\n":
                out.append(token)
                self._column = 0
                continue
            size = cell_len(token)
            if self._column + size > width and self._column > 0:
                if token.isspace():  # a space at the edge becomes the line break
                    out.append("\n")
                    self._column = 0
                    continue
                out.append("\n")
                self._column = 0
            out.append(token)
            self._column += size
        self.console.print(Text("".join(out)), end="", soft_wrap=True)
        self.console.file.flush()

    def reply_end(self, text: str) -> None:
        if not self._streaming:  # nothing arrived
            self.reply(text if text.strip() else "(the model returned no text)")
            return
        self._end_stream()

    def _end_stream(self) -> None:
        if self._streaming:
            self._streaming = False
            self.console.print()

    def info(self, text: str) -> None:
        self._end_stream()
        self.console.print(Text(text, style="dim"))

    def event(self, text: str) -> None:
        self._end_stream()
        self.console.print(Text(text, style="yellow"))

    def error(self, text: str) -> None:
        self._end_stream()  # an answer broken off keeps what arrived, on its own line
        self.console.print(Text(text, style="bold red"))

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self._end_stream()
        table = Table(*columns, title=title, title_justify="left")
        for row in rows:
            table.add_row(*row)
        self.console.print(table)


@click.command("chat")
@config_option
@click.option(
    "--store", "store_path", metavar="PATH|URL", default=None,
    help="Store to use: a state.db path or a store URL (default: the configured store, "
    "$HERMES_HOST_HOME/state.db).",
)
@click.option("--resume", "resume_by", default=None, metavar="ID|TITLE",
              help="Continue a stored session (a title finds the newest of its lineage).")
@click.option("-c", "--continue", "continue_last", is_flag=True,
              help="Continue the most recently active session.")
@click.option("--title", default=None, help="Title of a new session.")
@click.option("--system", "system_prompt", default=None,
              help="System prompt of a new session (default: a short assistant prompt).")
@click.option("--no-restore-cwd", is_flag=True,
              help="On resume, stay in the current directory instead of the recorded one.")
@click.option("--no-stream", is_flag=True,
              help="Print each answer when it is complete instead of as it arrives (for a "
              "server that cannot stream).")
def chat(
    config_path: Path | None,
    store_path: str | None,
    resume_by: str | None,
    continue_last: bool,
    title: str | None,
    system_prompt: str | None,
    no_restore_cwd: bool,
    no_stream: bool,
) -> None:
    """Chat with the configured model; the host keeps everything and compresses.

    model.provider picks the API: anthropic (default; needs ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL selects another endpoint) or openai (any OpenAI-compatible server:
    model.base_url, key from OPENAI_API_KEY or model.api_key_env).  Answers are streamed
    as they arrive (--no-stream waits for the whole answer).  Type /help in the chat
    for the slash commands (/compress, /undo, /branch, /status, /resume…); /quit or Ctrl-D
    leaves.  The session stays in the store: resume it with --resume or -c.
    """
    if resume_by and continue_last:
        fail("error: use either --resume ID|TITLE or -c/--continue, not both")
    config, _ = load_config_or_fail(config_path)
    try:
        model: ChatModel = load_provider(config.model.provider).chat_model(
            config.model, os.environ)
    except SummaryError as exc:  # ProviderError: unknown provider, missing key…
        fail(f"error: hermes-host chat: {exc}")
    try:
        host = ContextHost.from_config(config, store=store_path)
    except (PluginError, StoreError) as exc:
        fail(f"error: {exc}")
    ui = RichChatUI()
    prompt = system_prompt if system_prompt is not None else DEFAULT_SYSTEM_PROMPT
    try:
        by = "last" if continue_last else resume_by
        try:
            session = host.resume(by) if by else host.open_session(title, prompt)
        except SessionNotFoundError as exc:
            fail(f"error: {exc}", 1)
        except StoreError as exc:
            fail(f"error: {exc}")
        controller = ChatController(
            host, session, model, ui, system_prompt=prompt, restore_cwd=not no_restore_cwd,
            stream=not no_stream,
        )
        ui.info(f"hermes-host chat · session {session.id} · model {config.model.name} "
                f"({model.provider}) · "
                f"context {config.model.context_length:,} tokens · /help for commands")
        if by:
            ui.info(host.store.recap(session.id))
            controller.restore_working_directory()
        _loop(controller, ui)
    finally:
        closer = getattr(model, "close", None)
        if callable(closer):
            closer()
        host.close()


def _loop(controller: ChatController, ui: RichChatUI) -> None:
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            ui.console.print()
            break
        except KeyboardInterrupt:
            ui.console.print()
            ui.info("(Ctrl-D or /quit leaves)")
            continue
        try:
            if not controller.handle(line):
                break
        except KeyboardInterrupt:
            ui.error("interrupted; what was already said is stored")
        except StoreError as exc:
            ui.error(f"store error: {exc}")
    sid = controller.session.id
    ui.info(f"session {sid} is saved; continue with: hermes-host chat --resume {sid}")
