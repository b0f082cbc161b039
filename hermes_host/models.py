"""Request and result types that cross the host/engine boundary.

Every lifecycle hook takes exactly one keyword argument, ``request``, and returns one result
object or ``None``.  These are pydantic models so that adding a field later never breaks a
plugin: engines read the fields they know and ignore the rest.

Messages are plain OpenAI-format dicts (``{"role": ..., "content": ..., "tool_calls": [...],
"tool_call_id": ...}``).  Keys that start with ``_`` are host/engine metadata (for example
``_compressed_summary``) and are stripped by the wire sanitiser before a request leaves the
process (R-7.5).

The request an engine receives is a private deep copy (R-10.2): mutate it freely, it changes
nothing outside your call.  The host only ever uses what you *return*.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

Message = dict[str, Any]
"""One OpenAI-format chat message."""

_SHARED_MESSAGE_TYPES: set[type] = set()
"""Types of read-only, already validated messages (the fence's ``FrozenDict`` registers
itself): a message list keeps such messages as the very objects instead of copying them."""


_SHARED_LISTS: list[Callable[[list[Any]], list[Any] | None]] = []
"""Lookups of message lists the fence handed out (it registers one): given a list, the
fence's own messages when the list still holds exactly them, else None."""


def _keep_shared(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate a message list, keeping the read-only messages the fence shares as they are:
    an engine that answers ``SelectResult(messages=request.messages)`` hands back the same
    objects, so the fence checks its result by identity, in O(change) (issue 15).  The very
    list the fence handed out is recognised by one C-level compare (issue 32)."""
    if type(value) is not list or not _SHARED_MESSAGE_TYPES:
        return handler(value)
    for lookup in _SHARED_LISTS:
        shared = lookup(value)
        if shared is not None:
            return shared
    if set(map(type, value)) <= _SHARED_MESSAGE_TYPES:
        return list(value)
    out = handler(value)  # every other message validated (and copied) as usual
    return [a if type(a) in _SHARED_MESSAGE_TYPES else b for a, b in zip(value, out, strict=True)]


Messages = Annotated[list[Message], WrapValidator(_keep_shared)]
"""The type of every ``messages`` field of a request or result."""

__all__ = [
    "CompactionReceipt",
    "CompressDecision",
    "CompressRequest",
    "CompressResult",
    "CompressionSettings",
    "GuardState",
    "HistoryReader",
    "Message",
    "PreCompressRequest",
    "PruneRequest",
    "PruneResult",
    "ReceiptPart",
    "SelectRequest",
    "SelectResult",
    "SessionEvent",
    "ShouldCompressRequest",
    "SummarizerSettings",
    "SummaryOutcome",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class _Settings(_Model):
    """A section of ``config.yaml``: strict types, so a quoted ``"0.5"`` or ``"yes"`` is an
    error instead of being coerced (issue 12)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True)


class CompressionSettings(_Settings):
    """The user's ``compression:`` section of ``config.yaml`` (SPEC R-4.5, R-12.2).

    The host passes it to ``should_compress`` and ``compress`` so that an engine honours the
    user's settings without reading config files itself.
    """

    threshold_percent: float = Field(
        0.50, gt=0, le=1,
        description="Trigger ratio of the context window (R-4.2). The default compressor "
        "uses at least 0.75 under 512K tokens and keeps max_output_tokens free: see "
        "lifecycle.md, 'When compression triggers'.",
    )
    threshold_tokens: int | None = Field(
        None, gt=0, description="Absolute cap on the trigger threshold (R-4.2)."
    )
    model_thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="threshold_percent by model-name substring; the longest match wins (R-4.4).",
    )
    protect_first_n: int = Field(3, ge=0)
    protect_last_n: int = Field(20, ge=1)
    summary_target_ratio: float = Field(
        0.20, ge=0.0, le=1.0,
        description="The verbatim tail's share (clamped to 0.10-0.80) of what a compression "
        "leaves: threshold × target_percent × this (R-4.5).",
    )
    abort_on_summary_failure: bool = False
    proactive_prune_tokens: int = Field(0, ge=0, description="0 = off (R-11.1).")
    min_tail_user_messages: int = Field(1, ge=0)
    micro_compact: bool = False
    context_timeout_seconds: float = Field(
        120.0, gt=0, description="Bounds the whole compression pass (R-14.9)."
    )
    mode: Literal["rotate", "in_place"] = Field(
        "rotate", description="How a compression is persisted (R-8.1 / R-8.2)."
    )
    cooldown_seconds: float = Field(
        600.0, gt=0,
        description="After a transient summariser failure, no LLM summariser call for this "
        "long (R-5.1); compression goes on with the offline summariser meanwhile.",
    )
    target_percent: float = Field(
        0.70, gt=0, le=1,
        description="A compression leaves the window at or below this share of the trigger "
        "threshold (the threshold after reserving max_output_tokens), the tail "
        "summary_target_ratio of it; see lifecycle.md.",
    )
    min_saving_percent: float = Field(
        0.10, ge=0, lt=1,
        description="A proposal that would free less than this share of the window is not "
        "worth a summariser call: the engine says so before calling it.",
    )


