"""``hermes-host doctor``: one screen that says whether this installation can run a session.

Checks the config file, installed and selected plugins, the store (its path and, read-only,
its schema version and contents), the summariser's and the chat model's provider (its key
set; each configured ``base_url`` answering: a TCP connect by default, an HTTP request with
``--probe``, nothing with ``--no-probe``), the tokenizer and the versions.  ``fail`` makes
the exit status 1; ``warn`` (a missing memory provider, a summariser or chat model that would
not work, the token estimator instead of tiktoken) does not, because sessions run anyway —
the last line names each warning.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import click
from rich.table import Table
from rich.text import Text

from hermes_host import __version__
from hermes_host.config import ConfigError, HermesConfig, find_config_path, load_config
from hermes_host.llm import effective_provider, summarizer_from_settings
from hermes_host.llm.base import SummaryError
from hermes_host.llm.providers import load_provider, provider_infos
from hermes_host.plugins import PluginError, discover, inspect_plugins, load_plugins
from hermes_host.store import StoreError, open_store
from hermes_host.store.registry import installed_stores, redact_url, url_scheme
from hermes_host.store.sqlite.schema import LATEST_VERSION, inspect_store
from hermes_host.tokens import encoding_info

from .config_cmd import config_option, describe_selection, source_label
from .config_cmd import console as make_console

__all__ = ["Check", "ProbeMode", "doctor", "run_checks"]

CheckStatus = Literal["ok", "warn", "fail"]
_STYLE = {"ok": "green", "warn": "yellow", "fail": "red"}


@dataclass
class Check:
    name: str
    status: CheckStatus
    detail: str


def _store_contents(store: Path) -> Check:
    """Schema version and size of an existing store, read-only (doctor never migrates)."""
    try:
        info = inspect_store(store)
    except StoreError as exc:
        return Check("store contents", "fail", str(exc))
    version = info["version"]
    if version < LATEST_VERSION:
        schema = (f"schema version {version}: migrated to {LATEST_VERSION} (after a backup "
                  "copy) the next time hermes-host opens it")
    else:
        schema = f"schema version {version} (current)"
    sessions, messages = info["sessions"], info["messages"]
    detail = (f"{schema}; {sessions:,} session{'s' * (sessions != 1)}, "
              f"{messages:,} message{'s' * (messages != 1)}")
    if info["index_pending"]:
        detail += (f"; {info['index_pending']:,} messages not in the substring index yet "
                   "(searchable meanwhile; the next turns catch up)")
    return Check("store contents", "ok", detail)


def _stores_installed() -> Check:
    """Every store backend this environment can open (the ``hermes_host.stores`` group)."""
    backends = installed_stores()
    return Check("stores installed", "ok", ", ".join(
        f"{b.scheme}:// ({b.distribution or 'built in'}"
        f"{' ' + b.version if b.version else ''})" for b in backends))


def _server_store(location: str, lease_ttl: float) -> Check:
    """Open a server store (PostgreSQL …) once: connection, schema and permissions."""
    shown = redact_url(location)
    try:
        store = open_store(location, lease_ttl=lease_ttl)
    except StoreError as exc:
        return Check("store", "fail", f"{shown}: {exc}")
    try:
        sessions = len(store.list_sessions(limit=1_000_000, include_archived=True))
    except StoreError as exc:
        return Check("store", "fail", f"{shown}: {exc}")
    finally:
        store.close()
    return Check("store", "ok", f"{shown} (reachable; {sessions} sessions)")


def _writable_dir(path: Path) -> tuple[bool, str]:
    """Whether ``path``'s directory exists and is writable, or could be created."""
    directory = path.parent
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            return False, f"no existing ancestor of {directory}"
        probe = probe.parent
    if not probe.is_dir():
        return False, f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return False, f"{probe} is not writable"
    if probe == directory:
        return True, f"{directory} is writable"
    return True, f"{directory} does not exist yet; {probe} is writable, so it can be created"


def _provider_checks(cfg: HermesConfig) -> list[Check]:
    """Memory providers, imported but not instantiated: used when an engine error stopped
    :func:`load_plugins` before it reached them."""
    try:
        infos = {i.name: i for i in inspect_plugins(cfg) if i.kind == "memory_provider"}
    except PluginError as exc:
        return [Check("memory providers", "warn", str(exc))]
    checks = []
    for name in cfg.memory.providers:
        info = infos.get(name)
        if info is None or info.status != "loaded":
            why = info.error or info.status if info else "not installed"
            checks.append(Check(f"memory provider {name}", "warn", f"{name!r} {why}"))
        else:
            checks.append(Check(f"memory provider {name}", "ok", "imports"))
    return checks


QUICK_PROBE_SECONDS = 1.0
"""Default probe: a TCP connect to each configured ``base_url`` within this time."""
PROBE_SECONDS = 5.0
"""``--probe``: an HTTP request to each configured ``base_url`` within this time."""

