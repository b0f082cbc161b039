"""The planted-secrets corpus is fully redacted; real transcripts are not mangled (R-7.1)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from llm_helpers import load_transcript, transcript_params, transcript_texts

from hermes_host.redact import REDACTED, redact, redact_counted, redact_messages
from hermes_host.testing.secrets_corpus import secret_cases, secret_corpus

FAMILIES = {
    "anthropic", "openai", "openai_project", "github_ghp", "github_gho", "github_ghs",
    "github_ghu", "github_pat", "aws_access_key_id", "aws_session_key_id", "aws_secret",
    "google", "slack_bot", "slack_user", "huggingface", "gitlab", "stripe_secret",
    "stripe_restricted", "jwt", "pem", "authorization_bearer", "authorization_basic",
    "authorization_token", "x_api_key", "url_userinfo", "curl_user", "assignment", "cli_flag",
    "cli_password", "sendgrid", "digitalocean",
}


def test_corpus_is_large_distinct_and_covers_every_family() -> None:
    pairs = secret_corpus()
    assert len(pairs) >= 200
    assert len({secret for _, secret in pairs}) == len(pairs)
    assert all(secret in text for text, secret in pairs)
    assert {c.family for c in secret_cases()} >= FAMILIES
    contexts = Counter(c.context for c in secret_cases())
    assert len(contexts) >= 15  # shell, .env, JSON, YAML, curl, URLs, PEM, tool output, ...


def test_corpus_is_deterministic_per_seed() -> None:
    assert secret_corpus() == secret_corpus()
    assert secret_corpus(seed=7) == secret_corpus(seed=7)
    assert secret_corpus(seed=7) != secret_corpus()


@pytest.mark.parametrize("seed", [20261202, 1, 99])
def test_redact_removes_every_corpus_secret_r7_1(seed: int) -> None:
    leaked = []
    for case in secret_cases(seed):
        out = redact(case.text)
        if case.secret in out or REDACTED not in out:
            leaked.append((case.family, case.context))
    assert leaked == []


def test_redact_messages_removes_corpus_secrets_from_every_field_r7_1() -> None:
    messages = []
    for i, (text, _) in enumerate(secret_corpus()):
        kind = i % 3
        if kind == 0:
            messages.append({"role": "user", "content": text})
        elif kind == 1:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": text}],
                             "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                                 "name": "bash", "arguments": json.dumps({"command": text})}}]})
        else:
            messages.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": text})
    wire = json.dumps(redact_messages(messages))
    leaked = [secret for _, secret in secret_corpus() if secret in wire
              or json.dumps(secret)[1:-1] in wire]
    assert leaked == []


@pytest.mark.parametrize("path", transcript_params())
def test_real_transcripts_are_not_mangled_r7_1(path: Path) -> None:
    """The transcripts were sanitised by their authors: ordinary code, logs and prose must come
    out byte-identical (0 redactions per file)."""
    texts = transcript_texts(load_transcript(path))
    changed = []
    for text in texts:
        out, n = redact_counted(text)
        if n:
            for m in re.finditer(re.escape(REDACTED), out):
                changed.append(out[max(0, m.start() - 60): m.end() + 10])
    assert changed == [], f"{path.name}: {len(changed)} redactions: {changed[:5]}"
