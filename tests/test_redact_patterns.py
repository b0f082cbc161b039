"""Redaction rules, family by family, and what must survive untouched (R-7.1, R-6.11)."""

from __future__ import annotations

import copy
import json

import pytest

from hermes_host.redact import (
    REDACTED,
    contains_secret,
    redact,
    redact_counted,
    redact_messages,
    redact_value,
)

# (text, secret that must disappear, text that must remain)
SECRET_CASES = [
    ("export ANTHROPIC_API_KEY=sk-ant-api03-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78-xyzAA",
     "Ab12Cd34Ef56Gh78Ij90", "export ANTHROPIC_API_KEY="),
    ("key: sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe_dc-ba98765", "Zx9Yw8Vu7Ts6", "key:"),
    ("OPENAI_API_KEY=sk-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm3Nn4Oo5Pp6",
     "Aa1Bb2Cc3Dd4", "OPENAI_API_KEY="),
    ("token ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R ok", "1a2B3c4D5e6F7g8H9i0J", "token "),
    ("GH_TOKEN=gho_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "Q1w2E3r4T5y6", "GH_TOKEN="),
    ("ghs_Z9x8C7v6B5n4M3l2K1j0H9g8F7d6S5a4Q3w2 ghu_A1s2D3f4G5h6J7k8L9z0X1c2V3b4N5m6Q7w8",
     "Z9x8C7v6B5n4", ""),
    ("pat github_pat_11ABCDEFG0123456789abc_" + "x" * 20 + "Y9z8" * 10, "11ABCDEFG0123456789",
     "pat "),
    ("aws_access_key_id = AKIAQ7X2M4N6P8R0T2V4", "AKIAQ7X2M4N6P8R0T2V4", "aws_access_key_id = "),
    ("sts gave ASIAZ2Y4X6W8V0U2T4S6 back", "ASIAZ2Y4X6W8V0U2T4S6", "sts gave "),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE12",
     "wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = "),
    ("maps key AIzaSyB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R", "AIzaSyB1c2D3e4F5g6H7", "maps key "),
    ("SLACK=xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp",
     "SLACK="),
    ("xoxp-1234567890-0987654321-1122334455-0a1b2c3d4e5f60718293a4b5c6d7e8f9",
     "0a1b2c3d4e5f6071", ""),
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOp", "HF_TOKEN="),
    ("git clone with glpat-Xy12Zw34Vu56Ts78Rq90 done", "glpat-Xy12Zw34Vu56Ts78Rq90", "git clone"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc and rk_live_9Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk",
     "4eC39HqLyjWDarjtT1zdp7dc", "stripe "),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
     "dozjgNryP4J3jVmNHl0w5N", "jwt "),
    ('curl -H "Authorization: Bearer abc.DEF-123_ghi456jkl" https://x.test',
     "abc.DEF-123_ghi456jkl", "Authorization: Bearer "),
    ("Authorization: Basic dXNlcjpodW50ZXIyMjIy", "dXNlcjpodW50ZXIyMjIy", "Authorization: Basic "),
    ("authorization: token 0123456789abcdef0123456789abcdef", "0123456789abcdef01",
     "authorization: token "),
    ("curl -H 'x-api-key: k3y-Value-1234567890' https://api.test", "k3y-Value-1234567890",
     "x-api-key: "),
    ("postgres://admin:S3cr3t!pw@db.internal:5432/app", "S3cr3t!pw",
     "postgres://admin:[REDACTED]@db.internal:5432/app"),
    ("mongodb+srv://svc:Mongo-Pass-99@cluster0.x.mongodb.net/test", "Mongo-Pass-99",
     "mongodb+srv://svc:"),
    ("REDIS_URL=redis://:r3disPass@cache:6379/0", "r3disPass", "redis://:[REDACTED]@cache"),
    ("amqp://guest:Rabbit123@mq:5672/vhost", "Rabbit123", "amqp://guest:"),
    ("mysql://root:My5ql-root@127.0.0.1/shop", "My5ql-root", "mysql://root:"),
    ("curl -u deploy:Dep10y-Pass https://ci.test", "Dep10y-Pass", "curl -u deploy:"),
    ("DB_PASSWORD=postgres", "postgres", "DB_PASSWORD="),
    ("export SECRET_KEY='django-insecure-9f8e7d'", "django-insecure-9f8e7d", "SECRET_KEY="),
    ('{"api_key": "abcd1234efgh5678", "model": "x"}', "abcd1234efgh5678", '"model": "x"'),
    ('{\\"password\\": \\"hunter2hunter2\\"}', "hunter2hunter2", '\\"password\\": \\"'),
    ("db:\n  password: Winter2024!\n  host: localhost", "Winter2024!", "host: localhost"),
    ("client_secret: 'Cl1entS3cret-value'", "Cl1entS3cret-value", "client_secret:"),
    ("deploy --token abcDEF123456 --region eu", "abcDEF123456", "--region eu"),
    ("https://api.test/v1?api_key=Q1w2e3r4t5y6u7&format=json", "Q1w2e3r4t5y6u7", "&format=json"),
    ("mysql -u root -pR00tPass! shop < dump.sql", "R00tPass!", "mysql -u root -p"),
    ("sshpass -p 'hunter22' ssh deploy@host", "hunter22", "sshpass -p"),
    ("echo x | docker login -u bot -p Dock3rPw registry.test", "Dock3rPw", "registry.test"),
    ("machine api.heroku.com login me@x.test password 0a1b2c3d-netrc", "0a1b2c3d-netrc",
     "machine api.heroku.com login me@x.test password "),
    ("SENDGRID=SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
     "SG.abcdefghijklmnopqrstuv", "SENDGRID="),
    ("DO_TOKEN=dop_v1_" + "0123456789abcdef" * 4, "0123456789abcdef" * 4, "DO_TOKEN="),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SECRET_CASES,
                         ids=[f"case{i}" for i in range(len(SECRET_CASES))])
