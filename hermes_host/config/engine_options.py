"""``parse_engine_options``: one way for every engine to validate its ``engines.<name>``
block of ``config.yaml`` (R-0.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hermes_host.config.errors import did_you_mean

__all__ = ["UNKNOWN_OPTION", "parse_engine_options"]

M = TypeVar("M", bound=BaseModel)

UNKNOWN_OPTION = "unknown option; allowed: {allowed}"
"""Default wording of :func:`parse_engine_options` for a key the model does not declare."""


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
                                + did_you_mean(str(err["loc"][-1]), model.model_fields))
            else:
                problems.append(f"engines.{engine}.{key}: {err['msg']}")
        raise error("; ".join(problems)) from None
