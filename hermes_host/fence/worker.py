"""The worker process of ``fence.isolation: process``: one plugin, its hooks, JSON frames.

Started by :mod:`hermes_host.fence.isolation` as ``python -c '…worker import main; main()' FD``
with one end of a socket pair.  Every frame is an 8-byte big-endian length and a body; the
first two frames (from the host, trusted) are the settings (JSON) and the pickled recipe of
the plugin (its class and ``options=``, or the instance itself); every later frame is JSON:

* host → worker: ``{"op": "call", "hook", "request_type", "history"}`` and the request's
  JSON in the next frame, or the answer to a history question (``{"value": …}`` /
  ``{"error": …}``);
* worker → host: ``{"op": "ready"}`` / ``{"op": "failed", "error"}`` once, then per call
  any number of ``{"op": "history", "method", "kwargs"}`` and one ``{"op": "result", …}``
  (for ``"kind": "json"`` the result model's own JSON follows in one more frame).

What the plugin returns is turned into plain data here (:func:`~hermes_host.fence.snapshot.plain`)
and checked against the size cap before it is sent; the host validates it again on its side,
so nothing this process sends is trusted.  The worker exits when the host goes away (EOF, or
on Linux the parent-death signal), so a host killed mid-call leaves no worker spinning.
"""

from __future__ import annotations

import ctypes
import enum
import importlib
import json
import math
import os
import pickle
import signal
import socket
import sys
import threading
import traceback
from typing import Any

__all__ = ["read_frame", "write_frame"]

_HEADER = 8
_MAX_TEXT = 4_000


def write_frame(sock: socket.socket, body: bytes) -> None:
    sock.sendall(len(body).to_bytes(_HEADER, "big") + body)


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError("the other end closed the connection")
        got += k
    return bytes(buf)


def read_frame(sock: socket.socket, limit: int | None = None) -> bytes:
    """One frame's body.  ``limit``: raise ``OverflowError(size)`` instead of reading a
    longer body (the caller decides what a too-large frame means)."""
    size = int.from_bytes(_read_exact(sock, _HEADER), "big")
    if limit is not None and size > limit:
        raise OverflowError(size)
    return _read_exact(sock, size)


def _send(sock: socket.socket, lock: threading.Lock, message: dict[str, Any]) -> None:
    body = json.dumps(message, default=_json_default, ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )
    with lock:
        write_frame(sock, body)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"{type(value).__name__} is not plain data")


class HistoryUnavailable(RuntimeError):
    """The host could not answer a history question."""


