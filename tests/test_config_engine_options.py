"""``hermes_host.config.parse_engine_options``: one way for every engine to validate its
``engines.<name>`` block and word what is wrong (R-0.3)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from hermes_host import config
from hermes_host.config import UNKNOWN_OPTION, parse_engine_options


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    most: int = Field(10, ge=1)


class DemoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(3, ge=1)
    label: str = "demo"
    limits: Limits = Field(default_factory=Limits)


class DemoOptionsError(ValueError):
    """The engine's own error class: callers catch it specifically."""


def _error(options: Any, unknown: str = UNKNOWN_OPTION) -> DemoOptionsError:
    with pytest.raises(DemoOptionsError) as info:
        parse_engine_options(DemoOptions, options, "demo", DemoOptionsError, unknown=unknown)
    return info.value


def test_r0_3_helper_is_public() -> None:
    assert "parse_engine_options" in config.__all__
    assert "UNKNOWN_OPTION" in config.__all__


def test_r0_3_no_block_means_the_defaults() -> None:
    assert parse_engine_options(DemoOptions, None, "demo") == DemoOptions()


def test_r0_3_a_valid_block_is_validated_into_the_model() -> None:
    parsed = parse_engine_options(
        DemoOptions, {"size": 7, "limits": {"most": 2}}, "demo", DemoOptionsError
    )
    assert isinstance(parsed, DemoOptions)
    assert (parsed.size, parsed.label, parsed.limits.most) == (7, "demo", 2)
    # Any Mapping is accepted, not only dict.
    proxied = parse_engine_options(DemoOptions, MappingProxyType({"label": "x"}), "demo")
    assert proxied.label == "x"


def test_r0_3_a_block_that_is_not_a_mapping_names_the_engine_and_the_type() -> None:
    assert str(_error(["size"])) == "engines.demo must be a mapping, got list"
    assert str(_error("nope")) == "engines.demo must be a mapping, got str"


def test_r0_3_unknown_key_names_the_key_and_every_allowed_key() -> None:
    err = _error({"sise": 4})
    # issue 12: a close declared key is suggested
    assert str(err) == (
        "engines.demo.sise: unknown option; allowed: size, label, limits (did you mean 'size'?)"
    )
    no_match = "engines.demo.zzz: unknown option; allowed: size, label, limits"
    assert str(_error({"zzz": 4})) == no_match


def test_r0_3_every_problem_is_listed_with_its_dotted_key() -> None:
    message = str(_error({"size": 0, "limits": {"most": "many"}, "extra": 1}))
    # In field order, joined with "; " (the unknown-key wording itself contains one).
    assert message.count("engines.demo.") == 3, message
    size, rest = message.split("; engines.demo.limits.most: ")
    most, extra = rest.split("; engines.demo.extra: ")
    assert size.startswith("engines.demo.size: ") and "greater than or equal to 1" in size
    assert "valid integer" in most
    assert extra == "unknown option; allowed: size, label, limits"


def test_r0_3_the_error_is_the_engines_class_without_a_pydantic_chain() -> None:
    err = _error({"size": "big"})
    assert type(err) is DemoOptionsError
    assert err.__cause__ is None and err.__suppress_context__
    # The default error class is ValueError.
    with pytest.raises(ValueError, match=r"^engines\.demo\.size: "):
        parse_engine_options(DemoOptions, {"size": "big"}, "demo")


def test_r0_3_an_engine_may_keep_its_own_wording_for_unknown_keys() -> None:
    assert UNKNOWN_OPTION == "unknown option; allowed: {allowed}"
    err = _error({"sise": 4}, unknown="unknown key; allowed keys: {allowed}")
    assert str(err) == (
        "engines.demo.sise: unknown key; allowed keys: size, label, limits (did you mean 'size'?)"
    )
