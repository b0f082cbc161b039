"""``hermes-host config validate|show``, and the small helpers every command here shares.

``validate`` is the whole start-up check without starting anything: the file parses, every
key and type is right (R-0.3), and every selected engine is installed, imports and
instantiates with its options.  A missing or broken *memory provider* is a warning, because
the host runs without it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml
from rich.console import Console

from hermes_host.config import ConfigError, HermesConfig, find_config_path, load_config
from hermes_host.config_check import check_config

__all__ = [
    "config",
    "config_option",
    "console",
    "fail",
    "load_config_or_fail",
    "redact_urls",
    "source_label",
    "warn",
]

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="config.yaml to use (default: $HERMES_HOST_CONFIG, ./config.yaml, "
    "$HERMES_HOST_HOME/config.yaml).",
)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` in red on stderr and exit with ``code``: the CLI never shows a
    traceback for a user error."""
    click.echo(click.style(message, fg="red"), err=True)
    sys.exit(code)


def console() -> Console:
    """The rich console every table goes to: :func:`hermes_host.cli.output.console`
    (imported on first use, so ``--help`` imports no progress or table code)."""
    from .output import console as shared

    return shared()


def warn(message: str) -> None:
    click.echo(click.style(f"warning: {message}", fg="yellow"), err=True)


def source_label(path: Path | None) -> str:
    """How messages name where the configuration came from."""
    return str(path) if path is not None else "defaults (no config file found)"


def load_config_or_fail(explicit: Path | None) -> tuple[HermesConfig, Path | None]:
    """The validated config and the file it came from (``None``: defaults), or exit 2."""
    try:
        return load_config(explicit), find_config_path(explicit)
    except ConfigError as exc:
        fail(str(exc))


_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/:@\s]+:)[^@/\s]+(?P<tail>@)", re.I)


def redact_urls(value: Any) -> Any:
    """``scheme://user:password@host`` → ``scheme://user:***@host`` anywhere in ``value``."""
    if isinstance(value, str):
        from hermes_host.store.registry import redact_url

        return redact_url(_URL_PASSWORD.sub(r"\g<head>***\g<tail>", value))
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_urls(v) for v in value]
    return value


def describe_selection(cfg: HermesConfig) -> str:
    """``compressor; select_context: topic_router → retrieval`` — which engine answers what."""
    parts = [f"context.engine: {cfg.context.engine}"]
    for hook, chain in cfg.context.hooks.items():
        parts.append(f"{hook}: {' → '.join(chain)}")
    return "; ".join(parts)


@click.group("config")
def config() -> None:
    """Validate or show config.yaml."""


@config.command("validate")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def validate(config_path: Path | None, as_json: bool) -> None:
    """Check the config file and that every selected engine loads; exit 0 or 2 (R-0.3).

    Every problem is reported in one pass: keys and types (with did-you-mean), selected
    engines not installed, ``engines:`` blocks naming no installed engine, options an
    unselected engine rejects, and a compress chain that cannot compress.  A missing or
    failing memory provider is a warning (the host runs without it).
    """
    report = check_config(config_path)
    path, cfg, loaded = report.path, report.config, report.loaded
    source = source_label(path)
    errors, warnings = report.errors, report.warnings
    if as_json:
        click.echo(
            json.dumps(
                {
                    "source": str(path) if path else None,
                    "valid": not errors,
                    "errors": errors,
                    "warnings": warnings,
                    "engines": sorted(loaded.engines) if loaded else [],
                    "memory_providers": sorted(loaded.providers) if loaded else [],
                },
                indent=2,
            )
        )
        sys.exit(2 if errors else 0)
    for message in warnings:
        warn(message)
    if errors:
        fail("\n".join(errors))
    assert loaded is not None and cfg is not None  # no errors means the plugins loaded
    click.echo(f"✓ {source}: valid ({describe_selection(cfg)})")
    providers = ", ".join(sorted(loaded.providers)) or "none"
    click.echo(f"  engines loaded: {', '.join(sorted(loaded.engines))}; memory providers: "
               f"{providers}")


@config.command("show")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
def show(config_path: Path | None, as_json: bool) -> None:
    """Print the effective configuration, defaults filled in, and the file it came from."""
    cfg, path = load_config_or_fail(config_path)
    data = redact_urls(cfg.model_dump(mode="json"))
    if as_json:
        click.echo(json.dumps({"source": str(path) if path else None, "config": data}, indent=2))
        return
    click.echo(f"# effective configuration from: {source_label(path)}")
    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
