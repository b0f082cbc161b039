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

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent.context_engine import ContextEngine

from hermes_agent_hermes_host._state import ENGINE_NAME, _short, logger
from hermes_agent_hermes_host.history import _Entry, _History
from hermes_agent_hermes_host.locations import locate
from hermes_agent_hermes_host.sessions import _serving, _Sessions
from hermes_agent_hermes_host.status import _Status
from hermes_agent_hermes_host.tools import SEARCH_TOOL, _Tools

if TYPE_CHECKING:
    from hermes_host.host import ContextHost, Session

__all__ = ["ENGINE_NAME", "SEARCH_TOOL", "HermesHostEngine", "engine_for", "locate"]


def engine_for(hermes_session_id: str | None) -> HermesHostEngine | None:
    """The engine serving this Hermes session, if any."""
    engine = _serving(hermes_session_id)
    return engine if isinstance(engine, HermesHostEngine) else None


class HermesHostEngine(
    _Sessions, _History, _Tools, _Status, ContextEngine  # type: ignore[misc]  # no types
):
    """Hermes Agent's context engine, backed by hermes-host (see the module doc).

    ``config`` (a path or a ``HermesConfig``), ``store`` and ``extra_plugins`` are handed to
    :meth:`ContextHost.from_config` unchanged when given; by default they are located as the
    module doc says.  ``warn`` receives each user-facing warning line (default: stderr).

    The parts live in their own modules: :mod:`.sessions`, :mod:`.history`, :mod:`.tools`
    and :mod:`.status`; this one answers the host, the model and the ContextEngine contract.
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
            elif self._session is not None:
                # The threshold the session's decision uses (an engine's own rule, e.g. the
                # compressor's floor and output reservation), as a decision would report it.
                try:
                    decided = self._session.status().get("threshold_tokens")
                except Exception as exc:  # never break Hermes' model switch
                    self._warn(f"hermes-host status after the model switch: {_short(exc)}")
                else:
                    if decided:
                        self.threshold_tokens = int(decided)

    def bind_session_state(self, session_db: Any = None, session_id: str = "") -> None:
        """Hermes hands over its session database (used only to follow its
        ``parent_session_id`` chain when a rotated Hermes session is resumed)."""
        self._session_db = session_db

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
        """The messages to send for this request — the ``select_context`` engines' choice,
        then the request bound (never larger than ``context_length - max_output_tokens``,
        condensed in order of least harm when over, with a ``⚠ hermes-host:`` line saying
        why) — or ``None`` to send it unchanged (fail open)."""
        with self._lock:
            session, host = self._session, self._host
            if session is None or host is None:
                return None
            selected = request_messages
            if self._selectors(host):
                try:
                    selected = session.select_context(request_messages)
                except Exception as exc:
                    self._warn(f"select_context failed, sending the request unchanged: "
                               f"{_short(exc)}")
                finally:
                    self._report_problems()
            from hermes_host.messages import sanitize_for_wire

            wire = sanitize_for_wire(selected)
            warned = session.window_warning
            try:
                wire = session.fit_request(wire)
            except Exception as exc:
                self._warn(f"the request bound failed, sending the request as is: "
                           f"{_short(exc)}")
            if session.window_warning and session.window_warning != warned:
                self._warn(session.window_warning)
            if wire == request_messages:
                return None
            return wire

    @staticmethod
    def _selectors(host: ContextHost) -> list[str]:
        """The configured ``select_context`` engines that implement the hook (by default
        the chain is ``[context.engine]``, which may not select at all: then a request
        costs nothing)."""
        return [name for name in host.chain("select_context")
                if callable(getattr(host.plugins.engines.get(name), "select_context", None))]