def test_secret_value_removed_and_context_kept_r7_1(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
    assert kept in out
    assert contains_secret(text)


def test_pem_private_key_block_is_emptied_r7_1() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq2w3e4r5t6y7u8i9o0p1a2s3d4"
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter"
    out = redact(text)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw" not in out
    assert "q2w3e4r5t6y7u8i9o0p1" not in out
    assert "-----BEGIN RSA PRIVATE KEY-----" in out and "-----END RSA PRIVATE KEY-----" in out
    assert out.startswith("before\n") and out.endswith("\nafter")


def test_truncated_pem_block_is_removed_to_the_end_r7_1() -> None:
    out = redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA")
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA" not in out


ORDINARY = [
    "token_count = 0",
    "password_field = forms.CharField(max_length=64)",
    "pip install sk-learn scikit-learn",
    "max_tokens = 1000",
    "MAX_TOKENS=4096",
    "Tokens: 7,373 sent, 764 received. Cost: $0.03 request",
    "password = password",
    "password = getpass()",
    "api_key = os.environ['ANTHROPIC_API_KEY']",
    "SECRET_KEY = settings.SECRET_KEY",
    "token = tokenizer.encode(text)",
    'eos_token = "</s>"',
    'pad_token = "[PAD]"',
    'cache_key = "user:1"',
    "sort_key=lambda x: x[0]",
    "git@github.com:foo/bar.git",
    "https://user@example.com/path",
    "http://127.0.0.1:8000/api",
    "export PWD=/home/dev/project",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "API_KEY=$ANTHROPIC_API_KEY",
    "password: <your-password>",
    "password: !vault |",
    "The authorization: header is required for every request.",
    "hf_hub_download(repo_id='gpt2', filename='config.json')",
    "token = Base.url_encode64(:crypto.strong_rand_bytes(32), padding: false)",
    'TIMESTAMP="$(date -u +%Y-%m-%dT%H:%M:%SZ)"',
    "def check_password(self, raw_password): ...",
    "if secret is None: raise ValueError('missing')",
    "Authorization: Bearer [REDACTED]",
    "the sk-ant- prefix marks Anthropic keys",
    "mysql -u root -p shop",
    "docker login -u bot --password-stdin registry.test",
    "the machine learning login page asks for a password first",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_prose_survive_r7_1(text: str) -> None:
    assert redact(text) == text
    assert not contains_secret(text)


def test_redact_is_idempotent_and_counts_r7_1() -> None:
    text = "\n".join(t for t, _, _ in SECRET_CASES)
    once, n = redact_counted(text)
    assert n >= len(SECRET_CASES)
    assert redact(once) == once
    assert redact_counted(once)[1] == once.count(REDACTED)


def test_redact_rejects_non_text_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="expects str"):
        redact(b"bytes")  # type: ignore[arg-type]


def test_redact_messages_deep_copies_and_keeps_structure_r7_1() -> None:
    secret = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
    messages = [
        {"role": "system", "content": "be careful"},
        {"role": "user", "content": [
            {"type": "text", "text": f"my token is {secret}"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "bash_with_token_access",
                         "arguments": json.dumps({"command": f"export GH_TOKEN={secret}"})},
        }]},
        {"role": "tool", "tool_call_id": "call_1", "name": "bash_with_token_access",
         "content": f"GH_TOKEN={secret}", "_meta": {"x": secret}},
    ]
    original = copy.deepcopy(messages)
    out = redact_messages(messages)
    assert messages == original  # input untouched
    assert secret not in json.dumps([{k: v for k, v in m.items() if k != "_meta"} for m in out])
    assert out[1]["content"][1] == messages[1]["content"][1]  # image part untouched
    call = out[2]["tool_calls"][0]
    assert call["id"] == "call_1" and call["function"]["name"] == "bash_with_token_access"
    assert json.loads(call["function"]["arguments"]) == {"command": f"export GH_TOKEN={REDACTED}"}
    assert out[3]["tool_call_id"] == "call_1" and out[3]["name"] == "bash_with_token_access"
    assert out[0] == messages[0]


def test_redact_value_walks_json_objects() -> None:
    value = {"a": ["AKIAQ7X2M4N6P8R0T2V4", 3, None], "b": {"c": "DB_PASSWORD=x9y8z7w6"}}
    out = redact_value(value)
    assert out == {"a": [REDACTED, 3, None], "b": {"c": f"DB_PASSWORD={REDACTED}"}}


def test_an_empty_assignment_does_not_swallow_the_next_line() -> None:
    """``token=`` at the end of a line took the next line's ``CLIENT_SECRET=`` as its value
    (the ``=`` matched across the newline), and the quoted secret after it went out whole —
    found by test_llm_properties' planted-secret property in a fresh CI run."""
    out = redact("token=\nCLIENT_SECRET='Sblo305%RqojZwP13'")
    assert "Sblo305%RqojZwP13" not in out and out.startswith("token=\nCLIENT_SECRET=")


@pytest.mark.parametrize("header", ["Authorization:token", "Authorization: Bearer",
                                    "X-Api-Key:"])
def test_a_header_with_no_value_does_not_swallow_the_next_line(header: str) -> None:
    """The same leak through an HTTP header: its value never continues on the next line."""
    out = redact(header + "\nCLIENT_SECRET='Sblo305%RqojZwP13'")
    assert "Sblo305%RqojZwP13" not in out
