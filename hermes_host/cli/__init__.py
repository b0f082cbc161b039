"""The ``hermes-host`` command line: one module per noun, registered here."""

from __future__ import annotations

import click

from hermes_host import __version__


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
    """


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
    ("eval", "eval_cmd"),
    ("import_cmd", "import_transcript"),
    ("chat", "chat"),
]

_register()
