"""A deterministic corpus of planted secrets, for proving that none reaches a summary.

:func:`secret_corpus` returns ``(text_with_secret, secret_value)`` pairs: random-looking
credentials (from a seeded RNG, so every run and every machine sees the same corpus) embedded
in the places real agent transcripts leak them — shell exports, ``.env`` lines, JSON and YAML
config, ``curl`` headers, database URLs, PEM blocks, Python code, tool output, JSON-escaped
tool-call arguments.  Tests plant these texts in transcripts and assert that ``secret_value``
appears in no summary, store summary row, log line or error message.

None of the values is a real credential.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["SecretCase", "secret_cases", "secret_corpus"]

DEFAULT_SEED = 20261202


class SecretCase(NamedTuple):
    """One planted secret: the ``text`` that contains it, the ``secret`` itself, and labels."""

    text: str
    secret: str
    family: str
    context: str


_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "_-"
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_B64 = _ALNUM + "+/"


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` random characters that contain at least one digit and one letter."""
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _password(rng: random.Random) -> str:
    """A strong password: mixed case, digits, one symbol (never a quote, ``@``, ``/``, ``:``)."""
    core = _rand(rng, _ALNUM, 14)
    return core[:7] + rng.choice("!#%^*_+-.~") + core[7:] + str(rng.randint(10, 99))


def _human_password(rng: random.Random) -> str:
    word = rng.choice(["Winter", "Falcon", "Orchid", "Marble", "Copper", "Harbor", "Velvet"])
    return f"{word}{rng.randint(1000, 9999)}{rng.choice('!#%*')}{rng.choice(_ALNUM)}"


