"""The Jinja2 templates of ``browse`` (package data, autoescaped) and the one function that
renders a page; ``sessions export --format html`` uses it too."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

__all__ = ["environment", "render"]


def _num(value: float | int | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("hermes_host.browse", "templates"),
        autoescape=select_autoescape(["html"]),  # every .html template; the CSS is ours
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return env


def render(template: str, *, static: bool = False, **context: Any) -> str:
    """``template`` rendered with ``context``.  ``static``: a file that stands alone (an
    export): no links to the server's other pages."""
    return environment().get_template(template).render(static=static, **context)
