"""``HermesHostEngine``: Hermes Agent's ``ContextEngine`` contract answered by hermes-host.

One engine object serves one Hermes ``AIAgent`` (Hermes deep-copies the registered engine
for each agent; :meth:`HermesHostEngine.__deepcopy__` hands each copy a fresh, unopened
state).  Each engine opens its own :class:`~hermes_host.host.ContextHost` on first use — the
engines, guards, fence and store of hermes-host's ``config.yaml`` — and drives one hermes-host
session per Hermes session:

* **ids** — a new Hermes session opens a hermes-host conversation under Hermes' own session
  id, so ``conversation_id`` *is* the Hermes session id; hermes-host's own rotations change
  ``session.id`` but never that.  A Hermes session that rotated (Hermes' legacy, non-in-place
  compaction) keeps the hermes-host conversation it had; resumed later under the child id,
  the conversation is found again through Hermes' own ``parent_session_id`` chain.
* **history** — every message Hermes adds is appended to the hermes-host store, verbatim,
  before each model call and when a turn has its answer (the ``pre_api_request`` and
  ``post_llm_call`` hooks of :mod:`.plugin`), before a
  compression and at session end.  Messages are matched by identity first and by content
  second, so neither a resumed Hermes session's reloaded history nor the copies Hermes
  makes around a compaction are stored twice.
* **compression** — ``should_compress`` asks hermes-host (its engines, then its threshold
  rule, bound by the durable guards); ``compress`` runs hermes-host's compression pass (the
  configured engine inside the fence, with Hermes' ``focus_topic`` and ``memory_context``),
  publishes it to the store and returns the new window to Hermes.
* **per request** — hermes-host's ``select_context`` engines shape each request Hermes
  sends (the ``llm_request`` middleware of :mod:`.plugin`).
* **failures** — nothing raises into Hermes.  A compression that fails, hangs past its time
  limit or is refused leaves Hermes' messages as they were and shows Hermes' own
  "⚠ Compression aborted: …" warning; any other engine problem (a ``should_compress`` or
  ``select_context`` engine raising or timing out) prints one ``⚠ hermes-host: …`` line on
  stderr per new problem and is logged; ``get_status()`` lists them all.

Where the configuration and the store are: ``$HERMES_HOST_CONFIG`` if set, else
``<home>/config.yaml`` if it exists, else hermes-host's defaults, where ``<home>`` is
``$HERMES_HOST_HOME`` or, unset, ``<Hermes home>/hermes-host`` (``~/.hermes/hermes-host``).
The store is the config's ``store.url``, else ``<home>/state.db``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.context_engine import ContextEngine

if TYPE_CHECKING:
    from hermes_host.host import ContextHost, Session

__all__ = ["ENGINE_NAME", "SEARCH_TOOL", "HermesHostEngine", "engine_for", "locate"]

ENGINE_NAME = "hermes_host"
"""The ``context.engine`` value that selects this engine in Hermes' config.yaml."""

SEARCH_TOOL = "hermes_host_search"
"""The tool this engine offers: search the whole stored history, compacted rows included."""

logger = logging.getLogger("hermes_agent_hermes_host")

# Hermes session id -> the engine serving it (the plugin's hook and middleware find their
# engine here; weak, so an agent that is gone leaves nothing behind).
_ACTIVE: weakref.WeakValueDictionary[str, HermesHostEngine] = weakref.WeakValueDictionary()
_ACTIVE_LOCK = threading.Lock()


def engine_for(hermes_session_id: str | None) -> HermesHostEngine | None:
    """The engine serving this Hermes session, if any."""
    if not hermes_session_id:
        return None
    with _ACTIVE_LOCK:
        return _ACTIVE.get(hermes_session_id)