class SummarizerSettings(_Settings):
    """The user's ``summarizer:`` section: which auxiliary LLM writes summaries (R-14.7).

    ``provider`` names a model provider of the ``hermes_host.model_providers`` entry-point
    group (built in: ``anthropic``, ``openai``, ``offline``).  ``auto`` — the default — uses
    Anthropic when ``ANTHROPIC_API_KEY`` is set and the offline extractive summariser otherwise.
    ``api_key_env`` is the *name* of the variable holding the key (default: the provider's
    own, ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``); a key never goes into config.
    """

    provider: str = Field("auto", pattern=r"^[a-z][a-z0-9_.-]*$",
                          description="auto, or a model provider's name (anthropic, openai, "
                          "offline, or an installed plugin's).")
    model: str = "claude-3-5-haiku-latest"
    max_tokens: int = Field(4096, gt=0)
    temperature: float = Field(0.2, ge=0, le=2)
    base_url: str | None = None
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(0, ge=0)
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key (never the key)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra HTTP headers sent with every request (OpenRouter's HTTP-Referer…).",
    )
    continuation: bool = Field(
        False,
        description="The summariser is the chat model on the same provider: send the summary "
        "request as a continuation of the last chat request (the window as sent, plus one "
        "instruction message), so that a provider caching prompt prefixes can bill it as a "
        "cache read. Used only while the window fits the request budget (a condensed request "
        "is not that prefix); OpenAI-compatible servers cache prefixes by themselves, while "
        "Anthropic needs cache_control breakpoints, which hermes-host does not set yet.",
    )

    @model_validator(mode="before")
    @classmethod
    def _key_env_is_a_name(cls, data: Any) -> Any:
        return check_api_key_env(data)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_api_key_env(data: Any) -> Any:
    """``api_key_env`` must name an environment variable.  Checked on the whole section so
    that a key pasted there by mistake is never echoed in the configuration error."""
    if isinstance(data, dict):
        value = data.get("api_key_env")
        if value is not None and not (isinstance(value, str) and _ENV_NAME.match(value)):
            raise ValueError("api_key_env takes the NAME of an environment variable (such as "
                             "OPENAI_API_KEY), never the key itself; the value is not shown")
    return data


class GuardState(_Model):
    """Durable guard counters of the session (R-5.3), read fresh from the store by the host
    immediately before the hook is called, so that several processes agree."""

    cooldown_until: float | None = Field(
        None, description="Unix time before which automatic compression is suppressed."
    )
    fallback_streak: int = 0
    ineffective_count: int = 0
    ineffective_tokens: int | None = Field(
        None, description="Window tokens at the last ineffective attempt (anti-thrash re-arm)."
    )
    now: float = Field(description="The host's clock (Unix time) when the request was built.")


@runtime_checkable
class HistoryReader(Protocol):
    """Read-only view of the session's full stored history, passed to ``select_context``.

    It sees archived and compacted rows and earlier sessions of the lineage.  Engines use it
    to search; they can never write through it.
    """

    def search(
        self, query: str, *, limit: int = 20, lineage: bool = True
    ) -> list[dict[str, Any]]:
        """Full-text search; each hit is a dict with at least ``message_id``, ``session_id``,
        ``role``, ``content``, ``score`` (lower is better, BM25) and ``active``."""
        ...

    def messages(self, *, include_inactive: bool = True) -> list[Message]:
        """All messages of this session's lineage, oldest first."""
        ...