ProbeMode = Literal["quick", "http", "off"]


def _base_url(provider: str, configured: str | None) -> str | None:
    """The endpoint a provider would call: the configured ``base_url``, else the provider's
    own environment variable (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``), as the SDKs do."""
    if configured:
        return configured
    variable = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}.get(provider)
    return (os.environ.get(variable) or None) if variable else None


def _connect(url: str, mode: ProbeMode) -> None:
    """Reach ``url``: a TCP connect (``quick``) or an HTTP GET without credentials whose
    answer, any status, shows the server is there (``http``).  Raises when it does not."""
    import socket
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL")
    if mode == "quick":
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname, port), timeout=QUICK_PROBE_SECONDS).close()
        return
    try:
        with urllib.request.urlopen(url, timeout=PROBE_SECONDS):  # http(s) only, no key
            pass
    except urllib.error.HTTPError:
        return  # 401, 404…: the server answered


def _why_unreachable(exc: BaseException, mode: ProbeMode) -> str:
    import socket
    import urllib.error

    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        exc = exc.reason
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError | socket.timeout):
        seconds = QUICK_PROBE_SECONDS if mode == "quick" else PROBE_SECONDS
        return f"no answer within {seconds:g}s" + (
            " (doctor --probe waits longer)" if mode == "quick" else "")
    if isinstance(exc, socket.gaierror):
        return "host name not found"
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def _probe(url: str, mode: ProbeMode, seen: dict[str, str | None]) -> str | None:
    """Why ``url`` does not answer, or ``None`` when it does (each URL probed once).  The
    probe runs in a thread bounded by its time limit, so a slow name lookup cannot hang
    doctor either; no key is ever sent."""
    import threading

    if url in seen:
        return seen[url]
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            _connect(url, mode)
        except Exception as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=attempt, name="hermes-host-doctor-probe", daemon=True)
    worker.start()
    limit = QUICK_PROBE_SECONDS if mode == "quick" else PROBE_SECONDS
    worker.join(limit + 1.0)
    if not outcome:
        outcome.append(TimeoutError())
    error = outcome[0]
    seen[url] = None if error is None else _why_unreachable(error, mode)
    return seen[url]


def _model_checks(cfg: HermesConfig, probe: ProbeMode = "quick") -> list[Check]:
    """The summariser's and the chat model's provider: installed, loads, key variable set
    (each built as a compression and ``hermes-host chat`` build it, without a request), and
    each configured ``base_url`` answering (``probe``: a quick TCP connect, an HTTP request,
    or ``off``).  Both are warnings: sessions run without them (the summary falls back to
    the offline one; only ``hermes-host chat`` needs the chat model)."""
    seen: dict[str, str | None] = {}
    settings = cfg.summarizer
    name = effective_provider(settings)
    url = _base_url(name, settings.base_url)
    where = f"model {settings.model}" + (f" at {url}" if url else "")
    try:
        summarizer = summarizer_from_settings(settings)
    except SummaryError as exc:
        summary = Check("summarizer", "warn", f"{name}: {exc}; compressions use the offline "
                        "fallback summary")
    else:
        down = _probe(url, probe, seen) if url and probe != "off" and summarizer.calls_llm \
            else None
        if not summarizer.calls_llm:
            summary = Check("summarizer", "ok", f"{name} (extractive, no network)")
        elif down:
            summary = Check("summarizer", "warn", f"{name} ({where}): {url} does not answer "
                            f"({down}); compressions use the offline fallback summary")
        else:
            summary = Check("summarizer", "ok", f"{name} ({where}"
                            + ("; answers" if url and probe != "off" else "") + ")")

    model = cfg.model
    url = _base_url(model.provider, model.base_url)
    where = f"{model.provider} (model {model.name}" + (f" at {url}" if url else "")
    try:
        chat_model = load_provider(model.provider).chat_model(model, os.environ)
    except Exception as exc:  # ProviderError (unknown provider, missing key), a missing SDK
        why = str(exc) if isinstance(exc, SummaryError) else f"{type(exc).__name__}: {exc}"
        chat = Check("chat model", "warn", f"hermes-host chat would not start: {why}")
    else:
        close = getattr(chat_model, "close", None)
        if callable(close):
            close()
        down = _probe(url, probe, seen) if url and probe != "off" else None
        if down:
            chat = Check("chat model", "warn", f"{where}): {url} does not answer ({down}); "
                         "hermes-host chat would fail")
        else:
            chat = Check("chat model", "ok", where
                         + ("; answers" if url and probe != "off" else "") + ")")
    return [summary, chat]


