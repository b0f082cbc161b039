"""``config.yaml``: pydantic models, the one loader, and errors that name file, key and value.

Lookup order (R-14.5): ``--config PATH``, else ``$HERMES_HOST_CONFIG``, else ``./config.yaml``,
else ``$HERMES_HOST_HOME/config.yaml``; with none of them the defaults apply.
``HERMES_HOST_HOME`` defaults to ``~/.hermes-host`` and also holds ``state.db``.

Which engine answers which lifecycle hook (R-14.8)::

    context:
      engine: compressor              # answers every lifecycle hook by default
      hooks:                          # optional, per hook, ordered
        select_context: [topic_router, retrieval]

For a hook listed under ``context.hooks`` the list is used as given; otherwise the chain is
``[context.engine]``.  ``select_context`` runs the chain in order, each engine receiving the
previous one's messages; the other lifecycle hooks ask the engines in order and take the first
non-``None`` answer.
"""

from __future__ import annotations

import difflib
import os
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hermes_host.hookspecs import DEFAULT_TIMEOUTS, LIFECYCLE_HOOKS, MEMORY_HOOKS
from hermes_host.models import CompressionSettings, SummarizerSettings, check_api_key_env
from hermes_host.store import store_file

__all__ = [
    "MAX_YAML_NODES",
    "UNKNOWN_OPTION",
    "ConfigError",
    "FenceSection",
    "HermesConfig",
    "find_config_path",
    "hermes_home",
    "load_config",
    "parse_engine_options",
    "read_config_data",
]

M = TypeVar("M", bound=BaseModel)

MAX_YAML_NODES = 10_000
"""A ``config.yaml`` may hold at most this many YAML nodes with every alias expanded: a
"billion laughs" document of 1 KB would otherwise expand to a billion (issue 12)."""

UNKNOWN_OPTION = "unknown option; allowed: {allowed}"
"""Default wording of :func:`parse_engine_options` for a key the model does not declare."""


class ConfigError(Exception):
    """A config file could not be read or validated; ``str()`` is the user-facing message."""

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


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
                    + _did_you_mean(hook, LIFECYCLE_HOOKS)
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
                                 + _did_you_mean(hook, allowed))
            if not seconds > 0:
                raise ValueError(f"timeout for {hook} must be > 0 seconds, got {seconds!r}")
        return value

    def timeout(self, hook: str) -> float:
        return float(self.timeouts.get(hook, DEFAULT_TIMEOUTS[hook]))


Isolation = Literal["thread", "process"]