class _SessionRequest(_Model):
    session_id: str
    messages: Messages = Field(
        description="The current window, system prompt first when there is one. A private copy."
    )


class ShouldCompressRequest(_SessionRequest):
    """Input of ``should_compress``: the window after a turn, and the facts to decide on."""

    prompt_tokens: int | None = Field(
        None, description="prompt_tokens the provider reported for the last call, if any."
    )
    current_tokens: int = Field(description="Host-counted tokens of ``messages``.")
    context_length: int = Field(gt=0, description="The model's context window in tokens.")
    max_output_tokens: int = Field(0, ge=0, description="Tokens reserved for the reply.")
    model: str = ""
    compression_count: int = 0
    force: bool = False
    guards: GuardState
    compression: CompressionSettings = Field(default_factory=CompressionSettings)


class CompressDecision(_Model):
    """Result of ``should_compress``."""

    compress: bool
    reason: str | None = Field(
        None, description="Why not (e.g. 'below_threshold', 'cooldown:42', 'ineffective')."
    )
    threshold_tokens: int | None = None
    threshold_rule: dict[str, float | int | None] | None = Field(
        None,
        description="Optional: how threshold_tokens was derived, e.g. configured_percent, "
        "floor_percent, cap_tokens, output_reservation, tiny_window_percent (status shows it).",
    )


SummaryOutcome = Literal[
    "summarised",  # the configured summariser wrote the summary
    "fallback",  # the summariser failed; a deterministic fallback summary was used
    "dropped",  # the middle was dropped without an LLM call (feasibility skip)
    "noop",  # nothing to compress (too few messages); an ineffective attempt
    "failed_transient",  # 429/5xx/timeout/network: the host starts a cooldown
    "failed_permanent",  # 401/402/403/quota: no retry
    "aborted",  # abort_on_summary_failure: the original window is kept
]


class CompressRequest(_SessionRequest):
    """Input of ``compress``."""

    current_tokens: int
    context_length: int = Field(gt=0)
    max_output_tokens: int = Field(
        0, ge=0, description="Tokens reserved for the reply: the request budget is "
        "context_length - max_output_tokens."
    )
    model: str = ""
    focus_topic: str | None = Field(None, description="`/compress <focus>`: favour this topic.")
    force: bool = Field(False, description="Manual /compress: ignore cooldown and skips.")
    memory_context: str | None = Field(
        None, description="Text memory providers asked to preserve (R-11.4)."
    )
    compression_count: int = Field(0, description="Compressions already in this lineage.")
    keep_last_turns: int | None = Field(
        None, description="`/compress here N`: keep exactly the last N user turns."
    )
    today: _dt.date | None = Field(None, description="For temporal anchoring (R-7.3).")
    guards: GuardState
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)


class CompressResult(_Model):
    """Result of ``compress``: the proposed new window plus what happened."""

    messages: Messages
    outcome: SummaryOutcome = "summarised"
    llm_calls: int = 0
    cooldown_seconds: float | None = Field(
        None, description="Ask the host to suppress automatic compression this long (R-5.1)."
    )
    notes: list[str] = Field(default_factory=list, description="Human-readable, secret-free.")
    summary_requests: int = Field(
        0, ge=0,
        description="Summary requests an LLM summariser makes (or would make, when the "
        "offline summariser wrote the summary) for this result: the cost model counts them.",
    )
    summary_input_tokens: int = Field(
        0, ge=0, description="Tokens those requests send (prompt, or prefix + instruction)."
    )
    summary_cached_tokens: int = Field(
        0, ge=0,
        description="Of summary_input_tokens, the prefix a prompt-caching provider bills as "
        "a cache read (summarizer.continuation).",
    )
    summary_output_tokens: int = Field(0, ge=0, description="Tokens of the summary written.")


class SelectRequest(_SessionRequest):
    """Input of ``select_context``, called before every send."""

    incoming_message: Message | None = Field(
        None, description="The newest user message of this turn (also last in ``messages``)."
    )
    budget_tokens: int = Field(description="Tokens this turn may use for context.")
    history: Any = Field(
        None, description="A HistoryReader over the stored lineage, or None without a store."
    )
    state: dict[str, Any] = Field(
        default_factory=dict,
        description="This engine's own persisted state from its last SelectResult.state.",
    )