def _jwt(rng: random.Random) -> str:
    def b64(obj: dict[str, object]) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    header = b64({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"})
    issued = rng.randint(1_600_000_000, 1_800_000_000)
    payload = b64({"sub": str(rng.randint(10**8, 10**9)), "iat": issued})
    return f"{header}.{payload}.{_rand(rng, _URLSAFE, 43)}"


# --------------------------------------------------------------------------------------------
# token families: name -> (generator, environment variable that usually holds it)

_TokenGen = Callable[[random.Random], str]

_TOKEN_FAMILIES: dict[str, tuple[_TokenGen, str]] = {
    "anthropic": (
        lambda r: "sk-ant-api03-" + _rand(r, _URLSAFE, 93) + "AA",
        "ANTHROPIC_API_KEY",
    ),
    "openai": (lambda r: "sk-" + _rand(r, _ALNUM, 48), "OPENAI_API_KEY"),
    "openai_project": (lambda r: "sk-proj-" + _rand(r, _URLSAFE, 100), "OPENAI_API_KEY"),
    "github_ghp": (lambda r: "ghp_" + _rand(r, _ALNUM, 36), "GITHUB_TOKEN"),
    "github_gho": (lambda r: "gho_" + _rand(r, _ALNUM, 36), "GH_TOKEN"),
    "github_ghs": (lambda r: "ghs_" + _rand(r, _ALNUM, 36), "GITHUB_TOKEN"),
    "github_ghu": (lambda r: "ghu_" + _rand(r, _ALNUM, 36), "GH_ENTERPRISE_TOKEN"),
    "github_pat": (
        lambda r: "github_pat_" + _rand(r, _ALNUM, 22) + "_" + _rand(r, _ALNUM, 59),
        "GITHUB_PAT",
    ),
    "aws_access_key_id": (lambda r: "AKIA" + _rand(r, _UPPER_DIGITS, 16), "AWS_ACCESS_KEY_ID"),
    "aws_session_key_id": (lambda r: "ASIA" + _rand(r, _UPPER_DIGITS, 16), "AWS_ACCESS_KEY_ID"),
    "google": (lambda r: "AIza" + _rand(r, _URLSAFE, 35), "GOOGLE_API_KEY"),
    "slack_bot": (
        lambda r: f"xoxb-{r.randint(10**11, 10**12)}-{r.randint(10**11, 10**12)}-"
        + _rand(r, _ALNUM, 24),
        "SLACK_BOT_TOKEN",
    ),
    "slack_user": (
        lambda r: f"xoxp-{r.randint(10**11, 10**12)}-{r.randint(10**11, 10**12)}-"
        f"{r.randint(10**11, 10**12)}-" + _rand(r, "abcdef0123456789", 32),
        "SLACK_USER_TOKEN",
    ),
    "huggingface": (lambda r: "hf_" + _rand(r, _ALNUM, 34), "HF_TOKEN"),
    "gitlab": (lambda r: "glpat-" + _rand(r, _URLSAFE, 20), "GITLAB_TOKEN"),
    "stripe_secret": (lambda r: "sk_live_" + _rand(r, _ALNUM, 24), "STRIPE_SECRET_KEY"),
    "stripe_restricted": (lambda r: "rk_live_" + _rand(r, _ALNUM, 24), "STRIPE_RESTRICTED_KEY"),
    "jwt": (_jwt, "SESSION_JWT"),
}

# contexts: name -> template with {var} (env var name), {low} (lower-case key) and {secret}
_TOKEN_CONTEXTS: dict[str, str] = {
    "shell_export": "$ export {var}={secret}\n$ python run.py --verbose",
    "dotenv": "# .env\nDEBUG=false\n{var}={secret}\nPORT=8000\n",
    "dotenv_quoted": '{var}="{secret}"',
    "json_config": '{{\n  "model": "gpt-4o",\n  "{low}": "{secret}",\n  "timeout": 30\n}}',
    "yaml_config": "provider:\n  name: default\n  {low}: {secret}\n  retries: 3\n",
    "python_code": 'client = Client(\n    {low}="{secret}",\n    timeout=30,\n)',
    "tool_output_env": "HOME=/home/dev\nPATH=/usr/bin:/bin\n{var}={secret}\nSHELL=/bin/bash",
    "log_line": "2026-12-01 09:14:03 INFO using credential {secret} for upstream calls",
    "prose": "Sure — I set the key to {secret} in your config; rotate it after the demo.",
    "tool_args_escaped": '{{"command": "echo \\"{var}={secret}\\" >> .env"}}',
}


def _token_cases(rng: random.Random) -> list[SecretCase]:
    cases: list[SecretCase] = []
    for family, (gen, var) in _TOKEN_FAMILIES.items():
        for context, template in _TOKEN_CONTEXTS.items():
            secret = gen(rng)
            text = template.format(var=var, low=var.lower(), secret=secret)
            cases.append(SecretCase(text, secret, family, context))
    return cases


def _pem_cases(rng: random.Random) -> list[SecretCase]:
    cases: list[SecretCase] = []
    kinds = ["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY",
             "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY"]
    for kind in kinds:
        lines = [_rand(rng, _B64, 64) for _ in range(rng.randint(4, 9))]
        lines.append(_rand(rng, _B64, 20) + "==")
        body = "\n".join(lines)
        block = f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"
        secret = lines[1]
        cases.append(SecretCase(f"$ cat ~/.ssh/id_key\n{block}\n$ ", secret, "pem", "file"))
        escaped = json.dumps({"private_key": block + "\n", "type": "service_account"})
        cases.append(SecretCase(escaped, lines[2], "pem", "json_service_account"))
        truncated = f"-----BEGIN {kind}-----\n" + "\n".join(lines[:3]) + "\n... (truncated)"
        cases.append(SecretCase(truncated, lines[0], "pem", "truncated_output"))
    return cases


def _header_cases(rng: random.Random) -> list[SecretCase]:
    cases: list[SecretCase] = []
    for i in range(4):
        bearer = _rand(rng, _URLSAFE, 40)
        token = _rand(rng, "abcdef0123456789", 40)
        basic = base64.b64encode(f"svc{i}:{_password(rng)}".encode()).decode()
        key = _rand(rng, _ALNUM, 40)
        host = rng.choice(["api.example.com", "internal.corp.test", "127.0.0.1:8080"])
        cases += [
            SecretCase(f'curl -s -H "Authorization: Bearer {bearer}" https://{host}/v1/items',
                       bearer, "authorization_bearer", "curl"),
            SecretCase(f"GET /v1/me HTTP/1.1\nHost: {host}\nAuthorization: token {token}\n",
                       token, "authorization_token", "http_request"),
            SecretCase(f'{{"headers": {{"Authorization": "Basic {basic}"}}}}', basic,
                       "authorization_basic", "json"),
            SecretCase(f"curl https://{host}/messages -H 'x-api-key: {key}' -d @body.json",
                       key, "x_api_key", "curl"),
            SecretCase(f'requests.get(url, headers={{"X-API-Key": "{key[::-1]}"}})',
                       key[::-1], "x_api_key", "python"),
        ]
    return cases


def _url_cases(rng: random.Random) -> list[SecretCase]:
    cases: list[SecretCase] = []
    schemes = [
        ("postgres", "DATABASE_URL", "5432/app"),
        ("postgresql+psycopg", "SQLALCHEMY_DATABASE_URI", "5432/analytics"),
        ("mysql", "MYSQL_URL", "3306/shop"),
        ("mongodb+srv", "MONGO_URI", "27017/test?retryWrites=true"),
        ("redis", "REDIS_URL", "6379/0"),
        ("amqp", "BROKER_URL", "5672/vhost"),
        ("https", "GIT_REMOTE", "443/org/repo.git"),
    ]
    for scheme, var, tail in schemes:
        for context in ("env", "yaml", "log"):
            password = _password(rng)
            user = "" if scheme == "redis" and context == "env" else rng.choice(
                ["admin", "app_user", "deploy", "svc-reader"])
            url = f"{scheme}://{user}:{password}@db-{rng.randint(1, 9)}.internal:{tail}"
            if context == "env":
                text = f"{var}={url}"
            elif context == "yaml":
                text = f"database:\n  url: {url}\n  pool_size: 5"
            else:
                text = f"[worker] connecting to {url} ... ok (12 ms)"
            cases.append(SecretCase(text, password, "url_userinfo", context))
    for _ in range(3):
        password = _password(rng)
        cases.append(SecretCase(f"curl -u deploy:{password} https://ci.example.com/api/build",
                                password, "curl_user", "curl"))
    return cases


def _assignment_cases(rng: random.Random) -> list[SecretCase]:
    names = ["DB_PASSWORD", "POSTGRES_PASSWORD", "SECRET_KEY", "API_TOKEN", "AUTH_TOKEN",
             "CLIENT_SECRET", "JWT_SECRET", "SMTP_PASSWD", "ENCRYPTION_KEY", "PRIVATE_KEY",
             "SERVICE_CREDENTIALS", "REDIS_PASS", "KEYSTORE_PASSPHRASE", "MYSQL_ROOT_PASSWORD"]
    cases: list[SecretCase] = []
    for name in names:
        low = name.lower()
        templates = {  # "@S@" marks where the secret goes
            "export": f"export {name}=@S@",
            "dotenv_single_quoted": f"{name}='@S@'",
            "json": '{"' + low + '": "@S@", "enabled": true}',
            "yaml": f"settings:\n  {low}: @S@\n  debug: false",
            "python_kwarg": f'connect(host="db", {low}="@S@")',
        }
        for context, template in templates.items():
            secret = _password(rng) if context != "yaml" else _human_password(rng)
            cases.append(SecretCase(template.replace("@S@", secret), secret, "assignment", context))
    for context in ("credentials_file", "export", "json"):
        secret = _rand(rng, _B64, 40)
        key_id = "AKIA" + _rand(rng, _UPPER_DIGITS, 16)
        text = {
            "credentials_file": f"[default]\naws_access_key_id = {key_id}\n"
            f"aws_secret_access_key = {secret}\nregion = eu-west-1",
            "export": f"export AWS_SECRET_ACCESS_KEY={secret}",
            "json": f'{{"AccessKeyId": "{key_id}", "SecretAccessKey": "{secret}"}}',
        }[context]
        cases.append(SecretCase(text, secret, "aws_secret", context))
        if key_id in text:
            cases.append(SecretCase(text, key_id, "aws_access_key_id", context))
    for template in ("mysql -h db -u root -p@S@ shop < dump.sql",
                     "sshpass -p '@S@' ssh deploy@10.0.0.5 uptime",
                     "echo ok | docker login -u ci-bot -p @S@ registry.example.com",
                     "machine api.example.com login ci@example.com password @S@"):
        secret = _password(rng)
        cases.append(SecretCase(template.replace("@S@", secret), secret, "cli_password",
                                template.split()[0]))
    for _ in range(3):
        sendgrid = f"SG.{_rand(rng, _URLSAFE, 22)}.{_rand(rng, _URLSAFE, 43)}"
        cases.append(SecretCase(f"SENDGRID_API_KEY={sendgrid}", sendgrid, "sendgrid", "dotenv"))
        digitalocean = "dop_v1_" + _rand(rng, "0123456789abcdef", 64)
        cases.append(SecretCase(f'doctl auth init -t "{digitalocean}"', digitalocean,
                                "digitalocean", "shell"))
    for flag in ("--password", "--token", "--api-key"):
        secret = _password(rng)
        cases.append(SecretCase(f"$ deploy-tool push {flag} {secret} --region eu", secret,
                                "cli_flag", "shell"))
    return cases


def secret_cases(seed: int = DEFAULT_SEED) -> list[SecretCase]:
    """Every planted secret with its family and context labels (deterministic for ``seed``)."""
    rng = random.Random(seed)
    cases = (
        _token_cases(rng)
        + _pem_cases(rng)
        + _header_cases(rng)
        + _url_cases(rng)
        + _assignment_cases(rng)
    )
    seen: set[str] = set()
    unique: list[SecretCase] = []
    for case in cases:
        if case.secret not in seen:
            seen.add(case.secret)
            unique.append(case)
    return unique


def secret_corpus(seed: int = DEFAULT_SEED) -> list[tuple[str, str]]:
    """``(text_with_secret, secret_value)`` pairs, ≥ 200 distinct secrets."""
    return [(c.text, c.secret) for c in secret_cases(seed)]
