"""A real loopback HTTP server that speaks enough of the OpenAI Chat Completions API for tests.

The real ``openai`` SDK talks to it over TCP on ``127.0.0.1`` (ephemeral port), so tests
exercise the SDK's own request building, error mapping and timeouts — nothing is mocked.

Usage::

    with FakeOpenAI() as fake:                        # or fake = FakeOpenAI().start()
        fake.script(["429", "normal"])                # one behaviour per request, then normal
        client = openai.OpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
        ...
        assert "sk-" not in fake.requests[-1].raw_body

Behaviours (a string, or a dict with ``kind`` plus options):

=============  ==============================================================================
``normal``     200, a chat completion with ``usage``; options ``text``, ``tool_calls``
``slow``       sleeps ``seconds`` (default 5) — past a short client timeout — then answers
``429``        rate_limit_exceeded, with ``retry-after`` (option ``retry_after``, default 1)
``quota``      429 insufficient_quota (OpenAI's "you exceeded your current quota")
``500``        server_error
``401``        invalid_api_key
``403``        permission denied
``404``        model_not_found
``400``        invalid_request_error
``malformed``  200 with a body that is not valid JSON
``length``     200, the reply cut off: ``finish_reason: "length"``
``empty``      200 with ``content: ""``
``disconnect`` closes the connection without answering
``error``      any error: options ``status`` (500), ``type`` (server_error), ``message``
=============  ==============================================================================

Every error behaviour takes ``headers``, a dict of extra response headers (e.g.
``{"retry-after-ms": "2500"}`` on a 503).

``POST /v1/responses`` speaks the Responses API (what the OpenAI Agents SDK's default
model, ``OpenAIResponsesModel``, calls): the request's ``instructions`` and ``input`` items
are read as the equivalent chat messages (so the same script and responder serve both
routes) and the answer comes back as a ``response`` object, or with ``"stream": true`` as
its ``response.*`` server-sent events.

A request with ``"stream": true`` gets its answer as server-sent events (one text delta,
the finish reason, the usage chunk when ``stream_options.include_usage`` is set, ``[DONE]``),
as agents that always stream (Hermes Agent) expect.  When the script is exhausted every
request gets ``normal``.  The default ``normal`` text is a
well-formed eleven-section summary (R-7.2) that quotes the request size, or whatever
``responder(body)`` returns when a responder is given.

A reply can call tools, as agent frameworks need: ``tool_calls`` (in a scripted step, or in
the dict a responder may return instead of a string, ``{"content": ..., "tool_calls": [...]}``)
is a list of ``{"name": ..., "arguments": {...} or "json"}`` (``id`` optional); the reply then
carries them in the Chat Completions shape with ``finish_reason: "tool_calls"``.

``python -m hermes_host.testing.fake_openai [--port N]`` serves it in the foreground for a
``hermes-host chat`` demo without a real model (docs/chat.md): chat turns are answered with an
echo of the last user message, summary requests with a summary.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from hermes_host.testing.fake_anthropic import default_summary_text
from hermes_host.testing.fake_server import (
    Behaviour,
    FakeServer,
    RecordedRequest,
    ScriptedHandler,
    text_pieces,
)

__all__ = ["Behaviour", "FakeOpenAI", "RecordedRequest", "chat_responder", "main"]

_ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    # kind: (status, error type, error code, message)
    "429": (429, "requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    "quota": (429, "insufficient_quota", "insufficient_quota",
              "You exceeded your current quota, please check your plan and billing details."),
    "500": (500, "server_error", None, "The server had an error processing your request."),
    "401": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    "403": (403, "invalid_request_error", "unsupported_country_region_territory",
            "Country, region, or territory not supported."),
    "404": (404, "invalid_request_error", "model_not_found",
            "The model does not exist or you do not have access to it."),
    "400": (400, "invalid_request_error", None, "Invalid request."),
}

KINDS = frozenset({*_ERRORS, "error", "normal", "slow", "malformed", "length", "empty",
                   "disconnect"})


def _tool_call(call: Mapping[str, Any], n: int, i: int) -> dict[str, Any]:
    arguments = call.get("arguments", {})
    return {
        "id": str(call.get("id") or f"call_fake{n:06d}_{i}"),
        "type": "function",
        "function": {
            "name": str(call["name"]),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def chat_responder(body: Any) -> str:
    """For demos: a summary for a summary request, else an echo of the last user message."""
    messages = body.get("messages") if isinstance(body, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else {}
    text = last.get("content") if isinstance(last, dict) else ""
    text = text if isinstance(text, str) else json.dumps(text)
    if "## Historical Task Snapshot" in text or "summar" in text[:400].lower():
        return default_summary_text(body)
    words = len(text.split())
    return f"(fake model) You said {words} word(s): {text[:200]}"


class FakeOpenAI(FakeServer):
    """The server.  Thread-safe; one instance per test."""

    KINDS = KINDS

    def __init__(
        self,
        *,
        responder: Callable[[Any], str | Mapping[str, Any]] | None = None,
        expected_api_key: str | None = None,
        model: str = "gpt-fake-1",
        port: int = 0,
    ) -> None:
        super().__init__(responder=responder or default_summary_text,
                         expected_api_key=expected_api_key, model=model, port=port)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    @property
    def base_url(self) -> str:
        """The ``/v1`` root the SDK's ``base_url`` takes."""
        return self._root() + "/v1"

    def env(self, api_key: str = "sk-test-fake-openai-key") -> dict[str, str]:
        """Environment variables that point the SDK (and our summariser) at this server."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": api_key}

    def _completion(self, body: dict[str, Any], text: str, n: int,
                    finish: str, tool_calls: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        prompt = max(1, len(json.dumps(body.get("messages"))) // 4)
        completion = max(1, len(text) // 4)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = [_tool_call(call, n, i) for i, call in enumerate(tool_calls)]
            message["content"] = text or None
            finish = "tool_calls" if finish == "stop" else finish
        return {
            "id": f"chatcmpl-fake{n:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self._model,
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": finish,
            }],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }


def _sse(completion: dict[str, Any], body: dict[str, Any], by_word: bool = False) -> list[bytes]:
    """A completion as the server-sent events of ``stream: true``: the role and text in one
    delta (``by_word``: the text in one delta per word), the finish reason, the usage chunk
    when ``stream_options.include_usage`` asks for it, then ``[DONE]`` (the shape the SDK's
    ``Stream`` parses)."""
    choice = completion["choices"][0]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    content = choice["message"]["content"]
    pieces = text_pieces(content or "") if by_word else [content]
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "finish_reason": None, "delta": {
            "role": "assistant", "content": pieces[0] if pieces else content,
            **({"tool_calls": [{"index": i, **call} for i, call in
                               enumerate(choice["message"]["tool_calls"])]}
               if choice["message"].get("tool_calls") else {})}}]},
        *({**base, "choices": [{"index": 0, "finish_reason": None,
                                "delta": {"content": piece}}]} for piece in pieces[1:]),
        {**base, "choices": [{"index": 0, "delta": {},
                              "finish_reason": choice["finish_reason"]}]},
    ]
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return [event.encode() for event in events]


def _input_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses API request (``instructions`` + ``input`` items) as the Chat Completions
    body the responder and the scripted behaviours read: messages keep their role and text,
    ``function_call`` items become an assistant's ``tool_calls``, ``function_call_output``
    items ``tool`` messages."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body["input"]
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if messages and messages[-1]["role"] == "assistant" and "tool_calls" in messages[-1]:
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _input_text(item.get("output"))})
        elif kind == "message":
            messages.append({"role": item.get("role", "user"),
                             "content": _input_text(item.get("content"))})
    return {"model": body["model"], "messages": messages, "stream": bool(body.get("stream"))}


def response_object(completion: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion as the Responses API ``response`` object: a ``message`` output item
    for the text, one ``function_call`` item per tool call, ``usage`` in its shape."""
    message = completion["choices"][0]["message"]
    n = completion["id"].removeprefix("chatcmpl-fake")
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append({"type": "message", "id": f"msg_fake{n}", "status": "completed",
                       "role": "assistant", "content": [
                           {"type": "output_text", "text": message["content"],
                            "annotations": []}]})
    for call in message.get("tool_calls") or ():
        output.append({"type": "function_call", "id": f"fc_{call['id']}",
                       "call_id": call["id"], "name": call["function"]["name"],
                       "arguments": call["function"]["arguments"], "status": "completed"})
    usage = completion["usage"]
    return {
        "id": f"resp_fake{n}", "object": "response", "created_at": completion["created"],
        "status": "completed", "model": completion["model"], "output": output,
        "parallel_tool_calls": True, "tool_choice": body.get("tool_choice") or "auto",
        "tools": [], "instructions": body.get("instructions"), "metadata": {},
        "error": None, "incomplete_details": None, "temperature": None, "top_p": None,
        "usage": {"input_tokens": usage["prompt_tokens"],
                  "output_tokens": usage["completion_tokens"],
                  "total_tokens": usage["total_tokens"],
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def response_sse(response: dict[str, Any]) -> bytes:
    """A Responses API answer as its server-sent events: ``response.created``, each output
    item added (text as one ``output_text.delta``) and done, then ``response.completed``
    carrying the whole response (what the SDK's streaming reads the final answer from)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created",
         "response": {**response, "status": "in_progress", "output": []}}]
    for index, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "status": "in_progress",
                                **({"content": []} if item["type"] == "message" else {})}})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append({"type": "response.content_part.added", "item_id": item["id"],
                           "output_index": index, "content_index": 0, "part": part})
            events.append({"type": "response.output_text.delta", "item_id": item["id"],
                           "output_index": index, "content_index": 0, "delta": text,
                           "logprobs": []})
            events.append({"type": "response.output_text.done", "item_id": item["id"],
                           "output_index": index, "content_index": 0, "text": text,
                           "logprobs": []})
            events.append({"type": "response.content_part.done", "item_id": item["id"],
                           "output_index": index, "content_index": 0,
                           "part": {**part, "text": text}})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": item})
    events.append({"type": "response.completed", "response": response})
    return "".join(
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': seq})}\n\n"
        for seq, event in enumerate(events)).encode()


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        # Headers and body go out as two writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK hold the body back ~40 ms per keep-alive request.
        disable_nagle_algorithm = True

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            headers = dict(headers or {})
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("x-request-id", "req_fake")
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def _error(self, status: int, etype: str, code: str | None, message: str,
                   **headers: str) -> None:
            body = {"error": {"message": message, "type": etype, "param": None, "code": code}}
            self._send(status, json.dumps(body).encode(), headers)

        def do_POST(self) -> None:
            step, headers, raw = self._take_step()
            kind = step["kind"]
            route = self.path.split("?")[0]
            if route not in ("/v1/chat/completions", "/v1/responses"):
                self._error(404, "invalid_request_error", None, f"no route {self.path}")
                return
            sent_key = headers.get("authorization", "").removeprefix("Bearer ")
            if fake._expected_key is not None and sent_key != fake._expected_key:
                self._error(401, *_ERRORS["401"][1:])
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._error(400, "invalid_request_error", None, "body is not JSON")
                return
            responses = route == "/v1/responses"
            if responses and isinstance(body, dict) and {"model", "input"} <= set(body):
                original, body = body, responses_as_chat(body)
            elif not isinstance(body, dict) or not {"model", "messages"} <= set(body):
                self._error(400, "invalid_request_error", None, "model and messages required")
                return
            if kind in _ERRORS or kind == "error":
                status, etype, code, message = _ERRORS.get(kind) or (
                    int(step.get("status", 500)), str(step.get("type", "server_error")), None,
                    str(step.get("message", "error")),
                )
                extra = {"retry-after": str(step.get("retry_after", 1))} if status == 429 else {}
                extra.update({str(k): str(v) for k, v in (step.get("headers") or {}).items()})
                self._error(status, etype, code, message, **extra)
                return
            if kind == "disconnect":
                self._disconnect()
                return
            if kind == "malformed":
                self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"message": {"con')
                return
            if kind == "slow":
                self._wait(step)
            text = "" if kind == "empty" else step.get("text")
            calls = step.get("tool_calls") or ()
            if text is None and not calls:
                answer = fake._responder(body)
                if isinstance(answer, Mapping):
                    text, calls = answer.get("content") or "", answer.get("tool_calls") or ()
                else:
                    text = answer
            finish = "length" if kind == "length" else "stop"
            payload = fake._completion(body, str(text or ""), int(step["_n"]), finish, calls)
            try:
                if responses:
                    answer_obj = response_object(payload, original)
                    if original.get("stream"):
                        self._send(200, response_sse(answer_obj),
                                   {"Content-Type": "text/event-stream"})
                    else:
                        self._send(200, json.dumps(answer_obj).encode())
                elif body.get("stream"):
                    pause = step.get("pause")
                    self._send_events(_sse(payload, body, by_word=pause is not None),
                                      float(pause or 0.0))
                else:
                    self._send(200, json.dumps(payload).encode())
            except OSError:
                return  # the client gave up (timeout) while we were slow

        def do_GET(self) -> None:  # GET /v1/models, as clients probe it (not scripted)
            models = {"object": "list", "data": [{"id": fake._model, "object": "model",
                                                  "owned_by": "hermes-host"}]}
            self._send(200, json.dumps(models).encode())

    Handler.fake = fake
    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a fake OpenAI-compatible model in the foreground (Ctrl-C stops)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m hermes_host.testing.fake_openai")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any)")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(responder=chat_responder, port=args.port).start()
    print(f"fake OpenAI-compatible server on {fake.base_url} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
