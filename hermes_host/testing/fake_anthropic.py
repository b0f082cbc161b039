"""A real loopback HTTP server that speaks enough of the Anthropic Messages API for tests.

The real ``anthropic`` SDK talks to it over TCP on ``127.0.0.1`` (ephemeral port), so tests
exercise the SDK's own request building, error mapping and timeouts — nothing is mocked.

Usage::

    with FakeAnthropic() as fake:                     # or fake = FakeAnthropic().start()
        fake.script(["429", "normal"])                # one behaviour per request, then normal
        client = anthropic.Anthropic(api_key="k", base_url=fake.base_url, max_retries=0)
        ...
        assert "sk-ant-" not in fake.requests[-1].raw_body

Behaviours (a string, or a dict with ``kind`` plus options):

=============  ==============================================================================
``normal``     200, a Messages API JSON with one text block and ``usage``; option ``text``
``slow``       sleeps ``seconds`` (default 5) then answers like ``normal``
``429``        rate_limit_error, with ``retry-after`` (option ``retry_after``, default 1)
``500``        api_error
``529``        overloaded_error
``401``        authentication_error
``402``        billing_error
``403``        permission_error
``credit``     400 invalid_request_error "Your credit balance is too low …"
``malformed``  200 with a body that is not valid JSON
``empty``      200 with a text block whose text is ``""``
``disconnect`` closes the connection without answering
``error``      any error: options ``status`` (500), ``type`` (api_error), ``message``
=============  ==============================================================================

A request with ``"stream": true`` gets the answer as the Messages API's server-sent events
(``message_start``, a text block whose text comes word by word in ``content_block_delta``
events, ``message_delta`` with the stop reason and usage, ``message_stop``), which the SDK's
``messages.stream`` reads; option ``pause`` (seconds) waits between events.

Every error behaviour takes ``headers``, a dict of extra response headers (e.g.
``{"retry-after-ms": "2500"}`` on a 503).

When the script is exhausted every request gets ``normal``.  The default ``normal`` text is a
well-formed eleven-section summary (R-7.2) that quotes the request size, or whatever
``responder(body)`` returns when a responder is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from hermes_host.llm.base import SUMMARY_SECTIONS
from hermes_host.testing.fake_server import (
    Behaviour,
    FakeServer,
    RecordedRequest,
    ScriptedHandler,
    text_pieces,
)

__all__ = ["SECTION_HEADINGS", "Behaviour", "FakeAnthropic", "RecordedRequest"]

SECTION_HEADINGS = tuple(f"## {name}" for name in SUMMARY_SECTIONS)

CREDIT_MESSAGE = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)

_ERRORS: dict[str, tuple[int, str, str]] = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    "500": (500, "api_error", "Internal server error"),
    "529": (529, "overloaded_error", "Overloaded"),
    "401": (401, "authentication_error", "invalid x-api-key"),
    "402": (402, "billing_error", "Payment required: your organization has no active plan."),
    "403": (403, "permission_error", "Your API key does not have permission to use this model."),
    "credit": (400, "invalid_request_error", CREDIT_MESSAGE),
}

KINDS = frozenset({*_ERRORS, "error", "normal", "slow", "malformed", "empty", "disconnect"})


def default_summary_text(body: Any) -> str:
    """A structurally valid summary, so engine tests get eleven sections back."""
    size = len(json.dumps(body)) if body is not None else 0
    lines = []
    for heading in SECTION_HEADINGS:
        lines.append(heading)
        if heading == "## Completed Actions":
            lines.append(f"1. SUMMARISE request — {size} bytes received [tool: fake_anthropic]")
        else:
            lines.append("None.")
        lines.append("")
    return "\n".join(lines).strip()


class FakeAnthropic(FakeServer):
    """The server.  Thread-safe; one instance per test."""

    KINDS = KINDS

    def __init__(
        self,
        *,
        responder: Callable[[Any], str] | None = None,
        expected_api_key: str | None = None,
        model: str = "claude-fake-1",
    ) -> None:
        super().__init__(responder=responder or default_summary_text,
                         expected_api_key=expected_api_key, model=model)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    @property
    def base_url(self) -> str:
        return self._root()

    def env(self, api_key: str = "sk-ant-test-fake-key") -> dict[str, str]:
        """Environment variables that point the SDK (and our summariser) at this server."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    def _message_json(self, body: Any, text: str, n: int) -> dict[str, Any]:
        model = body.get("model") if isinstance(body, dict) else None
        return {
            "id": f"msg_fake_{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": model or self._model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(1, len(json.dumps(body)) // 4) if body else 1,
                "output_tokens": max(1, len(text) // 4),
            },
        }


def _sse(message: dict[str, Any]) -> list[bytes]:
    """A Messages API answer as the events of ``stream: true``, one text delta per word."""
    text = "".join(block["text"] for block in message["content"])
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": piece}})
               for piece in text_pieces(text)]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"],
                                     "stop_sequence": None},
                           "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_fake")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def _error(self, status: int, etype: str, message: str, **headers: str) -> None:
            body = {"type": "error", "error": {"type": etype, "message": message}}
            self._send(status, json.dumps(body).encode(), headers)

        def do_POST(self) -> None:
            step, headers, raw = self._take_step()
            kind = step["kind"]
            if self.path.split("?")[0] != "/v1/messages":
                self._error(404, "not_found_error", f"no route {self.path}")
                return
            sent_key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
                "Bearer "
            )
            if fake._expected_key is not None and sent_key != fake._expected_key:
                self._error(401, "authentication_error", "invalid x-api-key")
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._error(400, "invalid_request_error", "body is not JSON")
                return
            if not isinstance(body, dict) or not {"model", "max_tokens", "messages"} <= set(body):
                self._error(400, "invalid_request_error", "model, max_tokens, messages required")
                return
            if kind in _ERRORS or kind == "error":
                status, etype, message = _ERRORS.get(kind) or (
                    int(step.get("status", 500)),
                    str(step.get("type", "api_error")),
                    str(step.get("message", "error")),
                )
                extra = {"retry-after": str(step.get("retry_after", 1))} if status == 429 else {}
                extra.update({str(k): str(v) for k, v in (step.get("headers") or {}).items()})
                self._error(status, etype, message, **extra)
                return
            if kind == "disconnect":
                self._disconnect()
                return
            if kind == "malformed":
                self._send(200, b'{"id": "msg_broken", "content": [{"type": "text", "te')
                return
            if kind == "slow":
                self._wait(step)
            text = "" if kind == "empty" else step.get("text")
            if text is None:
                text = fake._responder(body)
            payload = fake._message_json(body, str(text), int(step["_n"]))
            try:
                if body.get("stream"):
                    self._send_events(_sse(payload), float(step.get("pause", 0.0)))
                else:
                    self._send(200, json.dumps(payload).encode())
            except OSError:
                return  # the client gave up (timeout) while we were slow

    Handler.fake = fake
    return Handler
