"""The loopback OpenAI server streams when asked (issue 18: Hermes Agent always streams),
driven through the real ``openai`` SDK's ``Stream``."""

from __future__ import annotations

import openai

from hermes_host.testing.fake_openai import FakeOpenAI


def test_stream_true_yields_the_text_the_finish_reason_and_the_usage_issue_18() -> None:
    with FakeOpenAI(responder=lambda body: "streamed answer") as fake:
        client = openai.OpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
        chunks = list(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True},
        ))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "streamed answer"
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens >= 1
        # without include_usage there is no usage chunk
        plain = list(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
        assert all(c.usage is None for c in plain)
        assert fake.requests[0].body["stream"] is True