class SelectResult(_Model):
    """Result of ``select_context``: the messages this turn sends (replaces, never shrinks
    what the store holds).  Anything the engine adds is turn-scoped and never persisted."""

    messages: Messages
    decision: dict[str, Any] = Field(
        default_factory=dict,
        description="What was chosen and why (shown by /status, the trace and replay --json).",
    )
    state: dict[str, Any] | None = Field(
        None, description="State to hand back next turn (JSON-serialisable); None = keep."
    )


class PruneRequest(_SessionRequest):
    """Input of ``prune_tool_results_only``: deterministic, no LLM."""

    current_tokens: int
    context_length: int = Field(gt=0)
    min_output_chars: int = Field(8000, description="Only outputs this large are candidates.")
    min_reclaim_tokens: int = Field(4096, description="Do nothing unless this much is freed.")
    compression: CompressionSettings = Field(default_factory=CompressionSettings)


class PruneResult(_Model):
    """Result of ``prune_tool_results_only``."""

    messages: Messages
    pruned: int = Field(ge=0, description="How many tool outputs were replaced.")
    tokens_saved: int = 0


class SessionEvent(_Model):
    """Argument of the memory-provider callbacks."""

    session_id: str
    previous_session_id: str | None = None
    reason: str | None = Field(
        None, description="'compression', 'new', 'resume', 'idle', 'daily', 'branch' ..."
    )
    user_id: str | None = None
    messages: Messages = Field(default_factory=list)
    cwd: str | None = None


class PreCompressRequest(_SessionRequest):
    """Argument of ``on_pre_compress``: the window about to be compressed."""

    focus_topic: str | None = None


class ReceiptPart(_Model):
    """How many messages of one kind a compaction touched, and their tokens."""

    messages: int = 0
    tokens: int = 0


class CompactionReceipt(_Model):
    """What one compression attempt did, recorded by the host after the attempt (issue 29)
    and handed to ``on_post_compress`` after a commit.

    The message classes are counted by the host from the windows before and after, whatever
    the engine: ``kept`` (in both windows as it was), ``pruned`` (a tool result still there,
    shortened), ``summarised`` (gone, with a summary standing in), ``dropped`` (gone, no
    summary), ``summary`` (the summary messages the compaction added).  Token figures are
    host-counted; ``summariser`` is what the summary's requests cost as an LLM bills them."""

    id: int | None = Field(None, description="The store's receipt id, once stored.")
    conversation_id: str
    session_id: str = Field(description="The session that was compressed.")
    result_session_id: str = Field(
        description="The session holding the compressed window (the new id after a "
        "rotation; the same id in place or when nothing was committed)."
    )
    at: float = Field(description="Unix time the attempt finished.")
    trigger: Literal["auto", "manual", "forced"] = Field(
        description="auto: end_turn's decision; manual: compress(force=False); forced: "
        "compress(force=True) (/compress)."
    )
    decided_by: str | None = Field(
        None, description="'engine:<name>' or 'host' for an automatic compression."
    )
    threshold_tokens: int | None = None
    engine: str | None = None
    status: str = Field(description="committed, not_committed or rejected.")
    outcome: str
    tokens_before: int
    tokens_after: int
    messages_before: int = 0
    messages_after: int = 0
    kept: ReceiptPart = Field(default_factory=ReceiptPart)
    pruned: ReceiptPart = Field(default_factory=ReceiptPart)
    summarised: ReceiptPart = Field(default_factory=ReceiptPart)
    dropped: ReceiptPart = Field(default_factory=ReceiptPart)
    summary: ReceiptPart = Field(default_factory=ReceiptPart)
    llm_calls: int = 0
    summariser: dict[str, int] = Field(
        default_factory=dict,
        description="requests, input_tokens, cached_tokens, output_tokens (SummaryCost).",
    )
    duration: float = 0.0
    notes: list[str] = Field(default_factory=list)
    message: str | None = Field(None, description="The line the user was shown, if any.")
    before_ids: str = Field("", description="The window's row ids before (encoded ranges).")
    after_ids: str = Field("", description="The window's row ids after (encoded ranges).")