def locate(hermes_home: str | os.PathLike[str] | None = None) -> tuple[Path | None, Path]:
    """``(config file or None, hermes-host home)`` for a Hermes home (see the module doc)."""
    env_home = os.environ.get("HERMES_HOST_HOME")
    if env_home:
        home = Path(env_home).expanduser()
    else:
        base = hermes_home or os.environ.get("HERMES_HOME") or Path.home() / ".hermes"
        home = Path(base).expanduser() / "hermes-host"
    env_config = os.environ.get("HERMES_HOST_CONFIG")
    if env_config:
        return Path(env_config).expanduser(), home
    candidate = home / "config.yaml"
    return (candidate if candidate.is_file() else None), home


def _canon(message: Mapping[str, Any]) -> str:
    """What makes two messages the same message, whatever bookkeeping keys either carries."""
    calls = [
        (c.get("id"), (c.get("function") or {}).get("name"),
         (c.get("function") or {}).get("arguments"))
        for c in (message.get("tool_calls") or []) if isinstance(c, Mapping)
    ]
    return json.dumps(
        [message.get("role"), message.get("content"), calls, message.get("tool_call_id")],
        sort_keys=True, default=str, ensure_ascii=False,
    )


class _Entry:
    """One message Hermes holds that the store already has: the dict itself (kept alive so
    its ``id`` is never reused) and, when compared once, its canonical form."""

    __slots__ = ("canon", "obj")

    def __init__(self, obj: Mapping[str, Any] | None, canon: str | None = None) -> None:
        self.obj = obj
        self.canon = canon

    def form(self) -> str:
        if self.canon is None:
            assert self.obj is not None
            self.canon = _canon(self.obj)
        return self.canon