class FenceSection(_Section):
    """How the fence runs an engine's hooks (``fence:`` globally, or per engine under
    ``engines.<name>.fence``; a per-engine key overrides the global one).  See
    docs/isolation.md for what each mode does and does not protect against."""

    isolation: Isolation = Field(
        "thread",
        description="thread: a pooled daemon thread (fast; trusts the engine not to hold the "
        "GIL or exit the process). process: a worker process killed at the deadline.",
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


def hermes_home() -> Path:
    return Path(os.environ.get("HERMES_HOST_HOME") or Path.home() / ".hermes-host").expanduser()


def find_config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use under R-14.5's order, or ``None`` (defaults apply)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("HERMES_HOST_CONFIG")
    if env:
        return Path(env)
    for candidate in (Path("config.yaml"), hermes_home() / "config.yaml"):
        if candidate.is_file():
            return candidate
    return None


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects a duplicate key in a mapping (naming both lines) and a
    document that expands to more than :data:`MAX_YAML_NODES` nodes through its aliases."""

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *base`` keys may be overridden, that is their purpose
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base constructor words that error
                break
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {_short(key)} (first on line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _check_expansion(root: yaml.Node) -> None:
    """Count ``root``'s nodes as if every alias were expanded; an alias is one node object
    composed once and referenced many times, so the count is memoised per node."""
    sizes: dict[int, int] = {}
    pending: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in pending:
            raise yaml.YAMLError("a recursive alias (an anchor used inside itself)")
        pending.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        pending.discard(key)
        sizes[key] = total = min(total, MAX_YAML_NODES + 1)
        if total > MAX_YAML_NODES:
            raise yaml.YAMLError(
                f"the document expands to more than {MAX_YAML_NODES:,} nodes through its "
                f"aliases (refused; limit {MAX_YAML_NODES})"
            )
        return total

    size(root)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2


def _short(value: Any) -> str:
    """A bounded ``repr``: never builds the whole text of a huge value before cutting it."""
    return _REPR.repr(value)


def _cut(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _did_you_mean(word: str, choices: Any) -> str:
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_for(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str] | None:
    """Names the keys allowed at ``loc`` (for 'extra_forbidden' errors)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            current = field.annotation if field else None
        else:
            return None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        value = err.get("input")
        shown = _short(value) if not isinstance(value, dict) else "a mapping"
        said = str(err.get("ctx", {}).get("error", ""))
        if err["type"] == "value_error" and said.startswith(f"{key}."):
            msg = f"  {_cut(said)}"  # a validator that names the nested key itself
        elif err["type"] == "extra_forbidden":
            allowed = _allowed_for(HermesConfig, loc)
            msg = f"  {key}: unknown key"
            if allowed:
                msg += f"; allowed keys: {', '.join(allowed)}"
                msg += _did_you_mean(str(loc[-1]), allowed)
        elif err["type"] == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            msg = f"  {key}: {shown} is not allowed; allowed values: {expected}"
        else:
            msg = f"  {key}: {_cut(err['msg'])} (got {shown})"
        lines.append(msg)
    return "\n".join(lines)


def parse_engine_options(
    model: type[M],
    options: Mapping[str, Any] | None,
    engine: str,
    error: type[Exception] = ValueError,
    *,
    unknown: str = UNKNOWN_OPTION,
) -> M:
    """Validate an engine's ``engines.<engine>`` block of ``config.yaml`` against ``model``.

    For engine authors: declare your options as a pydantic model with
    ``model_config = ConfigDict(extra="forbid")`` and call this from your constructor with the
    ``options=`` the host passes in.  The host shows ``str()`` of the raised error to the user
    as a configuration error, so every engine reports bad options the same way (R-0.3):

    * ``None`` (no block in ``config.yaml``) gives ``model()``, i.e. the defaults;
    * a block that is not a mapping raises ``error("engines.<engine> must be a mapping, got
      <type>")``;
    * otherwise every problem is listed, joined with ``"; "``: a key the model does not declare
      as ``engines.<engine>.<key>: unknown option; allowed: a, b, c`` (the wording is
      ``unknown``, formatted with ``allowed``; `` (did you mean 'size'?)`` follows when a
      declared key is close), any other as ``engines.<engine>.<key>: <pydantic message>``.

    ``error`` is called with the message alone; pass your own exception class (a ``ValueError``
    subclass is a good choice) so that callers can catch your engine's errors specifically.
    """
    if options is None:
        return model()
    if not isinstance(options, Mapping):
        raise error(f"engines.{engine} must be a mapping, got {type(options).__name__}")
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        allowed = ", ".join(model.model_fields)
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(options)"
            if err["type"] == "extra_forbidden":
                problems.append(f"engines.{engine}.{key}: " + unknown.format(allowed=allowed)
                                + _did_you_mean(str(err["loc"][-1]), model.model_fields))
            else:
                problems.append(f"engines.{engine}.{key}: {err['msg']}")
        raise error("; ".join(problems)) from None


def parse_config(data: Any, source: str = "<config>") -> HermesConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    try:
        return HermesConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``line 4, column 3: duplicate key 'x' (first on line 2)`` — one line, bounded."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: "
        context = f" ({exc.context})" if exc.context else ""
        return _cut(f"{where}{exc.problem}{context}", 400)
    return _cut(str(exc), 400)


def read_config_data(path: str | os.PathLike[str] | None = None) -> Any:
    """The parsed YAML of the config :func:`find_config_path` finds (``None``: no file),
    not yet validated.  Raises :class:`ConfigError` for a file that cannot be read or parsed
    (bounded: duplicate keys and alias bombs are parse errors)."""
    found = find_config_path(path)
    if found is None:
        return None
    try:
        text = found.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{found}: config file not found", path=found) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{found}: cannot read config file: {exc}", path=found) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{found}: not valid YAML: {_yaml_problem(exc)}", path=found) from None


def load_config(path: str | os.PathLike[str] | None = None) -> HermesConfig:
    """Load and validate the config found by :func:`find_config_path` (defaults if none).

    Raises :class:`ConfigError` with a message naming the file, the key path, the bad value
    and what is allowed.
    """
    found = find_config_path(path)
    if found is None:
        return HermesConfig()
    data = read_config_data(found)
    try:
        return parse_config(data, str(found))
    except ConfigError as exc:
        exc.path = found
        raise
