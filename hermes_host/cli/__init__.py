"""The ``hermes-host`` command line: one module per noun, registered here.

A noun's module is imported only when that command runs (or its own ``--help`` is asked
for): ``hermes-host --help`` lists the commands from :data:`_COMMANDS`, whose one-line help is
kept equal to each command's own by ``tests/test_cold_start.py``.  So printing help, or running
one command, does not import what the other commands need (the SDKs, the store, rich tables).
"""

from __future__ import annotations

import logging
import sys
from importlib import import_module
from typing import TextIO

import click

from hermes_host.tracing import trace_enabled


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use; the group's help lists them
    from their registered one-line help without importing them."""

    def __init__(self, *args: object, lazy: dict[str, tuple[str, str, str]] | None = None,
                 **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy: dict[str, tuple[str, str, str]] = dict(lazy or {})
        """``{name: (module, attribute, one-line help)}``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module_name, attr, _ = self.lazy[cmd_name]
            command = getattr(import_module(f"hermes_host.cli.{module_name}"), attr)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx)
                 if n not in self.commands or not self.commands[n].hidden]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)  # as click.Group does
        # a not-yet-imported command is shortened by click's own rule, from its registered help
        rows = [(n, (self.commands.get(n) or click.Command(n, help=self.lazy[n][2]))
                 .get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


_COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module under hermes_host.cli, click command attribute, the command's short help)
    "plugin": ("plugin", "plugin",
               "Write your own engine: scaffold a distribution that is green out of the box."),
    "install": ("install", "install",
                "Install engine distributions into the environment that runs hermes-host."),
    "uninstall": ("install", "uninstall",
                  "Uninstall engine distributions from the environment that runs hermes-host."),
    "engines": ("engines", "engines",
                "Installed context engines, memory providers, model providers and stores."),
    "config": ("config_cmd", "config", "Validate or show config.yaml."),
    "doctor": ("doctor", "doctor",
               "Check config, plugins, store (path, schema, contents; read-only) and "
               "tokenizer; exit 0 if healthy, else 1."),
    "replay": ("replay", "replay",
               "Replay a recorded OpenAI-format JSONL transcript through the host, as if live."),
    "demo": ("demo", "demo",
             "Run a scripted tour of hermes-host's own source whose tool calls really run, "
             "with the offline summariser and a small window; then show the lineage and one "
             "summary."),
    "browse": ("browse", "browse",
               "Browse the store in a local read-only web app: what the model saw, each "
               "request, each compaction."),
    "sessions": ("sessions", "sessions",
                 "Stored sessions: list, show, search, lineage, requests, costs, export, import."),
    "store": ("store_cmd", "store",
              "Whole-store operations: migrate a history between stores."),
    "eval": ("eval", "eval_cmd",
             "Replay transcripts with each engine set and compare tokens, calls and recall."),
    "import": ("import_cmd", "import_transcript",
               "Convert FILE, another agent's session log, into a transcript for hermes-host "
               "replay."),
    "chat": ("chat", "chat",
             "Chat with the configured model; the host keeps everything and compresses."),
}


@click.group(cls=LazyGroup, lazy=_COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hermes-host", prog_name="hermes-host")
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
