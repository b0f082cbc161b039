"""The chat controller: a line becomes a turn or a slash command, reported through the
:class:`ChatUI` protocol (the terminal, a test or another front end)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from hermes_host.chat.commands import (
    COMMANDS,
    Command,
    CommandError,
    parse_command,
    parse_compress_args,
)
from hermes_host.chat.model import ChatModel, ModelError, ModelReply
from hermes_host.chat.status import status_lines
from hermes_host.chat.ui import ChatUI
from hermes_host.fence import HookHealth
from hermes_host.host import CompressionReport, ContextHost, Session, TurnOutcome
from hermes_host.messages import is_summary, one_line, text_of, turn_starts
from hermes_host.models import Message
from hermes_host.session.bound import reply_reservation
from hermes_host.store import StoreError, TitleConflictError

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant talking with a developer in a terminal. Answer concisely."
)
"""The system prompt of a new chat session unless ``--system`` gives another."""

DEFAULT_MAX_TOKENS = 4096
"""Used when ``model.max_output_tokens`` is 0 (the Messages API requires a positive value)."""


# --------------------------------------------------------------------------- controller


@dataclass
class ChatController:
    """Drives one chat: messages become turns, slash commands act on the host and store.

    ``session`` changes on ``/new``, ``/branch``, ``/resume``, ``/undo`` and when a
    compression rotates the session (the host updates the id in place then).
    """

    host: ContextHost
    session: Session
    model: ChatModel
    ui: ChatUI
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    restore_cwd: bool = True
    stream: bool = True
    """Stream the answer when the model and the UI both can (``respond_stream`` and
    ``reply_chunk``/``reply_end``); ``hermes-host chat --no-stream`` turns it off."""
    history: list[str] = field(default_factory=list)
    """Session ids this controller has worked on, oldest first."""
    last_outcome: TurnOutcome | None = None
    """What the last :meth:`Session.end_turn` decided (shown by ``/status``)."""
    _skip_warned: set[tuple[str, str]] = field(default_factory=set, init=False, repr=False)
    """Plugin hooks whose open breaker was already reported (see :meth:`send`)."""
    _said: list[str] = field(default_factory=list, init=False, repr=False)
    """The event lines shown during the current turn (see :meth:`_warn`)."""

    def __post_init__(self) -> None:
        self.history.append(self.session.id)
        self.session.export_id()

    @property
    def max_tokens(self) -> int:
        """The reply's ``max_tokens``: the tokens the request bound keeps free for it, so
        request + reply fit the window (a ``max_output_tokens`` over half a small window
        is capped there, issue 28)."""
        model = self.host.config.model
        reserved = reply_reservation(model.context_length, model.max_output_tokens)
        if reserved:
            return reserved
        # max_output_tokens 0 reserves nothing: the reply gets what the request left
        room = model.context_length - (self.session.last_request_tokens or 0)
        return max(1, min(DEFAULT_MAX_TOKENS, room))

    # -- input ----------------------------------------------------------------------------

    def handle(self, line: str) -> bool:
        """Handle one input line; ``False`` means the user asked to quit."""
        try:
            command = parse_command(line)
        except CommandError as exc:
            self.ui.error(str(exc))
            return True
        if command is None:
            text = line.strip()
            if text.startswith("//"):
                text = text[1:]  # "//etc" sends "/etc"
            if text:
                self.send(text)
            return True
        if command.name == "quit":
            return False
        handler = getattr(self, f"cmd_{command.name}")
        try:
            handler(command)
        except CommandError as exc:
            self.ui.error(str(exc))
        except StoreError as exc:
            self.ui.error(f"/{command.name} failed: {exc}")
        return True

    def send(self, text: str) -> None:
        """One turn: store the user text, ask the model, store the answer, end the turn.

        An engine hook that fails during the turn (raised, timed out, answered something
        invalid, or skipped by its breaker) is one warning line, on this turn."""
        self._said = []
        with self.host.runner.recording() as seen:
            try:
                self._turn(text)
            finally:
                self._warn(self.host.runner.with_breakers(seen.problems()))

    def _warn(self, rows: Sequence[HookHealth]) -> None:
        """One line for the engine problems of a turn.  Skips by an open breaker are shown
        once per opening, not on every turn it stays open."""
        for row in rows:
            if row.breaker in (None, "closed"):
                self._skip_warned.discard((row.plugin, row.hook))
        fresh = [r for r in rows
                 if r.problems > r.skipped or (r.plugin, r.hook) not in self._skip_warned]
        # a failure an event line of this turn already named ("compression failed, session
        # unchanged: plugin … raised …") is not printed a second time (issue 30)
        fresh = [r for r in fresh
                 if not (r.last_error and any(r.last_error in said for said in self._said))]
        if not fresh:
            return
        self._skip_warned.update((r.plugin, r.hook) for r in fresh
                                 if r.breaker not in (None, "closed"))
        first = fresh[0]
        line = f"engine problem this turn: {first.last_error}"
        if first.breaker not in (None, "closed"):
            line += f" [breaker {first.breaker}]"
        if len(fresh) > 1:
            others = ", ".join(f"{r.plugin}.{r.hook}" for r in fresh[1:])
            line += f" (also {others})"
        self.ui.error(line + "; /status shows every engine problem")

    def _ask(self, request: list[Message]) -> tuple[ModelReply, bool]:
        """The model's reply, streamed to the UI piece by piece when both can (``True``)."""
        stream = getattr(self.model, "respond_stream", None)
        chunk = getattr(self.ui, "reply_chunk", None)
        if self.stream and callable(stream) and callable(chunk) and callable(
                getattr(self.ui, "reply_end", None)):
            return stream(request, self.max_tokens, chunk), True
        return self.model.respond(request, self.max_tokens), False

    def _turn(self, text: str) -> None:
        session = self.session
        session.add_user(text)
        try:
            events = len(session.events)
            request = session.build_request()
            for line in session.events[events:]:  # the request bound's warning (issue 28)
                self._event(line)
            reply, streamed = self._ask(request)
        except ModelError as exc:
            self.ui.error(f"model call failed: {exc}. Your message is stored; send another "
                          "message to continue.")
            return
        session.add_assistant(reply.text)
        if streamed:
            self.ui.reply_end(reply.text)  # type: ignore[attr-defined]  # checked in _ask
        else:
            self.ui.reply(reply.text if reply.text.strip() else "(the model returned no text)")
        if reply.stop_reason in ("max_tokens", "length"):
            self.ui.info(f"(the answer was cut at max_tokens={self.max_tokens}; "
                         "raise model.max_output_tokens for longer answers)")
        before = session.id
        # Show the markers while the compaction runs, not after it (a front end's
        # "Summarizing…" state instead of a silent pause).
        shown: list[str] = []

        def live(line: str) -> None:
            shown.append(line)
            self._event(line)

        session.on_event = live
        try:
            outcome = session.end_turn(reply.usage)
        finally:
            session.on_event = None
        self.last_outcome = outcome
        for line in outcome.events[len(shown):]:
            self._event(line)
        if session.id != before:
            self.history.append(session.id)
            self.ui.info(f"session continues as {session.id} (compressed from {before})")

    # -- slash commands ---------------------------------------------------------------------

    def cmd_help(self, command: Command) -> None:
        lines = ["Commands:"]
        for spec in COMMANDS:
            names = "/" + spec.name + "".join(f", /{a}" for a in spec.aliases)
            usage = f" {spec.usage}" if spec.usage else ""
            lines.append(f"  {names}{usage}\n      {spec.help}")
        lines.append("Anything else is sent to the model (start with // to send a leading /).")
        self.ui.info("\n".join(lines))

    def cmd_compress(self, command: Command) -> None:
        args = parse_compress_args(command.args)
        session = self.session
        before_events = len(session.events)
        window_before = [m for m in session.window() if m.get("role") != "system"]
        report = session.compress(
            force=True, focus=args.focus, keep_last_turns=args.keep_last_turns,
            preview=args.preview,
        )
        if args.preview:
            # The markers announce a real compaction; a preview shows its own lines.
            self._show_preview(report.proposed or [], window_before, report)
            return
        for line in session.events[before_events:]:
            self.ui.event(line)
        saved = report.tokens_before - report.tokens_after
        pct = f"{saved / report.tokens_before:.0%}" if report.tokens_before else "0%"
        if report.status == "committed":
            self.ui.info(f"compressed: {report.tokens_before:,} → {report.tokens_after:,} "
                         f"tokens (-{pct}, {report.outcome}, {report.llm_calls} LLM call(s)); "
                         f"session {report.session_id}")
            if report.session_id not in self.history:
                self.history.append(report.session_id)
        elif not report.message:
            self.ui.info(f"compression {report.status} ({report.outcome})")

    def _show_preview(
        self, proposed: list[Message], window_before: list[Message], report: CompressionReport
    ) -> None:
        kept = [m for m in proposed if m.get("role") != "system"]
        kept_set = {_key(m) for m in kept}
        before_set = {_key(m) for m in window_before}
        summarised = [m for m in window_before if _key(m) not in kept_set]
        saved = report.tokens_before - report.tokens_after
        pct = f"{saved / report.tokens_before:.0%}" if report.tokens_before else "0%"
        lines = [
            f"preview ({report.status}, {report.outcome}; nothing was committed): "
            f"{report.tokens_before:,} → {report.tokens_after:,} tokens (-{pct}), "
            f"{report.llm_calls} LLM call(s)",
            f"would summarise {len(summarised)} of {len(window_before)} messages:",
        ]
        for message in summarised[:8]:
            lines.append(f"  - {message.get('role')}: {one_line(text_of(message), 70)}")
        if len(summarised) > 8:
            lines.append(f"  … and {len(summarised) - 8} more")
        summary = next((m for m in kept if is_summary(m) and _key(m) not in before_set), None)
        if summary is not None:
            body = text_of(summary).split("\n\n", 1)[-1]  # past the prefix
            lines.append(f"new summary ({len(text_of(summary)):,} chars) starts: "
                         f"{one_line(body, 160)}")
        if report.outcome not in ("summarised", "fallback", "dropped"):
            why = "; ".join(report.notes) or "the engine proposed no change"
            lines.append(f"nothing to commit: {why}")
        else:
            lines.append(f"would keep {len(kept)} messages; run /compress without --preview "
                         "to commit")
        self.ui.info("\n".join(lines))

    def cmd_new(self, command: Command) -> None:
        old = self.session.id
        name = command.raw_args or None
        self.session = self.session.reset("new", system_prompt=self.system_prompt)
        self._switched()
        problem = None
        if name:
            try:
                self._set_title(name)
            except CommandError as exc:
                problem = str(exc)
        self.ui.info(f"new session {self.session.id}"
                     + (f" “{self.session.title}”" if self.session.title else "")
                     + f"; {old} is kept in the store")
        if problem:
            self.ui.error(f"{problem}; set another with /title NAME")

    def cmd_undo(self, command: Command) -> None:
        count = 1
        if command.args:
            if not command.args[0].isdigit() or int(command.args[0]) < 1:
                raise CommandError("/undo N: N must be a positive number of turns")
            count = int(command.args[0])
        session = self.session
        turns = len(turn_starts(session.raw_window))
        if not turns:
            self.ui.info("nothing to undo: the window holds no user turn")
            return
        count = min(count, turns)
        # The rows are archived (active=0), never deleted.
        removed = session.undo(count)
        self.ui.info(f"undid {count} turn(s): {removed} message(s) left the window (still in "
                     f"the store); {len(session.raw_window)} remain")

    def cmd_branch(self, command: Command) -> None:
        parent = self.session
        try:
            fork = parent.branch(command.raw_args or None)
        except TitleConflictError as exc:
            raise CommandError(f"/branch: {exc}") from None
        self.session = fork
        self._switched()
        self.ui.info(f"branched: session {fork.id}"
                     + (f" “{fork.title}”" if fork.title else "")
                     + f" (parent {parent.id}, {len(fork.raw_window)} messages copied)")

    def cmd_status(self, command: Command) -> None:
        row = self.host.store.get_session(self.session.id)
        self.ui.info("\n".join(
            status_lines(self.session, row, provider=self.model.provider,
                         last_outcome=self.last_outcome)))

    def cmd_resume(self, command: Command) -> None:
        if not command.raw_args:
            self.cmd_sessions(command)
            self.ui.info("usage: /resume NAME|ID")
            return
        try:
            session = self.host.resume(command.raw_args)
        except StoreError as exc:
            raise CommandError(f"/resume: {exc}") from None
        self.session = session
        self._switched()
        self.ui.info(self.host.store.recap(session.id))
        self.restore_working_directory()

    def cmd_sessions(self, command: Command) -> None:
        table = []
        for conversation in self.host.store.list_conversations(limit=20):
            row = conversation.tip  # a conversation is shown by the session holding its window
            mark = "*" if row.id == self.session.id else ""
            state = f"ended: {row.end_reason}" if row.ended_at is not None else "open"
            table.append([mark, row.id, row.title or "", f"{row.active_count}/"
                          f"{conversation.message_count}", str(row.compression_count),
                          str(conversation.rotations), state])
        self.ui.table("Conversations (most recent first; * = this one)",
                      ["", "id", "title", "window/stored", "compressions", "rotations",
                       "status"], table)

    def cmd_title(self, command: Command) -> None:
        if not command.raw_args:
            self.ui.info(f"title: {self.session.title or '(none)'}")
            return
        self._set_title(command.raw_args)
        self.ui.info(f"title set: {self.session.title}")

    # -- helpers --------------------------------------------------------------------------

    def _event(self, line: str) -> None:
        self._said.append(line)
        self.ui.event(line)

    def _set_title(self, name: str) -> None:
        try:
            self.session.set_title(name)
        except TitleConflictError as exc:
            raise CommandError(f"title not set: {exc}") from None

    def _switched(self) -> None:
        self.session.export_id()
        if self.session.id not in self.history:
            self.history.append(self.session.id)

    def restore_working_directory(self) -> None:
        """R-8.3: go back to the session's recorded working directory (opt-out)."""
        cwd = self.session.cwd
        if not self.restore_cwd or not cwd or cwd == os.getcwd():
            return
        if os.path.isdir(cwd):
            os.chdir(cwd)
            self.ui.info(f"working directory: {cwd}")
        else:
            self.ui.info(f"recorded working directory {cwd} no longer exists; staying here")


def _key(message: Message) -> str:
    return json.dumps(
        {k: v for k, v in message.items() if not str(k).startswith("_")},
        sort_keys=True, default=str,
    )
