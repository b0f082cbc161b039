"""What the fake provider servers share: a loopback HTTP server on an ephemeral port, the
script of behaviours, the recorded requests, and the handler steps every wire has in common.

:mod:`hermes_host.testing.fake_anthropic` and :mod:`hermes_host.testing.fake_openai` add
each provider's wire (routes, error bodies, the answer's JSON) on top.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

__all__ = ["Behaviour", "FakeServer", "RecordedRequest", "ScriptedHandler", "text_pieces"]

Behaviour = str | dict[str, Any]


def text_pieces(text: str) -> list[str]:
    """``text`` as a stream sends it: word by word, each word with the spaces after it."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: str
    behaviour: str

    @property
    def body(self) -> Any:
        """The JSON body (``None`` when it was not JSON)."""
        try:
            return json.loads(self.raw_body)
        except ValueError:
            return None


class FakeServer:
    """The server's life and its script.  Thread-safe; one instance per test.  A subclass
    names its ``KINDS`` and builds its request handler in :meth:`_handler`."""

    KINDS: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        *,
        responder: Callable[[Any], Any],
        expected_api_key: str | None,
        model: str,
        port: int = 0,
    ) -> None:
        self._responder = responder
        self._expected_key = expected_api_key
        self._model = model
        self._port = port
        self._lock = threading.Lock()
        self._script: list[dict[str, Any]] = []
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self._port), self._handler())
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        name = "fake-" + type(self).__name__.removeprefix("Fake").lower()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name=name,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- test API ------------------------------------------------------------------------

    def _root(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, behaviours: Iterable[Behaviour]) -> Self:
        """Queue behaviours, one per incoming request, after any still queued."""
        steps = [self._normalise(b) for b in behaviours]
        with self._lock:
            self._script.extend(steps)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._script.clear()

    # -- used by the handler -------------------------------------------------------------

    @classmethod
    def _normalise(cls, step: Behaviour) -> dict[str, Any]:
        spec = {"kind": step} if isinstance(step, str) else dict(step)
        kind = str(spec.get("kind", ""))
        if kind not in cls.KINDS:
            allowed = ", ".join(sorted(cls.KINDS))
            raise ValueError(f"unknown fake behaviour {kind!r}; choose one of: {allowed}")
        spec["kind"] = kind
        return spec

    def _next(self, record: Callable[[str], RecordedRequest]) -> dict[str, Any]:
        with self._lock:
            step: dict[str, Any] = self._script.pop(0) if self._script else {"kind": "normal"}
            self._requests.append(record(step["kind"]))
            self._counter += 1
            step.setdefault("_n", self._counter)
        return step


class ScriptedHandler(BaseHTTPRequestHandler):
    """The steps every fake wire shares: read and record the request, take the next
    behaviour, and act out ``disconnect`` and ``slow``."""

    protocol_version = "HTTP/1.1"
    fake: ClassVar[FakeServer]

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean

    def _take_step(self) -> tuple[dict[str, Any], dict[str, str], str]:
        """``(behaviour, lower-cased headers, raw body)`` of this request, recorded."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}

        def record(kind: str) -> RecordedRequest:
            return RecordedRequest("POST", self.path, headers, raw, kind)

        return self.fake._next(record), headers, raw

    def _disconnect(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _send_events(self, events: list[bytes], pause: float = 0.0) -> None:
        """200 with server-sent ``events``, each written and flushed on its own, ``pause``
        seconds apart (cut short when the server stops): a client that streams shows the
        first words before the last are sent."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(sum(len(e) for e in events)))
        self.send_header("request-id", "req_fake")
        self.end_headers()
        for i, event in enumerate(events):
            if i and pause:
                self._wait({"seconds": pause})
            self.wfile.write(event)
            self.wfile.flush()

    def _wait(self, step: dict[str, Any]) -> None:
        """``slow``: sleep ``seconds`` (default 5), cut short when the server stops."""
        deadline = time.monotonic() + float(step.get("seconds", 5.0))
        while time.monotonic() < deadline and not self.fake._stopping.is_set():
            time.sleep(0.02)