class HermesHostEngine(ContextEngine):  # type: ignore[misc]  # hermes-agent ships no types
    """Hermes Agent's context engine, backed by hermes-host (see the module doc).

    ``config`` (a path or a ``HermesConfig``), ``store`` and ``extra_plugins`` are handed to
    :meth:`ContextHost.from_config` unchanged when given; by default they are located as the
    module doc says.  ``warn`` receives each user-facing warning line (default: stderr).
    """

    def __init__(
        self,
        config: Any = None,
        *,
        store: Any = None,
        extra_plugins: Mapping[str, object] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self._config_arg = config
        self._store_arg = store
        self._extra = dict(extra_plugins or {})
        self._warn_fn = warn
        self._host: ContextHost | None = None
        self._session: Session | None = None
        self._hermes_session_id: str | None = None
        self._model_name = ""
        self._session_db: Any = None
        self._mirror: list[_Entry] = []
        self._retired: dict[int, Mapping[str, Any]] = {}
        """The list the last compression replaced (kept alive: its ids stay unique)."""
        self._lock = threading.RLock()
        self._problems_seen: dict[tuple[str, str], int] = {}
        self._warned: set[str] = set()
        self._last_decision_reason: str | None = None
        self.last_report: dict[str, Any] | None = None
        """The last compression report (``CompressionReport.as_dict()``)."""
        # read by Hermes after compress(): see agent/conversation_compression.py
        self._last_compress_aborted = False
        self._last_summary_error: str | None = None

    # -- identity and copies -----------------------------------------------------------

    @property
    def name(self) -> str:
        return ENGINE_NAME

    def __deepcopy__(self, memo: dict[int, Any]) -> HermesHostEngine:
        """Hermes copies the registered engine for every agent: each copy starts unopened
        (no host, no session) with the same configuration and in-test plugins."""
        fresh = type(self)(
            self._config_arg, store=self._store_arg, extra_plugins=self._extra,
            warn=self._warn_fn,
        )
        for attr in ("threshold_percent", "protect_first_n", "protect_last_n",
                     "context_length", "threshold_tokens"):
            setattr(fresh, attr, getattr(self, attr))
        return fresh

    # -- the host ----------------------------------------------------------------------

    @property
    def host(self) -> ContextHost | None:
        return self._host

    @property
    def session(self) -> Session | None:
        """The hermes-host session this engine drives (``None`` before a session starts)."""
        return self._session

    def _open_host(self, hermes_home: str | None) -> ContextHost:
        if self._host is not None:
            return self._host
        from hermes_host.config import HermesConfig, load_config
        from hermes_host.host import ContextHost

        config_path, home = locate(hermes_home)
        if isinstance(self._config_arg, HermesConfig):
            config = self._config_arg
        else:
            config = load_config(self._config_arg or config_path)
        store = self._store_arg
        if store is None and not config.store.url:
            store = home / "state.db"
        config = self._with_model(config)
        self._host = ContextHost.from_config(config, store=store, extra_plugins=self._extra)
        self._set_threshold()
        return self._host

    def _with_model(self, config: Any) -> Any:
        """hermes-host decides on the context length of the model Hermes really runs."""
        model = config.model
        update: dict[str, Any] = {}
        if self.context_length:
            update["context_length"] = int(self.context_length)
        if self._model_name:
            update["name"] = self._model_name
        if not update:
            return config
        return config.model_copy(update={"model": model.model_copy(update=update)})

    def _set_threshold(self) -> None:
        from hermes_host.guards import threshold_tokens

        host = self._host
        if host is None:
            return
        model = host.config.model
        self.context_length = model.context_length
        self.threshold_percent = host.config.compression.threshold_percent
        self.threshold_tokens = threshold_tokens(
            host.config.compression, model.context_length, model.name
        )
        self.protect_last_n = host.config.compression.protect_last_n
        self.protect_first_n = host.config.compression.protect_first_n

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """Hermes switched models (or is starting): hermes-host decides on this context
        length and this model's tokenizer and thresholds from now on."""
        self._model_name = model
        self.context_length = context_length
        with self._lock:
            if self._host is not None:
                try:
                    self._host.config = self._with_model(self._host.config)
                except Exception as exc:  # pragma: no cover - pydantic refuses a bad length
                    self._warn(f"model switch not applied to hermes-host: {exc}")
            self._set_threshold()
            if self._host is None:
                self.threshold_tokens = int(context_length * self.threshold_percent)

    def bind_session_state(self, session_db: Any = None, session_id: str = "") -> None:
        """Hermes hands over its session database (used only to follow its
        ``parent_session_id`` chain when a rotated Hermes session is resumed)."""
        self._session_db = session_db

    # -- sessions ----------------------------------------------------------------------

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        with self._lock:
            try:
                self._start(session_id, kwargs)
            except Exception as exc:
                self._session = None
                self._warn(f"could not open the hermes-host session ({_short(exc)}); Hermes "
                           "goes on without hermes-host's context management this session")

    def _start(self, session_id: str, kwargs: Mapping[str, Any]) -> None:
        if kwargs.get("boundary_reason") == "compression" and self._session is not None:
            # Hermes' own compaction boundary (its id rotates unless in place): the
            # hermes-host conversation goes on; only the Hermes id it answers to changes.
            self._register(session_id, replaces=kwargs.get("old_session_id"))
            return
        host = self._open_host(kwargs.get("hermes_home"))
        self._session = self._open_or_resume(host, session_id, kwargs)
        self._mirror = [_Entry(None, _canon(m)) for m in self._session.raw_window]
        self.compression_count = self._session.compression_count
        self._register(session_id)

    def _open_or_resume(
        self, host: ContextHost, session_id: str, kwargs: Mapping[str, Any]
    ) -> Session:
        from hermes_host.store import SessionNotFoundError

        for candidate in self._lineage(session_id):
            try:
                host.store.get_session(candidate)
            except SessionNotFoundError:
                continue
            return host.resume(candidate)
        platform = kwargs.get("platform") or "cli"
        return host.open_session(
            session_id=session_id, source=f"hermes-agent:{platform}",
            user_id=kwargs.get("conversation_id") or None,
        )

    def _lineage(self, session_id: str) -> list[str]:
        """This Hermes session id and its ancestors in Hermes' own database, newest first."""
        chain = [session_id]
        db = self._session_db
        getter = getattr(db, "get_session", None)
        while callable(getter) and len(chain) < 100:
            try:
                row = getter(chain[-1])
            except Exception:
                break
            parent = row.get("parent_session_id") if isinstance(row, Mapping) else None
            if not parent or parent in chain:
                break
            chain.append(str(parent))
        return chain

    def _register(self, session_id: str, replaces: str | None = None) -> None:
        with _ACTIVE_LOCK:
            if self._hermes_session_id and _ACTIVE.get(self._hermes_session_id) is self:
                del _ACTIVE[self._hermes_session_id]
            if replaces and _ACTIVE.get(replaces) is self:
                del _ACTIVE[replaces]
            _ACTIVE[session_id] = self
        self._hermes_session_id = session_id

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Hermes' session boundary (exit, /reset, expiry — and, through its
        ``commit_memory_session``, every compaction boundary too): store what is not stored
        yet.  The engine keeps serving the session (the agent may go on), and the hermes-host
        session stays open in the store, to be resumed."""
        self.sync(messages)

    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: the hermes-host session is ended (it stays in the store,
        searchable); the next ``on_session_start`` opens a fresh one."""
        super().on_session_reset()
        with self._lock:
            session, self._session = self._session, None
            self._mirror, self._retired = [], {}
            if session is not None and self._host is not None:
                try:
                    self._host.store.end_session(session.id, "reset")
                except Exception as exc:
                    self._warn(f"could not end the hermes-host session: {_short(exc)}")

    # -- history -----------------------------------------------------------------------

    def sync(self, messages: Sequence[Mapping[str, Any]] | None) -> int:
        """Append to the store every message of Hermes' list it does not hold yet; returns
        how many.  Never raises (a failure is warned about and retried at the next call)."""
        if not messages:
            return 0
        with self._lock:
            session = self._session
            if session is None:
                return 0
            try:
                return self._sync(session, [m for m in messages if isinstance(m, Mapping)])
            except Exception as exc:
                self._warn(f"could not store Hermes' messages in hermes-host: {_short(exc)}")
                return 0

    def _sync(self, session: Session, messages: list[Mapping[str, Any]]) -> int:
        """Append the messages of Hermes' list that are new, in order.  Already stored are:

        * the messages seen before (by identity), including those of the list the last
          compression replaced — Hermes may still hand that list around within the turn;
        * a copy of a stored window message that no other entry of the list accounts for
          (Hermes copies messages around a compaction; a resumed session reloads its
          history as new objects) — matched by content, not position, because Hermes also
          inserts messages (a todo snapshot, a user anchor);
        * hermes-host's own summary in whatever form Hermes passes it back (the store holds
          it already, flagged)."""
        from hermes_host.messages import is_summary

        body = [m for m in messages if m.get("role") != "system"]
        present = {id(m) for m in body}
        known = {id(e.obj): e for e in self._mirror if e.obj is not None}
        unmatched: Counter[str] = Counter(
            e.form() for e in self._mirror if e.obj is None or id(e.obj) not in present
        )
        mirror: list[_Entry] = []
        added = 0
        for message in body:
            entry = known.get(id(message))
            if entry is None and self._retired.get(id(message)) is message:
                entry = _Entry(message)
            if entry is not None and entry.obj is message:
                mirror.append(entry)
                continue
            form = _canon(message)
            if unmatched[form] > 0:
                unmatched[form] -= 1
            elif not is_summary(dict(message)):
                session.add_message(dict(message))
                added += 1
            mirror.append(_Entry(message, form))
        self._mirror = mirror
        return added

    # -- the ContextEngine contract ----------------------------------------------------

    def update_from_response(self, usage: dict[str, Any]) -> None:
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or 0)
        with self._lock:
            if self._session is None or not usage:
                return
            try:
                self._session.record_usage(usage)
            except Exception as exc:
                self._warn(f"could not record usage in hermes-host: {_short(exc)}")

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        with self._lock:
            session = self._session
            if session is None:
                return False
            try:
                decision = session.should_compress(prompt_tokens or None)
            except Exception as exc:
                self._warn(f"should_compress failed, not compressing now: {_short(exc)}")
                return False
            finally:
                self._report_problems()
            self._last_decision_reason = decision.reason
            if decision.threshold_tokens:
                self.threshold_tokens = decision.threshold_tokens
            return bool(decision.compress)

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        return sum(1 for m in messages if m.get("role") == "user") > 1

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """Run hermes-host's compression pass on Hermes' messages and return the new window
        (Hermes' list unchanged when nothing was committed)."""
        with self._lock:
            self._last_compress_aborted = False
            self._last_summary_error = None
            session = self._session
            if session is None:
                self._abort("hermes-host has no session open (see the warning above)")
                return messages
            try:
                self._sync(session, [m for m in messages if isinstance(m, Mapping)])
                report = session.compress(
                    force=force, focus=focus_topic or None,
                    memory_context=memory_context or None,
                )
            except Exception as exc:
                self._abort(f"hermes-host failed: {_short(exc)}")
                return messages
            finally:
                self._report_problems(quiet_hooks=("compress",))
            self.last_report = report.as_dict()
            if report.status == "committed":
                return self._adopt(session, messages)
            if report.status == "rejected" or report.outcome in (
                "failed_transient", "failed_permanent", "aborted"
            ):
                self._abort(report.message or f"hermes-host: {report.outcome}")
            return messages

    def _adopt(self, session: Session, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from hermes_host.messages import sanitize_for_wire

        window = session.window()
        if window and window[0].get("role") == "system":
            window = window[1:]  # Hermes owns the system prompt
        head = [m for m in messages[:1] if m.get("role") == "system"]
        fresh = [dict(m) for m in sanitize_for_wire(window)]
        self._retired = {id(m): m for m in messages}
        self._mirror = [_Entry(m) for m in fresh]
        self.compression_count = session.compression_count
        return [*head, *fresh]

    def _abort(self, message: str) -> None:
        from hermes_host.redact import redact

        self._last_compress_aborted = True
        self._last_summary_error = redact(message)
        logger.warning("hermes-host compression did not run: %s", self._last_summary_error)

    # -- per request -------------------------------------------------------------------

    def select(self, request_messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The ``select_context`` engines' messages for this request, or ``None`` to send it
        unchanged (no engine configured, or every engine failed: fail open)."""
        with self._lock:
            session, host = self._session, self._host
            if session is None or host is None or not self._selectors(host):
                return None
            try:
                selected = session.select_context(request_messages)
            except Exception as exc:
                self._warn(f"select_context failed, sending the request unchanged: "
                           f"{_short(exc)}")
                return None
            finally:
                self._report_problems()
            if selected == request_messages:
                return None
            from hermes_host.messages import sanitize_for_wire

            return sanitize_for_wire(selected)

    @staticmethod
    def _selectors(host: ContextHost) -> list[str]:
        """The configured ``select_context`` engines that implement the hook (by default
        the chain is ``[context.engine]``, which may not select at all: then a request
        costs nothing)."""
        return [name for name in host.chain("select_context")
                if callable(getattr(host.plugins.engines.get(name), "select_context", None))]

    # -- tools -------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """``hermes_host_search`` (the whole stored history, compacted rows included), plus
        what the configured ``select_context`` engines offer through an optional
        ``tool_schemas()`` method."""
        schemas: list[dict[str, Any]] = [{
            "name": SEARCH_TOOL,
            "description": (
                "Search this conversation's full stored history, including messages that "
                "were compressed out of the context window. Returns matching messages "
                "with their neighbours."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words or a literal phrase."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                },
                "required": ["query"],
            },
        }]
        for _, engine in self._tool_engines():
            try:
                offered = engine.tool_schemas()
            except Exception as exc:
                self._warn(f"an engine's tool_schemas() failed: {_short(exc)}")
                continue
            schemas.extend(s for s in offered or [] if isinstance(s, dict) and s.get("name"))
        return schemas

    def _tool_engines(self) -> list[tuple[str, Any]]:
        host = self._host
        if host is None:
            self._open_tools_host()
            host = self._host
        if host is None:
            return []
        found = []
        for name in host.chain("select_context"):
            engine = host.plugins.engines.get(name)
            if callable(getattr(engine, "tool_schemas", None)):
                found.append((name, engine))
        return found

    def _open_tools_host(self) -> None:
        # Hermes asks for tool schemas before the session starts: open the host early.
        try:
            with self._lock:
                self._open_host(None)
        except Exception as exc:
            self._warn(f"could not load hermes-host's configuration: {_short(exc)}")

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        try:
            self.sync(kwargs.get("messages"))
            if name == SEARCH_TOOL:
                return self._search(args)
            for _, engine in self._tool_engines():
                offered = {s.get("name") for s in engine.tool_schemas() or []}
                if name in offered:
                    return str(engine.handle_tool_call(name, dict(args)))
        except Exception as exc:
            return json.dumps({"error": f"{name} failed: {_short(exc)}"})
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def _search(self, args: Mapping[str, Any]) -> str:
        session, host = self._session, self._host
        if session is None or host is None:
            return json.dumps({"error": "no hermes-host session is open"})
        query = str(args.get("query") or "").strip()
        if not query:
            return json.dumps({"error": "query is required"})
        limit = max(1, min(20, int(args.get("limit") or 5)))
        hits = host.store.session_search(query, session_id=session.id, lineage=True,
                                         limit=limit)
        return json.dumps({"results": [_hit(h) for h in hits]}, ensure_ascii=False)

    # -- status and warnings -----------------------------------------------------------

    def get_status(self) -> dict[str, Any]:
        status: dict[str, Any] = dict(super().get_status())
        with self._lock:
            session = self._session
            if session is None:
                status["hermes_host"] = {"session_id": None}
                return status
            try:
                full = session.status()
            except Exception as exc:
                status["hermes_host"] = {"error": _short(exc)}
                return status
        assert self._host is not None
        status["compression_count"] = full["compression_count"]
        status["hermes_host"] = {
            "session_id": full["session_id"],
            "conversation_id": full["conversation_id"],
            "hermes_session_id": self._hermes_session_id,
            "store": self._host.store.location,
            "window_tokens": full["window_tokens"],
            "threshold_tokens": full["threshold_tokens"],
            "blocked": full["blocked"],
            "last_decision": self._last_decision_reason,
            "engines": full["engines"],
            "engine_problems": full["engine_problems"],
            "lineage": full["lineage"],
            "last_compression": self.last_report,
        }
        return status

    def _report_problems(self, quiet_hooks: tuple[str, ...] = ()) -> None:
        """One warning line per new engine problem the fence recorded since the last look
        (hooks in ``quiet_hooks`` are shown by Hermes itself)."""
        host = self._host
        if host is None:
            return
        for row in host.engine_health():
            key = (str(row["plugin"]), str(row["hook"]))
            problems = int(row["problems"])
            if problems <= self._problems_seen.get(key, 0):
                continue
            self._problems_seen[key] = problems
            if key[1] in quiet_hooks:
                continue
            fallback = {
                "should_compress": "hermes-host's own threshold decided",
                "select_context": "the request was sent unchanged",
            }.get(key[1], "Hermes' turn goes on")
            self._warn(f"engine {key[0]!r} {key[1]}: {row['last_error'] or 'failed'} "
                       f"({row['errors']} errors, {row['timeouts']} timeouts, breaker "
                       f"{row['breaker'] or 'closed'}); {fallback}")

    def _warn(self, text: str) -> None:
        from hermes_host.redact import redact

        line = f"⚠ hermes-host: {redact(text)}"
        logger.warning("%s", line)
        if line in self._warned:  # said once is enough (the log has every occurrence)
            return
        self._warned.add(line)
        if self._warn_fn is not None:
            self._warn_fn(line)
        else:
            print(line, file=sys.stderr, flush=True)


def _short(exc: BaseException, limit: int = 400) -> str:
    """The exception on one line (a ConfigError's details are on the lines after its
    first), cut at ``limit`` characters."""
    text = "; ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}".rstrip(": ")


def _hit(hit: Any) -> dict[str, Any]:
    def text(sm: Any) -> Any:
        return {"role": sm.message.get("role"), "content": sm.message.get("content")}

    return {
        "role": hit.role,
        "content": hit.content,
        "compacted": not hit.active,
        "before": [text(m) for m in hit.before],
        "after": [text(m) for m in hit.after],
    }