def run_checks(config_path: Path | None, probe: ProbeMode = "quick") -> list[Check]:
    """Every doctor check, in display order; never raises for a user problem."""
    checks: list[Check] = []
    path = find_config_path(config_path)
    cfg: HermesConfig | None
    try:
        cfg = load_config(config_path)
        checks.append(Check("config", "ok", f"{source_label(path)}: valid"))
    except ConfigError as exc:
        cfg = None
        checks.append(Check("config", "fail", str(exc)))

    try:
        infos = discover()
        engines = sorted(i.name for i in infos if i.kind == "engine" and i.status != "disabled")
        providers = sorted(
            i.name for i in infos if i.kind == "memory_provider" and i.status != "disabled"
        )
        disabled = sorted(i.name for i in infos if i.status == "disabled")
        detail = (
            f"engines: {', '.join(engines) or 'none'}; "
            f"memory providers: {', '.join(providers) or 'none'}"
        )
        if disabled:
            detail += f"; disabled: {', '.join(disabled)}"
        models = ", ".join(info.name for info in provider_infos())
        checks.append(Check("plugins installed", "ok", f"{detail}; model providers: {models}"))
    except (PluginError, SummaryError) as exc:
        checks.append(Check("plugins installed", "fail", str(exc)))

    if cfg is not None:
        try:
            loaded = load_plugins(cfg)
        except PluginError as exc:
            checks.append(Check("engines selected", "fail", f"{source_label(path)}: {exc}"))
            checks.extend(_provider_checks(cfg))
        else:
            checks.append(Check("engines selected", "ok", describe_selection(cfg)))
            for info in loaded.failures:
                checks.append(Check(f"memory provider {info.name}", "warn", str(info.error)))
            for name in sorted(loaded.providers):
                checks.append(Check(f"memory provider {name}", "ok", "loaded"))

        checks.append(_stores_installed())
        location = cfg.store_url()
        if url_scheme(location) not in (None, "sqlite"):
            checks.append(_server_store(location, cfg.store.lease_ttl_seconds))
        try:
            store = cfg.store_path() if url_scheme(location) in (None, "sqlite") else None
        except StoreError as exc:
            checks.append(Check("store", "fail", f"store.url: {exc}"))
        else:
            if store is not None:
                ok, why = _writable_dir(store)
                state = "exists" if store.exists() else "will be created"
                checks.append(Check("store", "ok" if ok else "fail", f"{store} ({state}); {why}"))
                if store.is_file() and store.stat().st_size:
                    checks.append(_store_contents(store))
        checks.extend(_model_checks(cfg, probe))

    model = cfg.model.name if cfg is not None else None
    tok = encoding_info(model)
    fits = f" for {model}" if model else ""
    if tok.get("exact"):
        checks.append(Check("tokenizer", "ok", f"{tok['encoding']}{fits} ({tok['method']})"))
    elif tok["encoding"] is not None:
        checks.append(Check("tokenizer", "warn", f"{model}: {tok['note']}"))
    else:
        checks.append(Check("tokenizer", "warn", f"no tiktoken encoding; {tok['method']}"))

    checks.append(
        Check(
            "versions",
            "ok",
            f"hermes-host {__version__}; Python {platform.python_version()} ({sys.executable})",
        )
    )
    return checks


@click.command("doctor")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--probe/--no-probe",
    default=None,
    help="--probe: an HTTP request (no key sent, any answer counts, 5s) to each configured "
    "base_url of the summariser and the chat model; --no-probe: no network at all.  "
    "Default: a TCP connect within 1s.",
)
def doctor(config_path: Path | None, as_json: bool, probe: bool | None) -> None:
    """Check config, plugins, store (path, schema, contents; read-only) and tokenizer; exit 0
    if healthy, else 1.

    Also the summariser's and the chat model's provider: the key each needs is set, and each
    configured base_url answers.  A problem there is a warning, not a failure (sessions run
    without them: the summary falls back to the offline one, only hermes-host chat needs the
    chat model); the last line names every warning."""
    mode: ProbeMode = "quick" if probe is None else "http" if probe else "off"
    checks = run_checks(config_path, mode)
    healthy = all(c.status != "fail" for c in checks)
    warned = [c.name for c in checks if c.status == "warn"]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "healthy": healthy,
                    "hermes_host": __version__,
                    "python": platform.python_version(),
                    "checks": [asdict(c) for c in checks],
                },
                indent=2,
            )
        )
    else:
        console = make_console()
        table = Table("check", "status", "detail")
        for c in checks:
            table.add_row(c.name, Text(c.status, style=_STYLE[c.status]), Text(c.detail))
        console.print(table)
        verdict = "healthy" if healthy else "problems found"
        if healthy and warned:
            verdict += f", with {len(warned)} warning{'s' * (len(warned) != 1)}: " + ", ".join(
                warned)
        console.print(Text(verdict, style=_STYLE["ok" if healthy else "fail"]))
    sys.exit(0 if healthy else 1)
