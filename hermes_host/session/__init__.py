"""The live :class:`Session`: its state and its methods, each a door into the module that owns
that concern (see ``docs/architecture.md``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from hermes_host.injections import Injection
from hermes_host.messages import (
    tool_call_ids,
    validate_messages,
)
from hermes_host.models import (
    CompressDecision,
    CompressResult,
    GuardState,
    Message,
)
from hermes_host.session import (
    assembly,
    compression,
    sync,
    trigger,
    user_control,
    window,
)
from hermes_host.session.bound import Condensed
from hermes_host.session.host_view import HostView
from hermes_host.session.manifest import RequestLog
from hermes_host.session.reports import (
    SESSION_ENV,
    CompressionReport,
    Normalisation,
    TurnOutcome,
)
from hermes_host.session.user_control import reset_due
from hermes_host.session.window import Wire, _WindowScan
from hermes_host.store import (
    Lease,
    PublishResult,
    StaleSessionError,
    WindowMarker,
)
from hermes_host.tokens import RunningTotal

__all__ = ["Session"]


class Session:
    """One live conversation: its system prompt snapshot and window, backed by the store.

    ``id`` switches when a compression rotates the session (R-8.1); ``lineage`` lists every
    id it had; ``conversation_id`` stays the same across rotations (the id to map a
    framework's own session id to).  Messages are persisted the moment they are added, so a
    crash loses nothing.

    Several processes may hold the same conversation (gateway workers taking turns): before
    each write and each request the session compares the store's
    :class:`~hermes_host.store.WindowMarker` with what it wrote itself, and when another
    process appended, compressed, rotated or undid, it takes the window from the store (and
    follows a rotation to the new id) instead of writing to a stale one.
    """

    def __init__(
        self,
        host: HostView,
        session_id: str,
        system_prompt: str,
        window: list[Message],
        *,
        title: str | None = None,
        cwd: str | None = None,
        marker: WindowMarker | None = None,
        conversation_id: str | None = None,
    ) -> None:
        self.host = host
        self.id = session_id
        self.conversation_id = conversation_id or session_id
        """Stable across rotations: the conversation's first session id."""
        self.title = title
        self.cwd = cwd
        """The working directory recorded for the session; restoring it on resume is the
        front end's choice (``os.chdir(session.cwd)``, R-8.3)."""
        self.system_prompt = system_prompt
        self._window: list[Message] = list(window)
        self._turn_start = len(self._window)
        self.lineage: list[str] = [session_id]
        self.compression_count = 0
        self.compression_epoch = 0
        self.cache_violations = 0
        self.cache_checks = 0
        self.normalised = Normalisation()
        self.last_select: list[dict[str, Any]] = []
        self.last_prompt_tokens: int | None = None
        self.window_warning: str | None = None  # set by build_request (issues 12, 28)
        self.last_condensed: Condensed | None = None
        """What the request bound did to the last request (``None``: it fit as it was)."""
        self.last_request_tokens: int | None = None
        """Host-counted tokens of the last request built, after the request bound."""
        self._warned_cause: str | None = None  # the request bound's last warned cause
        self.last_decision: tuple[CompressDecision, str] | None = None  # end_turn's, for status
        self.turns_ended = 0
        """How many times :meth:`end_turn` (or :meth:`should_compress`, for a framework that
        runs compression itself) ran on this object: a request over budget before the first
        is a caller that never ends its turns."""
        self._last_base: tuple[int, list[str]] | None = None
        self._last_base_messages: list[Message] = []
        self.events: list[str] = []
        self.on_event: Callable[[str], None] | None = None
        """Called with each user-facing line the moment it happens — e.g. the R-10.4
        "Compacting context" marker *before* the summariser runs, so a front end can show a
        "Summarizing…" state instead of a silent pause.  Exceptions it raises are ignored."""
        self._window_cache: tuple[tuple[int, int], list[Message], int] | None = None
        self._settled = True
        """False while the window may hold rows the marker does not cover (sync.follow)."""
        self._unreleased: Lease | None = None
        """A lease whose release the store refused (a full disk): released first thing at
        the next compression pass, so it does not block this session for its whole TTL."""
        self._running = RunningTotal(counter=host.tokens)  # per message of the cached window
        self._stored_counts: tuple[list[Message], list[int]] | None = None
        """Messages as the store handed them at resume, with its count of each: the first
        window count reuses them for messages it holds unchanged (issue 32), then drops them."""
        self._requests = RequestLog()  # what each model call received (issue 29)
        self._scan = _WindowScan()
        self._wire = Wire()  # the cached window's wire forms (issue 32)
        self._cache_clean = False  # the cached window is the raw window as is (no repair)
        self._cache_source: list[Message] | None = None  # the raw list it was built from
        self._clipped: list[tuple[Message, Message]] = []
        """(clipped, original) of each message the cached window holds clipped (issue 31:
        :mod:`hermes_host.session.intake`)."""
        # Read before ``window`` was (see ContextHost.resume): a write in between then shows
        # up as a difference at the next check instead of going unnoticed.
        self._marker = marker if marker is not None else host.store.window_marker(session_id)

    # -- other processes ----------------------------------------------------------------

    def _sync(self) -> None:
        return sync.sync(self)

    def _follow(self, marker: WindowMarker) -> None:
        return sync.follow(self, marker)

    def _published(self, result: PublishResult, window: list[Message]) -> None:
        return sync.published(self, result, window)

    # -- adding messages ----------------------------------------------------------------

    def add_message(self, message: Message) -> None:
        """Append one OpenAI-format message as is (every key kept) and persist it now.

        Raises :class:`~hermes_host.messages.MessageError` for a structurally invalid
        message; nothing is stored then.  When other processes rotate the conversation
        meanwhile, the message follows them to the newest session and is written there,
        once (issue 31: it is never refused for a rotation).

        A text longer than any request can hold (about 4 characters per token of the request
        budget, between 256 KiB and 1 MiB of characters) is stored whole, but the window —
        what engines, memory providers and requests see — holds a head-and-tail excerpt of
        it (:mod:`hermes_host.session.intake`), so one huge message costs bounded time and
        memory and never makes the session uncompressible."""
        validate_messages([message])
        if message.get("role") == "system":
            raise ValueError(
                "a system message cannot be added mid-session: the system prompt is frozen "
                "for prompt caching (R-1.3); open a new session instead"
            )
        self._sync()
        try:  # counted once: the window's own count finds it in the host's cache later
            counts: list[int] | None = [self.host.tokens.count(message)]
        except Exception:  # the store has its own fallback for a message tiktoken refuses
            counts = None
        store = self.host.store
        while True:
            try:
                (new_id,) = store.append_messages(self.id, [message], token_counts=counts)
                break
            except StaleSessionError:
                # Another process rotated the conversation between our check and this
                # write: the store refused it (nothing goes to a rotated parent), so follow
                # and write there — each refusal means a rotation committed meanwhile, so
                # this ends when the writers compressing the conversation pause.
                self._sync()
        self._window.append(message)
        # What the store holds if nothing else changed between our check and this write;
        # if anything did, the store's marker differs (WindowMarker.active_id_sum) and the
        # next check takes the window from the store.
        self._marker = WindowMarker(self.id, new_id, self._marker.active_count + 1,
                                    self._marker.active_id_sum + new_id)

    def add_user(self, content: str | list[dict[str, Any]]) -> None:
        self.add_message({"role": "user", "content": content})

    def add_assistant(
        self, content: str | None, tool_calls: Sequence[Mapping[str, Any]] | None = None
    ) -> None:
        message: Message = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [dict(c) for c in tool_calls]
        self.add_message(message)

    def add_tool_result(self, tool_call_id: str, content: str, name: str | None = None) -> None:
        message: Message = {"role": "tool", "tool_call_id": tool_call_id, "content": content}
        if name is not None:
            message["name"] = name
        self.add_message(message)

    # -- the window ---------------------------------------------------------------------

    @property
    def raw_window(self) -> list[Message]:
        """The window as stored (not normalised), without the system prompt."""
        return list(self._window)

    def window(self) -> list[Message]:
        """System prompt + normalised window, ``_`` metadata kept (what engines receive).

        Cached until the window changes; treat the returned messages as read-only.  The
        session never edits a stored message in place (it appends, or a compression
        replaces the window), so per-message token counts and the R-1.3 canonical forms are
        reused for messages equal to last turn's, and only new messages cost work.  While
        the window needs no repair (no orphan tool call or result, no two neighbours of one
        role), an append extends the cached window and its token total by the new messages
        alone (issue 15: the same cost at 20,000 messages as at 100)."""
        return list(self._built())

    def _built(self) -> list[Message]:
        return window.built(self)

    def _count_window(self, built: list[Message]) -> int:
        return window.count_window(self, built)

    @property
    def window_tokens(self) -> int:
        """Host-counted tokens of system prompt + normalised window."""
        self._built()
        assert self._window_cache is not None
        return self._window_cache[2]

    def _check_cache(self, base: list[Message]) -> bool:
        return window.check_cache(self, base)

    def build_request(
        self, injections: Iterable[Injection | str] | None = None
    ) -> list[Message]:
        """The wire-ready message list for the next model call.

        System prompt + normalised window → the ``select_context`` chain (fenced, fail open)
        → turn-scoped ``injections`` (used by this request only, never stored, R-2.2) →
        :func:`repair_tool_pairs` → :func:`sanitize_for_wire` (every ``_`` key removed).
        """
        return assembly.build_request(self, injections)

    def fit_request(self, messages: Sequence[Message], *, record: bool = True) -> list[Message]:
        """``messages`` — a request the caller assembled itself (an integration's model
        input) — within the request budget ``context_length - max_output_tokens``, as
        :meth:`build_request` bounds its own: condensed in order of least harm when over it
        (see :mod:`hermes_host.session.bound`), with :attr:`window_warning` and an event
        saying so.  Returns ``messages`` as a new list when they fit.  The request is
        recorded as a model call's manifest (``store.record_requests``) unless ``record`` is
        false (a caller that fits a list it will not send as is)."""
        request = list(messages)
        return assembly.check_fits(self, request, unchanged=False,
                                   source="fit_request" if record else None)

    def _select(self, base: list[Message]) -> list[Message]:
        return assembly.select(self, base)

    # -- after a turn -------------------------------------------------------------------

    def end_turn(self, usage: Mapping[str, Any] | Any | None = None) -> TurnOutcome:
        """Finish a turn: record usage, ask ``should_compress`` (fenced; on failure the
        host's own threshold rule decides), and run the compression pass when due."""
        return trigger.end_turn(self, usage)

    def record_usage(self, usage: Mapping[str, Any] | Any | None) -> int | None:
        """Add a model call's provider-reported usage (a mapping or an SDK usage object with
        ``prompt_tokens``/``input_tokens``, ``completion_tokens``/``output_tokens``, cache and
        reasoning counts) to the session's totals; returns the prompt tokens, if any.
        :meth:`end_turn` does this itself; call it when your framework reports usage apart
        from the turn's end."""
        return self._record_usage(usage)

    def should_compress(self, prompt_tokens: int | None = None) -> CompressDecision:
        """Ask now, without ending a turn, what :meth:`end_turn` would decide: the
        ``should_compress`` engines over the window (fenced; on failure the host's threshold
        rule decides), bound by the durable guards.  For a framework that runs compression
        itself (it calls :meth:`compress` with ``force=False`` when this says yes)."""
        self._sync()
        base = self.window()
        decision, decided_by = self._decide(
            base, self.window_tokens, prompt_tokens, self._guards()
        )
        # a framework that runs compression itself asks here once per turn (Hermes Agent
        # never calls end_turn): what status() and the request bound's cause report
        self.last_decision = (decision, decided_by)
        self.turns_ended += 1
        return decision

    def select_context(self, messages: Sequence[Message]) -> list[Message]:
        """Run the ``select_context`` chain (fenced, fail open) over a message list the
        caller built — what :meth:`build_request` does with the window, for a framework that
        assembles its own request.  The engines search this session's stored lineage; their
        decisions are in :attr:`last_select`.  Returns ``messages`` unchanged when no engine
        is configured for the hook."""
        return assembly.select_context(self, messages)

    def _record_usage(self, usage: Mapping[str, Any] | Any | None) -> int | None:
        return trigger.record_usage(self, usage)

    def _guards(self) -> GuardState:
        return trigger.guards(self)

    def _decide(
        self, base: list[Message], tokens: int, prompt_tokens: int | None, guards: GuardState
    ) -> tuple[CompressDecision, str]:
        return trigger.decide(self, base, tokens, prompt_tokens, guards)

    # -- compression --------------------------------------------------------------------

    def compress(
        self,
        *,
        force: bool = True,
        focus: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
        memory_context: str | None = None,
    ) -> CompressionReport:
        """Manual ``/compress`` (R-12.1): ``force`` clears the cooldown and the anti-thrash
        counters; ``focus`` favours a topic; ``keep_last_turns`` keeps exactly the last N
        user turns; ``preview`` computes the proposal without publishing it.
        ``memory_context`` is text the caller's own memory wants kept (R-11.4): it goes into
        ``CompressRequest.memory_context`` ahead of what memory providers return."""
        return compression.compress(
            self,
            force=force,
            focus=focus,
            keep_last_turns=keep_last_turns,
            preview=preview,
            memory_context=memory_context,
        )

    def _compression_pass(
        self,
        *,
        force: bool,
        events: list[str],
        focus: str | None = None,
        keep_last_turns: int | None = None,
        preview: bool = False,
        memory_context: str | None = None,
        trigger: str = "auto",
    ) -> CompressionReport:
        return compression.compression_pass(
            self,
            force=force,
            events=events,
            focus=focus,
            keep_last_turns=keep_last_turns,
            preview=preview,
            memory_context=memory_context,
            trigger=trigger,
        )

    def _emit(self, events: list[str], line: str) -> None:
        return compression.emit(self, events, line)

    def _update_guards(
        self,
        session_id: str,
        guards: GuardState,
        result: CompressResult,
        tokens_before: int,
        tokens_after: int,
    ) -> None:
        return compression.update_guards(
            self, session_id, guards, result, tokens_before, tokens_after
        )

    def status(self) -> dict[str, Any]:
        """What ``/status`` shows (R-12.1): session, model, tokens and context use, guards,
        lineage, the invariant counters, and ``engine_problems``: the rows of
        :meth:`ContextHost.engine_health` with a problem.  JSON-ready."""
        return user_control.status(self)

    def undo(self, turns: int = 1) -> int:
        """``/undo [N]``: take the last ``turns`` user turns out of the window; returns how
        many messages left it.  Their rows are archived in the store (``active=0``, still
        searchable), never deleted; the rows that stay keep their ids (nothing is
        copied).  Like a compression, this is a deliberate rewrite of past context, so the
        prompt-cache check restarts after it."""
        return user_control.undo(self, turns)

    def truncate(self, keep: int) -> list[Message]:
        """Keep the first ``keep`` messages of the window and take the rest out of it; returns
        the messages taken out, oldest first (``truncate(len(window) - 1)`` pops the newest
        message, ``truncate(0)`` empties the window).  As with :meth:`undo`, their rows are
        archived in the store (``active=0``, still searchable), never deleted, and the
        conversation id does not change — what a framework's "pop item" / "clear session"
        needs (``hermes_host.integrations``).  Raises :class:`ValueError` for a negative
        ``keep``."""
        return user_control.truncate(self, keep)

    def branch(self, title: str | None = None) -> Session:
        """``/branch [name]``: a new session that starts from a copy of this window (same
        system prompt), linked to this one as its parent; this session is left as it is."""
        return user_control.branch(self, title)

    def set_title(self, title: str) -> None:
        """``/title name``.  Raises :class:`~hermes_host.store.TitleConflictError` when
        another session has it (titles are unique)."""
        self.title = self.host.store.update_session(self.id, title=title).title

    def export_id(self) -> None:
        """Expose this session's id as ``$HERMES_HOST_SESSION_ID`` to the process and the
        tools it starts; a rotation keeps it current (R-8.1)."""
        os.environ[SESSION_ENV] = self.id

    # -- reset --------------------------------------------------------------------------

    def reset_due(self, now: float | None = None) -> str | None:
        """``"idle"`` / ``"daily"`` when ``session_reset`` says this session is stale."""
        row = self.host.store.get_session(self.id)
        return reset_due(self.host.config.session_reset, row.last_activity_at, now)

    def reset(
        self, reason: str = "new", *, title: str | None = None, system_prompt: str | None = None
    ) -> Session:
        """``/new``: end this session and open a fresh one (all compression state starts
        over).  Memory providers get ``on_session_reset`` first, so they can save what
        matters.  The old session stays in the store."""
        return user_control.reset(self, reason, title=title, system_prompt=system_prompt)

    # -- misc ---------------------------------------------------------------------------

    def open_calls(self) -> list[str]:
        """Tool call ids of the window still waiting for their result."""
        pending: list[str] = []
        for message in self._window:
            if message.get("role") == "tool":
                if message.get("tool_call_id") in pending:
                    pending.remove(message["tool_call_id"])
            else:
                pending = tool_call_ids(message) if message.get("role") == "assistant" else []
        return pending
