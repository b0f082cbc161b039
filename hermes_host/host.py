"""``ContextHost`` / ``Session``: the API an agent loop embeds (SPEC sections 1, 2, 8, 10, 12).

An agent loop does, per model call::

    session.add_user(text)                       # persisted at once, verbatim
    request = session.build_request(injections)  # system prompt + window + turn-scoped extras
    reply = call_the_model(request)
    session.add_assistant(reply.text, reply.tool_calls)
    session.add_tool_result(call_id, output)     # for every call
    outcome = session.end_turn(usage)            # maybe compresses; the session id may switch

The host owns the truth (the store), the rules (invariants, guards, the fence) and the
schedule.  Engines only ever see private snapshots and return proposals; a proposal is
committed in one store transaction after the fence adopted and validated it, or thrown away.

**Normalisation.**  The store keeps every message exactly as it was added.  Real agents
produce adjacent same-role messages (console echoes, interrupted turns) and calls that were
never answered; the *window* the host sends and hands to engines is therefore normalised each
time it is built: :func:`~hermes_host.messages.repair_tool_pairs` closes dangling calls and
drops stray results, then :func:`~hermes_host.messages.normalize_alternation` merges
neighbours of one role (R-1.4, R-6.9).  The function is deterministic, so the normalised
window only ever grows at its end and prompt caching holds.  :attr:`Session.normalised`
reports what it did.

**Prompt caching (R-1.3).**  Every :meth:`Session.build_request` compares the new system
prompt + window with the previous one: the system prompt must be byte-identical and the
previous window (except its final, still-open message, which a same-role merge may extend)
must be a byte-identical prefix — unless a compression was committed in between.
:attr:`Session.cache_violations` counts breaches.  ``select_context`` output and turn-scoped
injections are per-request by design and are not part of this check.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from hermes_host.config import HermesConfig, load_config
from hermes_host.fence import Fenced, HookRunner
from hermes_host.hookspecs import LIFECYCLE_HOOKS
from hermes_host.messages import MessageError
from hermes_host.models import (
    CompactionReceipt,
    SessionEvent,
)
from hermes_host.plugins import LoadedPlugins, load_plugins
from hermes_host.session import Session
from hermes_host.session.reports import (
    COMPACTED_MARKER,
    COMPACTING_MARKER,
    SESSION_ENV,
    CompressionReport,
    Normalisation,
    TurnOutcome,
)
from hermes_host.session.user_control import reset_due
from hermes_host.store import (
    StateStore,
    open_store,
)
from hermes_host.store.base import CountedWindowStore
from hermes_host.tokens import TokenCounter, encoding_info

__all__ = [
    "COMPACTED_MARKER",
    "COMPACTING_MARKER",
    "SESSION_ENV",
    "CompressionReport",
    "ContextHost",
    "Normalisation",
    "Session",
    "TurnOutcome",
    "reset_due",
]

log = logging.getLogger(__name__)


def _check_storable(field: str, text: object) -> None:
    """Refuse text that has no UTF-8 form (a lone surrogate) before it reaches the store,
    with a :class:`MessageError` naming the field and position, never the text (issue 13)."""
    if not isinstance(text, str):
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MessageError(
            f"{field} is not valid Unicode text: lone surrogate U+{ord(text[exc.start]):04X} "
            f"at position {exc.start} (it has no UTF-8 form and cannot be stored)"
        ) from None


class ContextHost:
    """Loads config and plugins once, owns the store, opens sessions.

    Build it with :meth:`from_config`.  One host per process is the norm; it is not
    thread-safe per session (an agent loop drives one session from one thread), but the
    store and the fence are shared safely.
    """

    def __init__(
        self,
        config: HermesConfig,
        store: StateStore,
        plugins: LoadedPlugins,
        *,
        owns_store: bool = False,
    ) -> None:
        self.config = config
        self.store = store
        self.plugins = plugins
        self.runner = HookRunner(
            plugins.pm, config.hooks, fence=config.fence_for, factories=plugins.factories
        )
        self.tokens = TokenCounter(model=config.model.name)  # the encoding fits the model
        self._stored_counts_fit: bool | None = None  # see _counts_fit
        self._owns_store = owns_store
        self._owned_plugins: list[object] = []

    @classmethod
    def from_config(
        cls,
        config: HermesConfig | str | os.PathLike[str] | None = None,
        *,
        store: StateStore | str | os.PathLike[str] | None = None,
        extra_plugins: Mapping[str, object] | None = None,
    ) -> ContextHost:
        """A host from ``config`` (a :class:`HermesConfig`, a path, or ``None`` for the
        R-14.5 lookup), the ``store`` (an open store, a path, or ``None`` for the configured
        one) and ``extra_plugins`` (name → instance, registered as if installed; select them
        by name in the config).

        Raises :class:`~hermes_host.config.ConfigError`,
        :class:`~hermes_host.plugins.PluginError` or
        :class:`~hermes_host.store.StoreError` with user-facing messages.
        """
        if not isinstance(config, HermesConfig):
            config = load_config(config)
        plugins = load_plugins(config, extra=dict(extra_plugins or {}))
        caller_owned = {name for name in (extra_plugins or {})}
        owns = not (store is not None and not isinstance(store, str | os.PathLike))
        if store is None:
            store = config.store_url()
        if isinstance(store, str | os.PathLike):
            store = open_store(store, lease_ttl=config.store.lease_ttl_seconds)
        host = cls(config, store, plugins, owns_store=owns)
        host._owned_plugins = [
            instance
            for name, instance in {**plugins.engines, **plugins.providers}.items()
            if name not in caller_owned
        ]
        return host

    # -- names --------------------------------------------------------------------------

    def chain(self, hook: str) -> list[str]:
        """Engines configured for ``hook`` that are registered (R-14.8)."""
        return [name for name in self.config.context.chain(hook) if name in self.plugins.engines]

    @property
    def providers(self) -> list[str]:
        return [n for n in self.config.memory.providers if n in self.plugins.providers]

    def engine_health(self) -> list[dict[str, Any]]:
        """Per engine / memory provider and hook, since this host started: calls, errors,
        timeouts, invalid answers, breaker skips, the last (redacted) error message and the
        breaker state — what went wrong is every row with ``problems > 0``.  JSON-ready."""
        return [row.as_dict() for row in self.runner.health()]

    # -- sessions -----------------------------------------------------------------------

    def open_session(
        self,
        title: str | None = None,
        system_prompt: str = "",
        *,
        user_id: str | None = None,
        cwd: str | None = None,
        source: str | None = "hermes-host",
        session_id: str | None = None,
    ) -> Session:
        """Start a new session.  The system prompt snapshot is ``system_prompt`` plus what
        memory providers append (``on_system_prompt``, R-13.1), frozen for the session.

        ``session_id`` gives the new session (and so its conversation) an id of the
        caller's choosing — a framework's own session id, so that the framework's id finds
        the conversation again with :meth:`resume` (which follows rotations).  Raises
        :class:`~hermes_host.store.StoreError` when that id is taken."""
        for name, text in (("system_prompt", system_prompt), ("title", title),
                           ("user_id", user_id), ("cwd", cwd), ("source", source),
                           ("session_id", session_id)):
            _check_storable(name, text)
        probe = SessionEvent(session_id="(new)", user_id=user_id, cwd=cwd, reason="new")
        blocks = [
            f.value
            for f in self.runner.broadcast("on_system_prompt", self.providers, probe)
            if f.adopted and isinstance(f.value, str) and f.value.strip()
        ]
        snapshot = "\n\n".join([system_prompt, *blocks]) if blocks else system_prompt
        row = self.store.create_session(
            session_id=session_id,
            source=source,
            user_id=user_id,
            model=self.config.model.name,
            model_config={"base_system_prompt": system_prompt},
            system_prompt=snapshot,
            title=title,
            cwd=cwd if cwd is not None else os.getcwd(),
        )
        session = Session(self, row.id, snapshot, [], title=row.title, cwd=row.cwd,
                          conversation_id=row.conversation_id)
        self._broadcast("on_session_start", SessionEvent(
            session_id=row.id, user_id=user_id, cwd=row.cwd, reason="new"
        ))
        return session

    def resume(self, by: str) -> Session:
        """Reopen a stored session by id, ``"last"`` or title (the newest of its lineage,
        R-8.3).  The id of a session a compression rotated resumes its newest descendant: the
        rotated one is ended and its window lives on there.  Raises
        :class:`~hermes_host.store.SessionNotFoundError`."""
        row = self.store.resume(by)
        marker = self.store.window_marker(row.id)
        if marker.session_id != row.id:
            row = self.store.get_session(marker.session_id)
        snapshot = row.system_prompt
        if snapshot is None:
            for ancestor in reversed(self.store.lineage(row.id)[:-1]):
                snapshot = self.store.get_session(ancestor).system_prompt
                if snapshot is not None:
                    break
        counts: list[int] | None = None
        if isinstance(self.store, CountedWindowStore) and self._counts_fit():
            window, counts = self.store.active_messages_counted(row.id)
        else:
            window = self.store.active_messages(row.id)
        if window and window[0].get("role") == "system":
            snapshot = str(window[0].get("content") or "")
            window = window[1:]
            counts = counts[1:] if counts is not None else None
        session = Session(
            self, row.id, snapshot or "", window, title=row.title, cwd=row.cwd, marker=marker,
            conversation_id=row.conversation_id,
        )
        if counts is not None:  # the window's first count reuses them (issue 32)
            session._stored_counts = (window, counts)
        session.compression_count = row.compression_count
        session.lineage = self.store.lineage(row.id)
        self._broadcast("on_session_start", SessionEvent(
            session_id=row.id, user_id=row.user_id, cwd=row.cwd, reason="resume"
        ))
        return session

    def _counts_fit(self) -> bool:
        """Whether the store's token counts are this host's: the store counts rows it is
        handed uncounted with the default encoding, so a resumed window reuses them only when
        this host counts with the same one (found once, when first resuming: it loads the
        encoding)."""
        if self._stored_counts_fit is None:
            self._stored_counts_fit = (encoding_info(self.config.model.name)["encoding"]
                                       == encoding_info()["encoding"])
        return self._stored_counts_fit

    def session_for(
        self,
        user_id: str | None = None,
        *,
        system_prompt: str = "",
        title: str | None = None,
        cwd: str | None = None,
        now: float | None = None,
    ) -> Session:
        """The live session of ``user_id`` for a gateway: the newest unended one, unless
        ``session_reset`` says it is stale (then ``on_session_reset`` fires, it is ended and a
        new one opens).  With ``group_sessions_per_user: false`` every user shares one.

        To give the agent one turn to save memory before an automatic reset (R-11.4), check
        :meth:`Session.reset_due` first and call :meth:`Session.reset` yourself."""
        key = user_id if self.config.group_sessions_per_user else None
        candidates = self.store.list_sessions(limit=20, user_id=key)
        current = next((row for row in candidates if row.ended_at is None), None)
        if current is None:
            return self.open_session(title, system_prompt, user_id=user_id, cwd=cwd)
        session = self.resume(current.id)
        reason = reset_due(self.config.session_reset, current.last_activity_at, now)
        if reason is None:
            return session
        return session.reset(reason, title=title, system_prompt=system_prompt)

    def close(self) -> None:
        """Close the plugins this host instantiated (those with a ``close()``, e.g. an
        engine's network clients) and the store when this host opened it."""
        for plugin in self._owned_plugins:
            closer = getattr(plugin, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # a plugin's cleanup bug must not stop the others
                    pass
        self._owned_plugins = []
        self.runner.close()  # worker processes of process-isolated engines
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ContextHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------

    def _broadcast(
        self, hook: str, request: Any, timeout: float | None = None
    ) -> list[Fenced[Any]]:
        if not self.providers:
            return []
        return self.runner.broadcast(hook, self.providers, request, timeout=timeout)

    def _post_compress(self, receipt: CompactionReceipt) -> list[Fenced[Any]]:
        """``on_post_compress`` to every memory provider and every configured engine."""
        names = list(dict.fromkeys(
            [*self.providers, *(n for hook in LIFECYCLE_HOOKS for n in self.chain(hook))]
        ))
        return self.runner.broadcast("on_post_compress", names, receipt) if names else []