class RemoteHistory:
    """The read-only history handle of an isolated engine: every question goes to the host,
    which answers it from its own read-only reader.  Nothing here can write anything."""

    __slots__ = ("_lock", "_sock")

    def __init__(self, sock: socket.socket, lock: threading.Lock) -> None:
        self._sock = sock
        self._lock = lock

    def _ask(self, method: str, kwargs: dict[str, Any]) -> Any:
        with self._lock:  # one question at a time, even from the engine's own threads
            body = json.dumps({"op": "history", "method": method, "kwargs": kwargs})
            write_frame(self._sock, body.encode("utf-8", "surrogatepass"))
            reply = json.loads(read_frame(self._sock))
        if "error" in reply:
            raise HistoryUnavailable(str(reply["error"]))
        return reply["value"]

    def search(self, query: str, *, limit: int = 20, lineage: bool = True) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self._ask(
            "search", {"query": str(query), "limit": int(limit), "lineage": bool(lineage)}
        )
        return value

    def messages(self, *, include_inactive: bool = True) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self._ask(
            "messages", {"include_inactive": bool(include_inactive)}
        )
        return value


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the host dies (prctl PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _limit_memory(megabytes: int | None) -> None:
    if not megabytes:
        return
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def _text(value: Any, limit: int = _MAX_TEXT) -> str:
    try:
        text = str(value)
    except Exception:  # an exception whose __str__ raises
        text = "<unprintable message>"
    return text[:limit]


def _build(recipe: bytes) -> Any:
    kind, *rest = pickle.loads(recipe)
    if kind == "factory":
        factory, options = rest
        return factory(options=dict(options)) if options is not None else factory()
    return rest[0]


def _result(hook: str, value: Any, firstresult: bool, cap: int) -> dict[str, Any]:
    from hermes_host.fence.snapshot import NotPlainData, ResultTooLarge, plain
    from hermes_host.fence.validate import IGNORED_HOOKS, RESULT_TYPES, type_problem

    if not firstresult:
        value = value[0] if isinstance(value, list) and value else None
    if value is None:
        return {"kind": "none"}
    if hook in IGNORED_HOOKS:
        return {"kind": "ignored"}
    problem = type_problem(hook, value)
    if problem is not None:
        return {"kind": "problem", "problem": problem}
    try:
        data, size = plain(value, cap=cap, deadline=math.inf, timer=lambda: 0.0)
    except ResultTooLarge as exc:
        return {"kind": "too_large", "size": exc.size}
    except NotPlainData as exc:
        return {"kind": "problem", "problem": f"the result is not plain data: {exc}"}
    # measured and found plain: for the hook's own result type pydantic writes the JSON
    model = RESULT_TYPES.get(hook)
    if model is not None and type(value) is model:
        try:
            body = value.model_dump_json(warnings=False).encode("utf-8", "surrogatepass")
        except Exception:  # not as the model says: send the plain data instead
            body = None
        if body is not None:
            if len(body) > cap:
                return {"kind": "too_large", "size": len(body)}
            return {"kind": "json", "body": body}
    return {"kind": "value", "data": data, "size": size}


def _serve(sock: socket.socket) -> None:
    import pluggy

    from hermes_host import hookspecs

    settings = json.loads(read_frame(sock))
    sys.path[:] = settings["sys_path"]
    _limit_memory(settings.get("memory_limit_mb"))
    cap = int(settings["cap"])
    lock = threading.Lock()
    try:
        plugin = _build(read_frame(sock))
        pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        pm.add_hookspecs(hookspecs)
        pm.register(plugin, name=settings["name"])
    except BaseException as exc:  # import errors, a raising constructor, even SystemExit
        _send(sock, lock, {"op": "failed", "error": f"{type(exc).__name__}: {_text(exc)}"})
        return
    _send(sock, lock, {"op": "ready"})
    models: dict[str, Any] = {}
    while True:
        try:
            message = json.loads(read_frame(sock))
            payload = read_frame(sock)  # the request's JSON
        except EOFError:
            return
        hook = message["hook"]
        try:
            path = message["request_type"]
            if path not in models:
                module, _, name = path.partition(":")
                models[path] = getattr(importlib.import_module(module), name)
            request = models[path].model_validate_json(payload)
            if message.get("history"):
                request = request.model_copy(update={"history": RemoteHistory(sock, lock)})
            caller = getattr(pm.hook, hook)
            firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
            reply = _result(hook, caller(request=request), firstresult, cap)
        except BaseException as exc:  # the plugin may raise anything, even SystemExit
            try:
                tb = "".join(traceback.format_exception(exc))[-_MAX_TEXT * 4 :]
            except Exception:
                tb = ""
            reply = {
                "kind": "raised",
                "type": type(exc).__name__,
                "message": _text(exc),
                "traceback": tb,
            }
        reply["op"] = "result"
        reply["threads"] = threading.active_count()
        body = reply.pop("body", None)
        try:
            if body is not None:  # the model's JSON follows in a frame of its own
                with lock:
                    header = json.dumps(reply).encode()
                    sock.sendall(len(header).to_bytes(_HEADER, "big") + header
                                 + len(body).to_bytes(_HEADER, "big") + body)
                continue
            _send(sock, lock, reply)
        except (TypeError, ValueError) as exc:  # e.g. a NaN the host's JSON refuses
            _send(sock, lock, {"op": "result", "kind": "problem", "threads": 1,
                               "problem": f"the result cannot be sent as JSON: {_text(exc)}"})


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    _die_with_parent()
    sock = socket.socket(fileno=int(args[0]))
    try:
        _serve(sock)
    except (EOFError, ConnectionError, BrokenPipeError):
        pass
    finally:
        os._exit(0)  # never run the plugin's atexit handlers or wait for its threads


if __name__ == "__main__":
    main()
