"""The loopback OpenAI server answers with tool calls, as the agent frameworks' tests need
(issue 18): through the real ``openai`` SDK, scripted or from a responder."""

from __future__ import annotations

import json
from typing import Any

import openai

from hermes_host.testing.fake_openai import FakeOpenAI


def test_scripted_and_responder_tool_calls() -> None:
    """Issue 18: a scripted step's ``tool_calls`` and a responder's dict both come back in the
    Chat Completions shape the SDK parses, with finish_reason tool_calls."""

    def responder(body: Any) -> dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"content": f"done: {last['content']}"}
        return {"content": "", "tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}

    with FakeOpenAI(responder=responder) as fake:
        fake.script([{"kind": "normal", "tool_calls": [
            {"id": "call_a", "name": "grep", "arguments": '{"pattern": "p"}'}]}])
        client = openai.OpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
        ask = [{"role": "user", "content": "find it"}]
        first = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        call = choice.message.tool_calls[0]  # type: ignore[index]
        assert (call.id, call.function.name, call.function.arguments) == (  # type: ignore[union-attr]
            "call_a", "grep", '{"pattern": "p"}')

        second = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
        call = second.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert call.function.name == "lookup"  # type: ignore[union-attr]
        assert json.loads(call.function.arguments) == {"q": "x"}  # type: ignore[union-attr]
        assert second.choices[0].message.content is None

        third = client.chat.completions.create(model="m", messages=[  # type: ignore[arg-type]
            *ask, {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "42"}])
        assert third.choices[0].message.content == "done: 42"
        assert third.choices[0].finish_reason == "stop"
