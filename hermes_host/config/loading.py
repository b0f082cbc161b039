"""Reading and validating ``config.yaml``: the one loader (R-14.5)."""

from __future__ import annotations

import os
from typing import Any

import yaml
from pydantic import ValidationError

from hermes_host.config.errors import ConfigError, _allowed_for, _cut, _short, did_you_mean
from hermes_host.config.locations import find_config_path
from hermes_host.config.sections import HermesConfig
from hermes_host.config.strict_yaml import _StrictLoader, _yaml_problem

__all__ = ["load_config", "parse_config", "read_config_data"]


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
                msg += did_you_mean(str(loc[-1]), allowed)
        elif err["type"] == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            msg = f"  {key}: {shown} is not allowed; allowed values: {expected}"
        else:
            msg = f"  {key}: {_cut(err['msg'])} (got {shown})"
        lines.append(msg)
    return "\n".join(lines)


def parse_config(data: Any, source: str = "<config>") -> HermesConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    try:
        return HermesConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None


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
    except RecursionError:  # e.g. a long chain of aliases, each nesting the one before
        raise ConfigError(
            f"{found}: not valid YAML: nested too deeply (through anchors and aliases) to read",
            path=found,
        ) from None


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
