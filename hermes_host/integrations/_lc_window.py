"""What the LangChain middleware and the LangGraph hook share (issue 18): a LangChain message
list mirrored into a hermes-host conversation, and the hermes-host window handed back as
LangChain messages.

The graph state stays the source of truth for the agent and keeps every message; the store
gets each new message once (in OpenAI chat form, with the LangChain id under
``_langchain_id``); the model gets the window — the state's own message objects where the
window still holds them unchanged, converted ones for what an engine wrote (the summary, a
pruned tool output, text a ``select_context`` engine added).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    BaseMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session, TurnOutcome
from hermes_host.integrations._report import logger, report
from hermes_host.integrations._status import failed_open, integration_status
from hermes_host.messages import sanitize_for_wire
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.store import SessionNotFoundError, StateStore

__all__ = ["ID_KEY", "LangChainWindow", "thread_id"]

ID_KEY = "_langchain_id"
"""The key under which each stored message keeps its LangChain message id."""


def _canonical(message: Message) -> str:
    return json.dumps(sanitize_for_wire([message])[0], sort_keys=True, ensure_ascii=False,
                      default=str)


def _usage(metadata: Mapping[str, Any]) -> dict[str, int]:
    """LangChain's ``usage_metadata`` as the host's usage counts."""
    details = metadata.get("input_token_details") or {}
    return {
        "input_tokens": int(metadata.get("input_tokens") or 0),
        "output_tokens": int(metadata.get("output_tokens") or 0),
        "cache_read_tokens": int(details.get("cache_read") or 0),
        "cache_write_tokens": int(details.get("cache_creation") or 0),
    }


def thread_id() -> str | None:
    """The LangGraph ``thread_id`` of the run this is called in, if any."""
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except (ImportError, RuntimeError):  # not inside a graph run
        return None
    value = configurable.get("thread_id")
    return str(value) if value is not None else None


class _Conversation:
    """One hermes-host session and what of the LangChain messages it already holds."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.known_ids: set[str] = set()
        self.seen: list[str] = []  # canonical forms of the mirrored messages, in order
        self.stored: dict[str, str] = {}  # LangChain id -> canonical form as stored
        self.window_forms: dict[int, tuple[Message, str]] = {}  # the window's, by object
        host = session.host
        rows = sorted(
            (row for sid in host.store.lineage(session.id) for row in host.store.all_messages(sid)),
            key=lambda r: r.id,
        )
        for row in rows:
            lc_id = row.message.get(ID_KEY)
            if isinstance(lc_id, str):
                self.known_ids.add(lc_id)
                self.seen.append(_canonical(row.message))
                self.stored[lc_id] = self.seen[-1]


