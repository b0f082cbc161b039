"""The pydantic models of ``config.yaml``: one section a model, unknown keys are errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hermes_host.config.errors import _allowed_for, _short, did_you_mean
from hermes_host.config.locations import hermes_home
from hermes_host.hookspecs import DEFAULT_TIMEOUTS, LIFECYCLE_HOOKS, MEMORY_HOOKS
from hermes_host.models import CompressionSettings, SummarizerSettings, check_api_key_env
from hermes_host.store import store_file

__all__ = [
    "BreakerSection",
    "ContextSection",
    "FenceSection",
    "HermesConfig",
    "HooksSection",
    "MemorySection",
    "ModelSection",
    "SessionResetSection",
    "SessionsSection",
    "StoreSection",
]


class _Section(BaseModel):
    # strict: a quoted "0.5" or "yes" is a string, never coerced to a number or a bool
    model_config = ConfigDict(extra="forbid", strict=True)


class ContextSection(_Section):
    engine: str = Field("compressor", description="Engine answering every lifecycle hook.")
    hooks: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per lifecycle hook, the ordered engines that answer it.",
    )

    @field_validator("hooks")
    @classmethod
    def _known_hooks(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for hook in value:
            if hook not in LIFECYCLE_HOOKS:
                raise ValueError(
                    f"unknown hook {_short(hook)}; allowed: {', '.join(LIFECYCLE_HOOKS)}"
                    + did_you_mean(hook, LIFECYCLE_HOOKS)
                )
        return value

    def chain(self, hook: str) -> list[str]:
        """The ordered engine names that answer ``hook``."""
        return list(self.hooks.get(hook) or [self.engine])

    def engine_names(self) -> list[str]:
        """Every engine this config selects, in first-mention order."""
        names: list[str] = []
        for hook in LIFECYCLE_HOOKS:
            for name in self.chain(hook):
                if name not in names:
                    names.append(name)
        return names


class BreakerSection(_Section):
    failures: int = Field(3, ge=1, description="Consecutive failures that open the breaker.")
    cooldown_seconds: float = Field(60.0, gt=0, description="How long an open breaker skips.")


class HooksSection(_Section):
    timeouts: dict[str, float] = Field(default_factory=dict)
    breaker: BreakerSection = Field(default_factory=BreakerSection)
    max_leaked_workers: int = Field(
        8, ge=1, description="Hung workers of one plugin tolerated before its calls are refused."
    )

    @field_validator("timeouts")
    @classmethod
    def _known_timeouts(cls, value: dict[str, float]) -> dict[str, float]:
        allowed = (*LIFECYCLE_HOOKS, *MEMORY_HOOKS)
        for hook, seconds in value.items():
            if hook not in allowed:
                raise ValueError(f"unknown hook {_short(hook)}; allowed: {', '.join(allowed)}"
                                 + did_you_mean(hook, allowed))
            if not seconds > 0:
                raise ValueError(f"timeout for {hook} must be > 0 seconds, got {seconds!r}")
        return value

    def timeout(self, hook: str) -> float:
        return float(self.timeouts.get(hook, DEFAULT_TIMEOUTS[hook]))


Isolation = Literal["thread", "process"]


class FenceSection(_Section):
    """How the fence runs an engine's hooks (``fence:`` globally, or per engine under
    ``engines.<name>.fence``; a per-engine key overrides the global one).  See
    docs/isolation.md for what each mode does and does not protect against.

    ``isolation: thread`` cannot stop an engine that holds the GIL (a catastrophic regular
    expression, a loop in C): the whole host stalls until the engine lets go, whatever the
    hook's timeout — a review measured a turn kept 28 s past a 0.2 s timeout (issue 31).
    ``isolation: process`` kills such an engine at its deadline: choose it for any engine
    you do not trust."""

    isolation: Isolation = Field(
        "thread",
        description="thread: a pooled daemon thread (fast; trusts the engine not to hold the "
        "GIL or exit the process: a GIL-holding engine, e.g. a catastrophic regex, stalls "
        "the whole host past any timeout - 28 s past a 0.2 s one was measured - so use "
        "process for an engine you do not trust). process: a worker process killed at the "
        "deadline.",
    )
    max_result_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="Largest result (bytes as JSON) the fence accepts; larger is invalid.",
    )
    workers: int = Field(
        1, ge=1, le=8, description="Process mode: worker processes kept started per engine."
    )
    memory_limit_mb: int | None = Field(
        2048,
        ge=64,
        description="Process mode: address-space limit of a worker (None: no limit).",
    )


def _fence_override(engine: str, block: Any) -> dict[str, Any]:
    """The ``engines.<engine>.fence`` block as a dict of the keys it sets (validated)."""
    if not isinstance(block, dict):
        raise ValueError(f"engines.{engine}.fence must be a mapping, got {type(block).__name__}")
    try:
        FenceSection.model_validate(block)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = f"engines.{engine}.fence." + ".".join(str(part) for part in err["loc"])
            if err["type"] == "extra_forbidden":
                allowed = _allowed_for(FenceSection, tuple(err["loc"]))
                problems.append(f"{key}: unknown key; allowed keys: {allowed}")
            elif err["type"] == "literal_error":
                expected = err.get("ctx", {}).get("expected", "")
                shown = f"{err['input']!r} is not allowed; allowed values: {expected}"
                problems.append(f"{key}: {shown}")
            else:
                problems.append(f"{key}: {err['msg']} (got {err['input']!r})")
        raise ValueError("; ".join(problems)) from None
    return dict(block)


class MemorySection(_Section):
    providers: list[str] = Field(
        default_factory=lambda: ["markdown"], description="Memory providers to load, by name."
    )
    directory: str | None = Field(
        None, description="Where MEMORY.md and USER.md live (default: $HERMES_HOST_HOME)."
    )


class StoreSection(_Section):
    url: str | None = Field(
        None, description="Path or sqlite:/// URL of state.db (default $HERMES_HOST_HOME/state.db)."
    )
    lease_ttl_seconds: float = Field(300.0, gt=0)
    record_requests: bool = Field(
        True,
        description="Keep a manifest of every model request (the ids of the messages sent, "
        "its size and usage) and a receipt of every compaction: what `sessions requests` and "
        "`browse` show. Ids, not copies: a few bytes per call.",
    )


class ModelSection(_Section):
    name: str = "claude-sonnet-4-5"
    context_length: int = Field(200_000, gt=0)
    max_output_tokens: int = Field(8192, ge=0)
    # the chat model's provider and endpoint (hermes-host chat); see docs/openai.md
    provider: str = Field("anthropic", pattern=r"^[a-z][a-z0-9_.-]*$",
                          description="Model provider for hermes-host chat: anthropic, openai…")
    base_url: str | None = Field(None, description="Endpoint (default: the provider's).")
    api_key_env: str | None = Field(
        None, description="Name of the variable holding the key (default: the provider's own)."
    )
    timeout_seconds: float = Field(600.0, gt=0)
    max_retries: int = Field(2, ge=0)
    headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers.")

    @model_validator(mode="before")
    @classmethod
    def _key_env_is_a_name(cls, data: Any) -> Any:
        return check_api_key_env(data)

    @model_validator(mode="after")
    def _reply_fits(self) -> ModelSection:
        # only a value the user wrote: the default (8,192) on a small test window is
        # capped at half of it by the request bound instead (issue 28)
        if "max_output_tokens" in self.model_fields_set and (
            self.max_output_tokens >= self.context_length
        ):
            raise ValueError(
                f"model.max_output_tokens: {self.max_output_tokens:,} must be smaller than "
                f"model.context_length ({self.context_length:,}): the request and the reply share "
                "the window (a reservation over half of it is capped at half)"
            )
        return self


class SessionResetSection(_Section):
    mode: Literal["none", "idle", "daily", "both"] = "none"
    idle_minutes: int = Field(1440, gt=0)
    daily_hour: int = Field(4, ge=0, le=23)


class SessionsSection(_Section):
    auto_prune: bool = False


class HermesConfig(_Section):
    """The whole ``config.yaml``.  Unknown keys anywhere are errors."""

    model: ModelSection = Field(default_factory=ModelSection)
    context: ContextSection = Field(default_factory=ContextSection)
    engines: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Each engine's own options block, passed as options=."
    )
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)
    hooks: HooksSection = Field(default_factory=HooksSection)
    fence: FenceSection = Field(default_factory=FenceSection)
    memory: MemorySection = Field(default_factory=MemorySection)
    store: StoreSection = Field(default_factory=StoreSection)
    session_reset: SessionResetSection = Field(default_factory=SessionResetSection)
    group_sessions_per_user: bool = True
    sessions: SessionsSection = Field(default_factory=SessionsSection)

    def store_url(self) -> str:
        """``store.url`` as given (any installed backend's URL, or a path), else the default
        SQLite file ``$HERMES_HOST_HOME/state.db``."""
        return self.store.url or str(hermes_home() / "state.db")

    @field_validator("engines")
    @classmethod
    def _engine_fences(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for engine, options in value.items():
            if isinstance(options, dict) and "fence" in options:
                _fence_override(engine, options["fence"])
        return value

    def fence_for(self, engine: str) -> FenceSection:
        """The fence settings of ``engine``: ``fence`` with ``engines.<engine>.fence`` over
        it.  (The ``fence`` key belongs to the host: the engine's ``options=`` lack it.)"""
        block = self.engines.get(engine)
        if not isinstance(block, dict) or not block.get("fence"):
            return self.fence
        return self.fence.model_copy(update=_fence_override(engine, block["fence"]))

    def store_path(self) -> Path:
        """The SQLite file of ``store.url`` (default ``$HERMES_HOST_HOME/state.db``).  Raises
        :class:`~hermes_host.store.StoreError` for a URL scheme this host cannot open (another
        store distribution opens those), never treating the URL as a file name."""
        url = self.store.url
        return store_file(url) if url else hermes_home() / "state.db"
