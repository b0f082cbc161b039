"""The hand-written corpus of documented secret formats is redacted; look-alikes are not (R-7.1).

The corpus (``secret_forms.py``) is written from each format's documentation, not from the
redactor or the generator in ``hermes_host.testing.secrets_corpus``, so a family the redactor
does not know shows up here as a leak.
"""

from __future__ import annotations

import pytest
from secret_forms import FORMS, NEGATIVES, Form

from hermes_host.redact import REDACTED, contains_secret, redact, redact_messages

# The forms the issue found missing (issue 13) must stay in the corpus.
REQUIRED_FAMILIES = {
    "pem_truncated", "azure_storage", "cookie", "set_cookie", "docker_config_auth",
    "bearer_bare", "google_oauth_access", "discord_bot", "telegram_bot", "mailgun", "shopify",
    "password_prose", "perplexity", "fal", "openai_short_after_key",
}


def test_corpus_covers_the_families_found_missing() -> None:
    families = {f.family for f in FORMS}
    assert families >= REQUIRED_FAMILIES
    assert len(FORMS) >= 100 and len(families) >= 70
    for form in FORMS:
        assert form.secrets and all(s in form.text for s in form.secrets), form
        assert all(k in form.text for k in form.keep), form


@pytest.mark.parametrize("form", FORMS, ids=[f"{f.family}-{i}" for i, f in enumerate(FORMS)])
def test_documented_secret_form_is_redacted_r7_1(form: Form) -> None:
    out = redact(form.text)
    assert [s for s in form.secrets if s in out] == [], out
    assert [k for k in form.keep if k not in out] == [], out
    assert REDACTED in out
    assert redact(out) == out  # idempotent
    assert contains_secret(form.text)


@pytest.mark.parametrize("form", FORMS, ids=[f"{f.family}-{i}" for i, f in enumerate(FORMS)])
def test_documented_secret_form_is_redacted_in_messages_r7_1(form: Form) -> None:
    """The same form as a tool result, a user turn and a JSON-encoded tool-call argument."""
    import json

    messages = [
        {"role": "user", "content": form.text},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": form.text})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"stdout": form.text})},
    ]
    wire = json.dumps(redact_messages(messages))
    leaked = [s for s in form.secrets if s in wire or json.dumps(s)[1:-1] in wire]
    assert leaked == []


@pytest.mark.parametrize(("kind", "text"), NEGATIVES,
                         ids=[f"{k}-{i}" for i, (k, _) in enumerate(NEGATIVES)])
def test_look_alike_is_not_redacted_r7_1(kind: str, text: str) -> None:
    assert redact(text) == text


# Text that opens a structure and never closes it (truncated tool output), then a newline, a
# space or a JSON ``\n`` escape: nothing after it may be hidden from the other rules.
_UNCLOSED = [
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAFAKEfakeFAKEfakeFAKEfake",
    "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: fake 1.0\n",
    "Cookie: a=b; ", 'Authorization: "', '{"auth": "', "<password>", "the password is ",
]


@pytest.mark.parametrize("head", _UNCLOSED)
@pytest.mark.parametrize("sep", ["\n", " ", "\\n"], ids=["newline", "space", "json-escape"])
def test_an_unclosed_structure_never_hides_a_later_secret_r7_1(head: str, sep: str) -> None:
    """Every planted secret of both corpora, after each unclosed opener (exhaustive, so a
    leak cannot hide behind a lucky random draw)."""
    from hermes_host.testing.secrets_corpus import secret_corpus

    pairs = secret_corpus() + [(f.text, s) for f in FORMS for s in f.secrets]
    leaked = [secret for text, secret in pairs if secret in redact(f"{head}{sep}{text}")]
    assert leaked == []


def test_truncated_pem_keeps_the_sshpass_line_for_the_other_rules_r7_1() -> None:
    """Issue 13: ``-----BEGIN PRIVATE KEY-----`` with no END swallowed what followed."""
    text = ("-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCFAKEfakeFAKE\n"
            "sshpass -p 'FAKEhunter2-sshpw' ssh deploy@host uptime")
    out = redact(text)
    assert "MIIEvAIBADANBgkqhkiG9w0BAQEFAASC" not in out
    assert "FAKEhunter2-sshpw" not in out
    assert out.endswith("sshpass -p '[REDACTED]' ssh deploy@host uptime")