class LangChainWindow:
    """Mirror LangChain messages into hermes-host and return the window (thread-safe).

    ``host`` is shared when given (its store and engines); else one is built from ``config``
    and ``store`` as :meth:`ContextHost.from_config` takes them.  Each LangGraph thread (its
    ``thread_id``) is its own hermes-host conversation, whose id *is* the thread id; outside
    a thread (no checkpointer) every call goes to one conversation, ``session_id`` (``None``:
    a generated id).
    """

    def __init__(
        self,
        host: ContextHost | None = None,
        *,
        config: HermesConfig | str | Path | None = None,
        store: StateStore | str | Path | None = None,
        session_id: str | None = None,
        title: str | None = None,
        source: str = "langchain",
    ) -> None:
        self._owns_host = host is None
        self.host = host if host is not None else ContextHost.from_config(config, store=store)
        self.default_session_id = session_id
        self.title = title
        self.source = source
        self._conversations: dict[str | None, _Conversation] = {}
        self._lock = threading.Lock()
        self.last_outcome: TurnOutcome | None = None
        """What the last ``end_turn`` said (status, events such as the compaction lines)."""
        self._errors: dict[str | None, str] = {}
        """Per thread: why hermes-host failed open at its last call (``status()["error"]``)."""

    # -- conversations ---------------------------------------------------------------------

    def session(self, key: str | None = None) -> Session:
        """The hermes-host session of a thread (``None``: the default conversation)."""
        with self._lock:
            return self._conversation(key, "").session

    def status(self, key: str | None = None) -> dict[str, Any]:
        """hermes-host's ``/status`` of a thread's conversation, always with the documented
        keys (:data:`~hermes_host.integrations._status.STATUS_KEYS`): ``error`` is ``None``
        while hermes-host bounds the model input, else why it does not (its last call failed
        open, or the conversation cannot be read)."""
        with self._lock:
            return integration_status(lambda: self._conversation(key, "").session,
                                      self._errors.get(key), key or self.default_session_id)

    def _conversation(self, key: str | None, system_prompt: str) -> _Conversation:
        found = self._conversations.get(key)
        if found is not None:
            return found
        wanted = key if key is not None else self.default_session_id
        session: Session | None = None
        if wanted is not None:
            try:
                self.host.store.get_session(wanted)
            except SessionNotFoundError:
                pass
            else:
                session = self.host.resume(wanted)
        if session is None:
            session = self.host.open_session(self.title, system_prompt, session_id=wanted,
                                              source=self.source)
        if key is None:
            self.default_session_id = session.conversation_id
        conversation = self._conversations[key] = _Conversation(session)
        return conversation

    # -- the window ------------------------------------------------------------------------

    def window(
        self, messages: Sequence[BaseMessage | Any], *, system_prompt: str = "",
        key: str | None = None,
    ) -> list[BaseMessage]:
        """Store what is new in ``messages``, end the turn when no tool call is open
        (compression when due), and return the model input: leading system messages as
        given, then the hermes-host window.  ``system_prompt`` is the agent's (counted in
        the window's tokens; the model still gets it from the framework)."""
        state = convert_to_messages(messages)
        lead = 0
        while lead < len(state) and isinstance(state[lead], SystemMessage):
            lead += 1
        head, body = state[:lead], state[lead:]
        with self._lock:
            conversation = self._conversation(key, system_prompt)
            session = conversation.session
            added = self._mirror(conversation, body)
            if added and not session.open_calls():
                self.last_outcome = report(session.end_turn(), session.conversation_id)
            request = session.build_request()
            if request and request[0].get("role") == "system" and session.system_prompt:
                request = request[1:]  # the framework sends its own system prompt
            return [*head, *self._to_langchain(conversation, request, body)]

    def model_input(
        self, messages: Sequence[BaseMessage | Any], *, system_prompt: str = "",
        key: str | None = None,
    ) -> list[BaseMessage]:
        """:meth:`window`, failing open: when hermes-host itself fails (its store, say) the
        model gets ``messages`` as they are and the failure is logged at WARNING (redacted).
        Nothing is lost — the graph state still holds every message, and those the store
        missed are stored at the next call."""
        try:
            window = self.window(messages, system_prompt=system_prompt, key=key)
            self._errors.pop(key, None)
            return window
        except Exception as exc:  # the agent's turn must not break on hermes-host
            self._errors[key] = failed_open(exc)
            logger.warning("[%s] hermes-host failed, the model gets the whole state this "
                           "call: %s: %s", key or self.default_session_id or "default",
                           type(exc).__name__, redact(str(exc)))
            return list(convert_to_messages(messages))

    def record_safely(
        self, messages: Sequence[BaseMessage | Any], *, system_prompt: str = "",
        key: str | None = None,
    ) -> None:
        """:meth:`record`, failing open like :meth:`model_input`."""
        try:
            self.record(messages, system_prompt=system_prompt, key=key)
        except Exception as exc:
            self._errors.setdefault(key, failed_open(exc, "its reply is not stored yet"))
            logger.warning("[%s] hermes-host could not store the reply (it is stored at the "
                           "next call): %s: %s", key or self.default_session_id or "default",
                           type(exc).__name__, redact(str(exc)))

    def record(
        self, messages: Sequence[BaseMessage | Any], *, system_prompt: str = "",
        key: str | None = None,
    ) -> int:
        """Store what is new in ``messages`` (after a model call: its reply) and end the turn
        when the reply closed it (no tool call open); how many messages were new."""
        state = convert_to_messages(messages)
        body = [m for i, m in enumerate(state)
                if not (isinstance(m, SystemMessage) and all(
                    isinstance(p, SystemMessage) for p in state[:i]))]
        with self._lock:
            conversation = self._conversation(key, system_prompt)
            added = self._mirror(conversation, body)
            if added and not conversation.session.open_calls():
                self.last_outcome = report(conversation.session.end_turn(),
                                           conversation.session.conversation_id)
            return added

    def _mirror(self, conversation: _Conversation, body: Sequence[BaseMessage]) -> int:
        """Append the messages of ``body`` the conversation does not hold yet: those whose id
        it has not stored and that do not repeat, in place, what it stored (a caller without
        a checkpointer resends its history with fresh ids)."""
        added = 0
        for i, message in enumerate(body):
            if message.id is not None and message.id in conversation.known_ids:
                continue
            data = convert_to_openai_messages([message])[0]
            canon = _canonical(data)
            if i < len(conversation.seen) and conversation.seen[i] == canon:
                continue
            if data.get("role") == "system":  # a system message mid-conversation
                data = {**data, "role": "user"}
            data[ID_KEY] = message.id or f"position-{len(conversation.seen)}"
            conversation.session.add_message(data)
            usage = getattr(message, "usage_metadata", None)
            if usage:  # the provider's usage of the call that wrote this reply (issue 29)
                conversation.session.record_usage(_usage(usage))
            conversation.known_ids.add(str(data[ID_KEY]))
            conversation.seen.append(canon)
            conversation.stored[str(data[ID_KEY])] = _canonical(data)
            added += 1
        return added

    def _to_langchain(
        self, conversation: _Conversation, request: list[Message], body: Sequence[BaseMessage]
    ) -> list[BaseMessage]:
        """The state's own objects for unchanged window messages, converted ones otherwise.

        The request is the window in order, give or take what engines changed, so each
        request message is compared with the next window message first (a dict comparison);
        only a message that does not line up is looked up by its canonical form.  A window
        message a compression rewrote (a pruned output, the summary merged into a user
        message) keeps its LangChain id but is no longer the state's message: it is
        converted, never swapped back for the original (issue 28)."""
        by_id = {m.id: m for m in body if m.id is not None}
        window = [m for m in conversation.session.window()
                  if m.get("role") != "system" or ID_KEY in m]
        plain = [{k: v for k, v in m.items() if not k.startswith("_")} for m in window]
        originals: list[BaseMessage | None] = []
        forms: dict[int, tuple[Message, str]] = {}  # the session reuses unchanged messages
        for m in window:
            lc_id = m.get(ID_KEY)
            original = by_id.get(lc_id) if isinstance(lc_id, str) else None
            if original is not None:
                hit = conversation.window_forms.get(id(m))
                form = hit[1] if hit is not None and hit[0] is m else _canonical(m)
                forms[id(m)] = (m, form)
                if conversation.stored.get(str(lc_id)) != form:
                    original = None  # rewritten since it was stored
            originals.append(original)
        conversation.window_forms = forms
        by_canon: dict[str, list[BaseMessage]] | None = None  # built only when needed
        out: list[BaseMessage] = []
        j = 0
        for data in request:
            if j < len(plain) and data == plain[j]:
                original = originals[j]
                j += 1
                if original is not None:
                    out.append(original)
                    continue
            if by_canon is None:
                by_canon = {}
                for message, stored in zip(originals, plain, strict=True):
                    if message is not None:
                        by_canon.setdefault(_canonical(stored), []).append(message)
            pool = by_canon.get(_canonical(data))
            out.append(pool.pop(0) if pool else convert_to_messages([data])[0])
        return out

    def close(self) -> None:
        """Close the host if this object built it."""
        if self._owns_host:
            self.host.close()
