"""The ``hermes-host chat`` REPL, without the terminal: command parsing, turns, slash commands.

Why separate from :mod:`hermes_host.cli.chat`: everything here takes a line and reports
through a small :class:`ChatUI` protocol, so it can be driven by a test, another front end,
or the terminal loop alike.  The model is behind :class:`ChatModel`, built by the
``model.provider`` plugin: :class:`AnthropicChatModel` (the ``anthropic`` SDK, here) or
:class:`hermes_host.chat_openai.OpenAIChatModel` (the ``openai`` SDK, its own module).

A turn (:meth:`ChatController.send`)::

    session.add_user(line) → session.build_request()
    → model.respond(request, max_tokens)  (each model converts to its own wire format)
    → session.add_assistant(text)
    → session.end_turn(usage) → show outcome.events (R-10.4 markers, compaction notes)
    → one warning line if an engine hook failed during the turn (``/status`` lists them all)

Slash commands (R-12.1) are listed in :data:`COMMANDS`; ``/help`` prints them.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hermes_host.fence import HookHealth
from hermes_host.host import CompressionReport, ContextHost, Session, TurnOutcome
from hermes_host.llm.anthropic_summarizer import classify_status_error
from hermes_host.messages import is_summary, one_line, text_of, turn_starts
from hermes_host.models import Message
from hermes_host.store import StoreError, TitleConflictError

if TYPE_CHECKING:  # imported when a model is built, so `hermes-host --help` stays light
    pass

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

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant talking with a developer in a terminal. Answer concisely."
)
"""The system prompt of a new chat session unless ``--system`` gives another."""

DEFAULT_MAX_TOKENS = 4096
"""Used when ``model.max_output_tokens`` is 0 (the Messages API requires a positive value)."""


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class CommandSpec:
    """One slash command: its name, aliases, argument synopsis and one-line help."""

    name: str
    usage: str
    help: str
    aliases: tuple[str, ...] = ()


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("compress", "[here [N]] [--preview] [focus…]",
                "compress now (clears the cooldown); `here N` keeps the last N turns; "
                "--preview shows the effect without committing; words favour a topic",
                ("compact",)),
    CommandSpec("new", "[name]", "end this session and start a fresh one", ("reset",)),
    CommandSpec("undo", "[N]", "remove the last N turns (default 1) from the window; the "
                "store keeps them"),
    CommandSpec("branch", "[name]", "fork: a new session whose parent is this one, with this "
                "window copied", ("fork",)),
    CommandSpec("status", "", "session, model, context use, compressions, select_context"),
    CommandSpec("resume", "[name|id]", "switch to a stored session and show its recap"),
    CommandSpec("sessions", "", "list recent sessions"),
    CommandSpec("title", "[name]", "show or set this session's title"),
    CommandSpec("help", "", "this list"),
    CommandSpec("quit", "", "leave (the session stays in the store)", ("exit", "q")),
)

_BY_NAME: dict[str, CommandSpec] = {}
for _spec in COMMANDS:
    _BY_NAME[_spec.name] = _spec
    for _alias in _spec.aliases:
        _BY_NAME[_alias] = _spec


class CommandError(ValueError):
    """A slash command could not be understood; ``str()`` says how to fix it."""


@dataclass(frozen=True)
class Command:
    """A parsed slash command: the canonical ``name`` and its arguments."""

    name: str
    args: tuple[str, ...] = ()
    raw_args: str = ""
    """Everything after the command word, verbatim (titles keep their spacing)."""


def parse_command(line: str) -> Command | None:
    """``None`` when ``line`` is a message (no leading ``/``, or an escaped ``//``);
    otherwise the :class:`Command`, or :class:`CommandError` for an unknown one (with a
    suggestion)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    word, _, rest = text[1:].partition(" ")
    word = word.lower()
    spec = _BY_NAME.get(word)
    if spec is None:
        close = difflib.get_close_matches(word, list(_BY_NAME), n=1, cutoff=0.6)
        hint = f" — did you mean /{_BY_NAME[close[0]].name}?" if close else "."
        shown = f"/{word}" if word else "/"
        raise CommandError(f"unknown command {shown}{hint} Type /help for the list.")
    rest = rest.strip()
    try:
        args = tuple(shlex.split(rest))
    except ValueError:
        args = tuple(rest.split())
    return Command(spec.name, args, rest)


@dataclass(frozen=True)
class CompressArgs:
    """``/compress [here [N]] [--preview] [focus…]``."""

    keep_last_turns: int | None = None
    preview: bool = False
    focus: str | None = None


def parse_compress_args(args: Sequence[str]) -> CompressArgs:
    """Parse ``/compress`` arguments; ``here`` without N keeps the last turn."""
    rest = list(args)
    preview = False
    while "--preview" in rest:
        rest.remove("--preview")
        preview = True
    unknown = [a for a in rest if a.startswith("--")]
    if unknown:
        raise CommandError(f"/compress: unknown option {unknown[0]}; usage: "
                           f"/compress {_BY_NAME['compress'].usage}")
    keep: int | None = None
    if rest and rest[0].lower() == "here":
        rest.pop(0)
        keep = 1
        if rest and rest[0].lstrip("-").isdigit():
            keep = int(rest.pop(0))
            if keep < 0:
                raise CommandError("/compress here N: N must be 0 or more")
    focus = " ".join(rest).strip() or None
    return CompressArgs(keep_last_turns=keep, preview=preview, focus=focus)


# --------------------------------------------------------------------------- the wire


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
        label = message.get("name") or message.get("tool_call_id") or "tool"
        blocks.append({"type": "text", "text": f"[tool result: {label}]\n{text_of(message)}"})
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
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            blocks.append({"type": "text", "text": f"[called {fn.get('name')}"
                           f"({fn.get('arguments', '')})]"})
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


# --------------------------------------------------------------------------- the model


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


# --------------------------------------------------------------------------- the UI


class ChatUI(Protocol):
    """Where the controller reports.  The terminal implementation uses rich."""

    def reply(self, text: str) -> None:
        """The model's answer."""

    def info(self, text: str) -> None:
        """Command output and notes."""

    def event(self, text: str) -> None:
        """Host events: the R-10.4 status markers, compaction notes."""

    def error(self, text: str) -> None:
        """Something failed; the text says what and what to do."""

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A small table (``/sessions``)."""


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
    history: list[str] = field(default_factory=list)
    """Session ids this controller has worked on, oldest first."""
    last_outcome: TurnOutcome | None = None
    """What the last :meth:`Session.end_turn` decided (shown by ``/status``)."""
    _skip_warned: set[str] = field(default_factory=set, init=False, repr=False)
    """Plugins whose open breaker was already reported (see :meth:`send`)."""

    def __post_init__(self) -> None:
        self.history.append(self.session.id)
        self.session.export_id()

    @property
    def max_tokens(self) -> int:
        return self.host.config.model.max_output_tokens or DEFAULT_MAX_TOKENS

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
                self._skip_warned.discard(row.plugin)
        fresh = [r for r in rows if r.problems > r.skipped or r.plugin not in self._skip_warned]
        if not fresh:
            return
        self._skip_warned.update(r.plugin for r in fresh if r.breaker not in (None, "closed"))
        first = fresh[0]
        line = f"engine problem this turn: {first.last_error}"
        if first.breaker not in (None, "closed"):
            line += f" [breaker {first.breaker}]"
        if len(fresh) > 1:
            others = ", ".join(f"{r.plugin}.{r.hook}" for r in fresh[1:])
            line += f" (also {others})"
        self.ui.error(line + "; /status shows every engine problem")

    def _turn(self, text: str) -> None:
        session = self.session
        session.add_user(text)
        try:
            reply = self.model.respond(session.build_request(), self.max_tokens)
        except ModelError as exc:
            self.ui.error(f"model call failed: {exc}. Your message is stored; send another "
                          "message to continue.")
            return
        session.add_assistant(reply.text)
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
            self.ui.event(line)

        session.on_event = live
        try:
            outcome = session.end_turn(reply.usage)
        finally:
            session.on_event = None
        self.last_outcome = outcome
        for line in outcome.events[len(shown):]:
            self.ui.event(line)
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
        lines.append(f"would keep {len(kept)} messages; run /compress without --preview to "
                     "commit")
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
        session = self.session
        status = session.status()  # what the session knows; the row adds stored counts
        row = self.host.store.get_session(session.id)
        used, length = status["window_tokens"], status["context_length"]
        lines = [
            f"session: {session.id}" + (f" “{session.title}”" if session.title else "")
            + f" (lineage of {len(status['lineage'])})",
            f"model: {status['model']} (provider {self.model.provider}, tokenizer "
            f"{status['tokenizer']['encoding'] or 'estimate'})",
            f"context: {used:,} / {length:,} tokens ({used / length:.0%})",
        ]
        decision = self.last_outcome.decision if self.last_outcome else None
        if decision is not None and self.last_outcome is not None:
            lines.append(
                "last compression decision: "
                + ("compress" if decision.compress else f"no ({decision.reason or 'declined'})")
                + (f", threshold {decision.threshold_tokens:,} tokens"
                   if decision.threshold_tokens else "")
                + f" [{self.last_outcome.decided_by}]"
            )
        if session.last_prompt_tokens:
            lines.append(f"last prompt (provider-reported): {session.last_prompt_tokens:,} "
                         "tokens")
        lines.append(f"messages: {row.active_count} in the window, {row.message_count} stored")
        lines.append(f"compressions: {status['compression_count']}")
        lines.append(f"tokens this session (provider-reported): in {row.input_tokens:,} · "
                     f"out {row.output_tokens:,}")
        guards = status["guards"]
        if guards["cooldown_until"] is not None:
            lines.append("cooldown: automatic compression suppressed until "
                         f"{_clock(guards['cooldown_until'])} (/compress overrides)")
        if guards["ineffective_count"] or guards["fallback_streak"]:
            lines.append(f"guards: {guards['ineffective_count']} ineffective, "
                         f"{guards['fallback_streak']} fallback in a row")
        chain = status["engines"]["select_context"]
        if session.last_select:
            lines.append("select_context (last request):")
            lines.extend(f"  {_describe_select(entry)}" for entry in session.last_select)
        else:
            lines.append("select_context: no engine changed the last request"
                         + (f" (configured: {', '.join(chain)})" if chain else ""))
        problems = status["engine_problems"]
        if problems:
            lines.append("engine problems (since the chat started):")
            for row in problems:
                health = HookHealth(**{k: v for k, v in row.items() if k != "problems"})
                lines.append(f"  {health.describe()}")
        else:
            lines.append("engine problems: none")
        self.ui.info("\n".join(lines))

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


def _describe_select(entry: Mapping[str, Any]) -> str:
    """One line for a ``select_context`` stamp: engine, its scalar decision fields, and the
    token effect — the decision dicts engines return can be long."""
    engine = entry.get("engine", "?")
    decision = entry.get("decision")
    if not isinstance(decision, Mapping):
        return f"{engine}: {entry.get('error') or entry.get('provenance')}"
    fields = [
        f"{k}={one_line(str(v), 40)}" for k, v in decision.items()
        if k not in ("engine", "tokens_before", "tokens_after")
        and isinstance(v, str | int | float | bool) and v != ""
    ][:7]
    before, after = decision.get("tokens_before"), decision.get("tokens_after")
    if isinstance(before, int) and isinstance(after, int):
        fields.append(f"tokens {before:,} → {after:,}")
    return f"{engine}: " + (", ".join(fields) or "adopted")


def _key(message: Message) -> str:
    return json.dumps(
        {k: v for k, v in message.items() if not str(k).startswith("_")},
        sort_keys=True, default=str,
    )


def _clock(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")
