"""The ``hermes-host`` command line: one module per noun, registered here."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import click

from hermes_host import __version__
from hermes_host.plugins import trace_enabled


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hermes-host")
def cli() -> None:
    """hermes-host keeps a long agent session's whole history in a store and sends the model
    a bounded window, compressed by pluggable engines.

    \b
    Start here:
      hermes-host demo                 run a real session that compresses several times
      hermes-host replay FILE.jsonl    feed a recorded transcript through the host
      hermes-host sessions list        what the store holds (search, lineage, export)
      hermes-host engines list         which engines are installed, and their status
      hermes-host config show          the effective configuration, with defaults
      hermes-host doctor               check config, plugins, store and tokenizer

    Configuration: --config PATH, else $HERMES_HOST_CONFIG, else ./config.yaml, else
    $HERMES_HOST_HOME/config.yaml (HERMES_HOST_HOME defaults to ~/.hermes-host).

    Debugging engines: HERMES_HOST_TRACE_PLUGINS=1 prints one line per hook call and the
    warnings of the fence (a failing plugin's redacted traceback) to stderr.
    """
    if trace_enabled():
        _log_to_stderr()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted, while the trace is on
    (a process that runs several commands, e.g. tests, may switch it off again)."""

    def emit(self, record: logging.LogRecord) -> None:
        if trace_enabled():
            super().emit(record)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def _log_to_stderr() -> None:
    """Show hermes_host's WARNING records (the fence's tracebacks) on stderr, once."""
    logger = logging.getLogger("hermes_host")
    if any(isinstance(h, _StderrHandler) for h in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("[hermes-host %(levelname)s] %(message)s"))
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)


def _register() -> None:
    # Each noun module defines one click command or group; the list is explicit on purpose.
    from importlib import import_module

    for module_name, attr in _COMMANDS:
        module = import_module(f"hermes_host.cli.{module_name}")
        cli.add_command(getattr(module, attr))


_COMMANDS: list[tuple[str, str]] = [
    # (module, click command attribute) — add one line per noun module.
    ("plugin", "plugin"),
    ("install", "install"),
    ("install", "uninstall"),
    ("engines", "engines"),
    ("config_cmd", "config"),
    ("doctor", "doctor"),
    ("replay", "replay"),
    ("demo", "demo"),
    ("sessions", "sessions"),
    ("store_cmd", "store"),
    ("eval", "eval_cmd"),
    ("import_cmd", "import_transcript"),
    ("chat", "chat"),
]

_register()
