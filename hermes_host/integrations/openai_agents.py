"""hermes-host as the ``Session`` of the OpenAI Agents SDK (``openai-agents``, issue 18).

::

    from agents import Agent, Runner
    from hermes_host.integrations.openai_agents import HermesSession

    session = HermesSession("user-42")          # the SDK's session id; config.yaml as usual
    result = await Runner.run(agent, "Run the tests", session=session)

The runner reads the history with ``get_items()`` before each run and writes the new items
with ``add_items()`` (the input first, then what the run generated).  ``HermesSession`` keeps
every item in the hermes-host store, verbatim, and returns the **compressed window**: after a
compression, ``get_items()`` is the summary plus the kept tail — tool calls and their outputs
together — in the SDK's item format, while the store still holds everything (archived rows
stay searchable).  Compression runs when a batch of generated items closes every tool call
(the turn is over), through the engines, guards and fence of ``config.yaml``.

``session_id`` is the hermes-host **conversation id**: it does not change when a compression
rotates the underlying session, so the SDK sees one session for the whole conversation.

How items map to the host's OpenAI chat messages (what engines, the summariser and the token
count see): a user / system / developer message item becomes a ``user`` message; an
assistant message item and the tool calls that follow it become one ``assistant`` message with
``tool_calls``; each call output becomes a ``tool`` message.  Items with no chat form
(reasoning, hosted tool calls) ride along on the neighbouring assistant message.  The items
themselves are kept on each message under ``_openai_agents_items`` and handed back unchanged
whenever the message is unchanged; a message an engine rewrote (a summary, a pruned tool
output) is converted back into items.

``select_context`` engines need the incoming message, which the SDK adds only after
``get_items``: :meth:`HermesSession.select_filter` runs them on each model call's input as
``RunConfig(call_model_input_filter=session.select_filter)``.

The SDK calls are ``async``; the store and the engines are not, so each call runs in a worker
thread and calls on one ``HermesSession`` are serialised.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agents.lifecycle import RunHooks
from agents.memory import SessionSettings

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost, Session, TurnOutcome
from hermes_host.integrations._report import logger, report
from hermes_host.integrations._status import failed_open, integration_status
from hermes_host.messages import sanitize_for_wire, text_of
from hermes_host.models import Message
from hermes_host.redact import redact
from hermes_host.store import SessionNotFoundError, StateStore

__all__ = ["ITEMS_KEY", "HermesSession", "items_to_messages", "messages_to_items"]

ITEMS_KEY = "_openai_agents_items"
"""The key under which each stored message keeps the SDK items it was made from."""

_T = TypeVar("_T")
Item = dict[str, Any]


# -- items ⇄ chat messages ---------------------------------------------------------------


def _kind(item: Mapping[str, Any]) -> str:
    """``user``, ``assistant``, ``call``, ``output`` or ``other`` (no chat form)."""
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return "assistant" if item.get("role") == "assistant" else "user"
    if isinstance(kind, str) and "call_id" in item:
        if kind.endswith("_call_output") or kind.endswith("_output"):
            return "output"
        if kind.endswith("_call"):
            return "call"
    return "other"


def _chat_content(content: Any) -> str | list[dict[str, Any]]:
    """SDK message content → chat content: a string, or parts when there is an image."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "refusal":
            parts.append({"type": "text", "text": str(part.get("refusal", ""))})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            name = part.get("filename") or part.get("file_id") or kind
            parts.append({"type": "text", "text": f"[{name}]"})
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_call(item: Mapping[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        raw = arguments if arguments is not None else item.get("input", item.get("action"))
        arguments = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    name = item.get("name") or item.get("type")
    return {"id": str(item["call_id"]), "type": "function",
            "function": {"name": str(name), "arguments": arguments}}


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return text_of({"content": output}) or json.dumps(output, default=str)
    return json.dumps(output, default=str)


def items_to_messages(items: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Group SDK input items into OpenAI chat messages, each carrying its items verbatim
    under :data:`ITEMS_KEY`.  Deterministic: the same items always give the same messages."""
    out: list[Message] = []
    group: list[Item] = []  # the items of the assistant message being built

    def flush() -> None:
        if not group:
            return
        texts = [_chat_content(i.get("content")) for i in group if _kind(i) == "assistant"]
        message: Message = {"role": "assistant",
                            "content": "\n".join(t if isinstance(t, str) else text_of(
                                {"content": t}) for t in texts)}
        calls = [_tool_call(i) for i in group if _kind(i) == "call"]
        if calls:
            message["tool_calls"] = calls
            message["content"] = message["content"] or None
        message[ITEMS_KEY] = [copy.deepcopy(i) for i in group]
        out.append(message)
        group.clear()

    for raw in items:
        item = dict(raw)
        kind = _kind(item)
        if kind == "user":
            flush()
            out.append({"role": "user", "content": _chat_content(item.get("content")),
                        ITEMS_KEY: [copy.deepcopy(item)]})
        elif kind == "output":
            flush()
            out.append({"role": "tool", "tool_call_id": str(item["call_id"]),
                        "content": _output_text(item.get("output")),
                        ITEMS_KEY: [copy.deepcopy(item)]})
        elif kind == "assistant" and any(_kind(i) == "call" for i in group):
            flush()  # text after calls in one batch: its own message, as on the wire
            group.append(item)
        else:
            group.append(item)  # assistant text, calls, and items with no chat form
    flush()
    return out


def _unchanged(message: Message, items: list[Any]) -> bool:
    """Is ``message`` still exactly what its stored items make?"""
    rebuilt = items_to_messages(items)
    return len(rebuilt) == 1 and sanitize_for_wire(rebuilt)[0] == sanitize_for_wire([message])[0]


def _message_to_items(message: Message) -> list[Item]:
    """Items for a message an engine wrote or rewrote (a summary, a pruned tool output)."""
    role = message.get("role")
    stored = message.get(ITEMS_KEY)
    if role == "tool":
        if isinstance(stored, list) and len(stored) == 1 and isinstance(stored[0], Mapping):
            item = copy.deepcopy(dict(stored[0]))  # keep the output's own type and call id
            item["output"] = text_of(message)
            return [item]
        return [{"type": "function_call_output", "call_id": str(message.get("tool_call_id")),
                 "output": text_of(message)}]
    content = message.get("content")
    if role == "assistant":
        items: list[Item] = []
        text = text_of(message)
        if text:
            items.append({"role": "assistant", "content": text})
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            items.append({"type": "function_call", "call_id": str(call.get("id")),
                          "name": str(fn.get("name")), "arguments": fn.get("arguments") or ""})
        return items
    if isinstance(content, list):
        parts: list[dict[str, Any]] = []
        for part in content:
            if part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url")
                parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
            else:
                parts.append({"type": "input_text", "text": str(part.get("text", ""))})
        return [{"role": "user", "content": parts}]
    return [{"role": "user" if role != "system" else "system", "content": text_of(message)}]


def messages_to_items(messages: Sequence[Message]) -> list[Item]:
    """The SDK items for a hermes-host window: a message's own items when it is unchanged,
    else items converted from the message (summaries, engine rewrites)."""
    out: list[Item] = []
    for message in messages:
        stored = message.get(ITEMS_KEY)
        if isinstance(stored, list) and stored and _unchanged(message, stored):
            out.extend(copy.deepcopy(stored))
        else:
            out.extend(_message_to_items(message))
    return out


# -- the session -------------------------------------------------------------------------


class HermesSession:
    """An OpenAI Agents SDK ``Session`` on the hermes-host store (issue 18).

    ``session_id`` names the conversation: an id the store already has resumes it (its
    newest session, whatever compressions rotated it into), a new id starts it.  ``None``
    starts a conversation under a generated id.  ``host`` is a
    :class:`~hermes_host.host.ContextHost` to share (several sessions, one store); without
    it the session builds its own from ``config`` and ``store`` (as
    :meth:`ContextHost.from_config` takes them: ``None`` for ``config.yaml`` and the
    configured store) and closes it in :meth:`close`.  ``system_prompt`` is used only for a
    new conversation (the agent's instructions, so the host counts them in the window);
    ``title`` likewise.  ``session_settings`` is the SDK's (``limit``: the default tail
    length ``get_items`` returns).
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        host: ContextHost | None = None,
        config: HermesConfig | str | Path | None = None,
        store: StateStore | str | Path | None = None,
        system_prompt: str = "",
        title: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self._owns_host = host is None
        self.host = host if host is not None else ContextHost.from_config(config, store=store)
        self._lock = threading.Lock()
        try:
            self.hermes = self._open(session_id, system_prompt, title)
        except BaseException:
            if self._owns_host:
                self.host.close()
            raise
        self.session_id: str = self.hermes.conversation_id
        self.session_settings: SessionSettings | None = (
            session_settings if session_settings is not None else SessionSettings()
        )
        self.last_outcome: TurnOutcome | None = None
        """What the last ``end_turn`` said (status, events such as the compaction lines)."""
        self._error: str | None = None
        """Why :meth:`select_filter` failed open at its last call (``status()["error"]``)."""
        self._filtering = False  # select_filter has run: it records every model call

    def _open(self, session_id: str | None, system_prompt: str, title: str | None) -> Session:
        if session_id is not None:
            if not session_id.strip():
                raise ValueError("session_id must be a non-empty string (or None)")
            try:
                self.host.store.get_session(session_id)
            except SessionNotFoundError:
                pass
            else:
                return self.host.resume(session_id)
        return self.host.open_session(title, system_prompt, session_id=session_id,
                                      source="openai-agents")

    async def _run(self, fn: Callable[[], _T]) -> _T:
        def locked() -> _T:
            with self._lock:
                return fn()
        return await asyncio.to_thread(locked)

    # -- the SDK's Session protocol ------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The compressed window as SDK items (summary + kept tail, tool pairs intact),
        within the request budget (``context_length - max_output_tokens``, the agent's
        instructions counted when the session was given them as ``system_prompt``):
        condensed in order of least harm when over it, ``status()["window_warning"]`` and
        a WARNING log line saying why.  ``limit`` returns only the newest ``limit`` items,
        oldest first."""
        def read() -> list[Item]:
            items = messages_to_items(self._bounded_window())
            if limit is None:
                return items
            return items[-limit:] if limit > 0 else []
        return await self._run(read)

    def _bounded_window(self) -> list[Message]:
        session = self.hermes
        system = session.system_prompt
        head: list[Message] = [{"role": "system", "content": system}] if system else []
        # once select_filter runs, it records each model call's request itself
        fitted = session.fit_request([*head, *session.raw_window], record=not self._filtering)
        return fitted[len(head):] if head else fitted

    async def add_items(self, items: list[Any]) -> None:
        """Store ``items`` (verbatim, every one); when they close the turn — generated items
        and no tool call left open — run the host's end of turn (compression when due)."""
        def write() -> None:
            batch = [dict(i) for i in items]
            for message in items_to_messages(batch):
                self.hermes.add_message(message)
            generated = any(_kind(i) != "user" for i in batch)
            if generated and not self.hermes.open_calls():
                self.last_outcome = report(self.hermes.end_turn(), self.session_id)
        await self._run(write)

    async def pop_item(self) -> Item | None:
        """Take the newest item out of the window and return it (its row stays in the store,
        archived and searchable); ``None`` when the window is empty."""
        def pop() -> Item | None:
            window = self.hermes.raw_window
            if not window:
                return None
            items = messages_to_items(window[-1:])
            self.hermes.truncate(len(window) - 1)
            for message in items_to_messages(items[:-1]):
                self.hermes.add_message(message)
            return items[-1] if items else None
        return await self._run(pop)

    async def clear_session(self) -> None:
        """Empty the window.  Nothing is deleted: the rows stay in the store, archived and
        searchable, and the conversation id stays the same."""
        await self._run(lambda: self.hermes.truncate(0))

    # -- hermes-host extras ----------------------------------------------------------------

    async def select_filter(self, data: Any) -> Any:
        """A ``RunConfig.call_model_input_filter`` that runs the ``select_context`` engines
        (``retrieval``, ``topic_router`` …) over each model call's input::

            Runner.run(agent, text, session=session,
                       run_config=RunConfig(call_model_input_filter=session.select_filter))

        The input (window + this turn's items) is seen as chat messages; what an engine
        changed (a retrieved block added to the newest user message) goes back as converted
        items, the rest unchanged.  Then the request bound: the SDK appends a run's own tool
        outputs to the items ``get_items`` gave it, so only this filter sees every model
        call whole — with it, no call is larger than ``context_length - max_output_tokens``
        (the agent's instructions counted; see ``docs/lifecycle.md``).  Fails open: if
        hermes-host fails, the input goes as it was and the failure is logged at WARNING."""
        from agents.run_config import ModelInputData

        model_data = data.model_data

        self._filtering = True

        def select() -> list[Item]:
            messages = items_to_messages(model_data.input)
            selected = self.hermes.select_context(messages)
            instructions = model_data.instructions
            head: list[Message] = (
                [{"role": "system", "content": instructions}]
                if isinstance(instructions, str) and instructions else []
            )
            fitted = self.hermes.fit_request([*head, *selected])[len(head):]
            if fitted == messages:
                return list(model_data.input)
            return messages_to_items(fitted)

        try:
            items = await self._run(select)
            self._error = None
        except Exception as exc:  # the run must not break on hermes-host
            self._error = failed_open(exc, "the input went as it was")
            logger.warning("[%s] hermes-host select_context failed, the input goes as it was: "
                           "%s: %s", self.session_id, type(exc).__name__, redact(str(exc)))
            return model_data
        return ModelInputData(input=items, instructions=model_data.instructions)

    def run_hooks(self) -> RunHooks[Any]:
        """``RunHooks`` that record each model call's provider usage (input, output, cached
        input tokens) in the store — the SDK hands usage to hooks, never to a session::

            Runner.run(agent, text, session=session, hooks=session.run_hooks(),
                       run_config=RunConfig(call_model_input_filter=session.select_filter))

        With :meth:`select_filter` too, each model call's request and its usage are
        recorded together (``hermes-host sessions requests``, ``browse``)."""
        owner = self

        class _UsageHooks(RunHooks[Any]):  # type: ignore[misc,unused-ignore]
            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                usage = getattr(response, "usage", None)
                if usage is None:
                    return
                details = getattr(usage, "input_tokens_details", None)
                counts = {
                    "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
                    "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
                    "cache_read_tokens": int(getattr(details, "cached_tokens", 0) or 0),
                }
                try:
                    await owner._run(lambda: owner.hermes.record_usage(counts))
                except Exception as exc:  # the run must not break on hermes-host
                    logger.warning("[%s] hermes-host could not record usage: %s: %s",
                                   owner.session_id, type(exc).__name__, redact(str(exc)))

        return _UsageHooks()

    async def compress(self, *, force: bool = True, focus: str | None = None) -> Any:
        """The manual ``/compress``: compress the window now (``focus`` favours a topic)."""
        return await self._run(lambda: self.hermes.compress(force=force, focus=focus))

    def status(self) -> dict[str, Any]:
        """hermes-host's ``/status`` for this conversation (window tokens, compressions,
        lineage, engine problems); JSON-ready.  Always the documented keys
        (:data:`~hermes_host.integrations._status.STATUS_KEYS`): ``error`` is ``None``
        while hermes-host works, else why not (:meth:`select_filter` failed open at its last
        call, or the conversation cannot be read)."""
        with self._lock:
            return integration_status(lambda: self.hermes, self._error, self.session_id)

    def close(self) -> None:
        """Close the host if this session built it (a shared ``host`` is the caller's)."""
        if self._owns_host:
            self.host.close()
