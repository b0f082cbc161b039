"""``hermes-host browse``: serve the store as a local, read-only web app (issue 29)."""

from __future__ import annotations

import socket
from pathlib import Path

import click

from hermes_host.store import StoreError, open_store
from hermes_host.store.registry import redact_url

from .sessions.opening import _checked_file, _missing_file, _resolve_path, fail

__all__ = ["browse"]


@click.command("browse")
@click.option("--store", "store_path", metavar="PATH|URL", default=None,
              help="Store to browse: a state.db path or a store URL (default: the configured "
              "store, $HERMES_HOST_HOME/state.db).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None,
              help="config.yaml to use (default: $HERMES_HOST_CONFIG, ./config.yaml, "
              "$HERMES_HOST_HOME/config.yaml).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (anything but loopback shows your sessions to the "
              "network).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
def browse(store_path: str | None, config_path: Path | None, host: str, port: int) -> None:
    """Browse the store in a local read-only web app: what the model saw, each request,
    each compaction.

    Pages: / (conversations), /c/CONVERSATION (the whole lineage, full transcript or model
    view with each compaction's marker and receipt), /c/CONVERSATION/r/N (exactly what the
    model received at request N), /search?q=WORDS.  Every text is redacted; nothing is
    written to the store (a SQLite store is opened read-only, so a live agent may keep
    writing it)."""
    import uvicorn

    from hermes_host.browse.app import LOOPBACK_NAMES, create_app

    location, ttl = _resolve_path(store_path, config_path)
    local = _checked_file(location)
    missing = _missing_file(location)
    if missing is not None:
        fail(f"{missing}: no store here yet (it is created by the first session); "
             "pass --store PATH to browse another one")
    try:
        store = open_store(location, lease_ttl=ttl, read_only=local is not None)
    except StoreError as exc:
        fail(exc)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        store.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = create_app(store, store_label=redact_url(location),
                     allowed_hosts=(*LOOPBACK_NAMES, host))
    click.echo(f"Browsing {redact_url(location)} (read-only) at http://{shown}:{bound}/ "
               "- Ctrl-C to stop")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        store.close()
