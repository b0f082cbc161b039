"""Self-identifying tokens: formats that say what they are wherever they stand (``sk-ant-``,
``ghp_``, ``AKIA``, JWTs, PEM private-key blocks, … — docs/redaction.md lists them all), each
removed whole (R-7.1)."""

from __future__ import annotations

import base64
import re

from hermes_host.redact.values import _WORDISH, REDACTED, _looks_random, _Sub

# A PEM body line: base64 (RFC 7468 §2), or an RFC 1421 / RFC 4880 armor header.  Lines are
# separated by real newlines, JSON ``\\n`` escapes or (collapsed output) spaces.
_PEM_SEP = r"(?:[ \t\r\n]|\\[nr])"
_PEM_LINE = (
    r"(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash):[^\n\\]{1,120}"
    r"|[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}|=[A-Za-z0-9+/]{4})"
)
_PEM_RE = re.compile(
    r"(-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?)-----)"
    r"(?:(?P<body>.{0,20000}?)(?P<end>-----END (?P=kind)-----)"
    # No END marker (truncated output): only the key-shaped lines that follow, so a secret
    # written after the cut (``sshpass -p …``) is left for the other rules to find.
    # A line ends where a line, a quoted string or the text ends: one running on into
    # ``.word`` (the next JWT segment) or ``[REDACTED]`` (``NAME=`` after a redaction) is not
    # a key line — the second keeps redact() idempotent.
    rf"|(?P<tail>(?:{_PEM_SEP}+{_PEM_LINE}(?=$|[\s\"'`,;)\]}}<>\\]))+))",
    re.DOTALL,
)


def _sub_pem(m: re.Match[str]) -> str:
    body = m.group("body") if m.group("end") else m.group("tail")
    if not (body or "").strip() or (body or "").strip() == REDACTED:
        return m.group(0)  # nothing (left) to hide: keeps redact() idempotent
    return f"{m.group(1)}{REDACTED}{m.group('end') or ''}"


# A PEM private key encoded in base64 as a whole (kubeconfig ``client-key-data``, a
# Kubernetes Secret's ``tls.key``, Helm values): ``-----BEGIN`` encodes to ``LS0tLS1CRUdJTi``
# at any base64 alignment that starts the value.  The value (wrapped lines included) goes
# when its decoded head is a private-key header — a base64 certificate or public key stays.
_B64_PEM_RE = re.compile(
    r"LS0tLS1CRUdJTi(?:[A-Za-z0-9+/]|(?:\r?\n|\\n)(?=[A-Za-z0-9+/]))+={0,2}"
)
_B64_PEM_HEAD = 96  # base64 characters enough to decode ``-----BEGIN … PRIVATE KEY-----``


def _sub_b64_pem(m: re.Match[str]) -> str:
    head = re.sub(r"\\n|\s", "", m.group(0))[:_B64_PEM_HEAD]
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head).decode("ascii", "replace")
    except ValueError:
        return m.group(0)
    return REDACTED if "PRIVATE KEY" in decoded else m.group(0)


# Literal-first patterns (no leading ``\b``) let the regex engine scan for the prefix fast;
# the left word boundary is checked in the callback instead.
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], bool, tuple[str, ...] | re.Pattern[str]]] = [
    # (pattern, needs a random-looking body, literal substrings one of which must occur — or,
    # for a pattern without a literal prefix, a literal-first regex that must match)
    (re.compile(r"sk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}"), False, ("sk-ant-",)),
    (re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}"), True, ("sk-ant-",)),
    (re.compile(r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"), True, ("sk-",)),
    (re.compile(r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{19,}"), True, ("sk-",)),
    (re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}\b"), False,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), False, ("github_pat_",)),
    (re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA)[A-Z0-9]{16}\b"), False,
     ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA")),
    (re.compile(r"AIza[0-9A-Za-z_\-]{30,45}(?![0-9A-Za-z_\-])"), False, ("AIza",)),
    (re.compile(r"xox[abposr]-[A-Za-z0-9][A-Za-z0-9\-]{9,}"), True, ("xox",)),
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"), False,
     ("hooks.slack.com",)),
    (re.compile(r"hf_[A-Za-z0-9]{30,}\b"), False, ("hf_",)),
    (re.compile(r"glpat-[A-Za-z0-9_\-]{20,}"), False, ("glpat-",)),
    (re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"), False, ("k_live_", "k_test_")),
    (re.compile(r"whsec_[A-Za-z0-9+/=]{20,}"), False, ("whsec_",)),
    (re.compile(r"npm_[A-Za-z0-9]{32,40}\b"), False, ("npm_",)),
    (re.compile(r"pypi-AgE[A-Za-z0-9_\-]{20,}"), False, ("pypi-AgE",)),
    (re.compile(r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}"), False, ("SG.",)),
    (re.compile(r"dop_v1_[a-f0-9]{64}"), False, ("dop_v1_",)),
    (re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), False,
     ("eyJ",)),
    # --- further self-identifying formats (written from each vendor's token documentation;
    # the families follow the rule sets of gitleaks, trufflehog and detect-secrets)
    # LLM and ML providers
    (re.compile(r"pplx-[A-Za-z0-9]{32,}"), False, ("pplx-",)),
    (re.compile(r"fal_[A-Za-z0-9_\-]{20,}"), True, ("fal_",)),
    (re.compile(r"gsk_[A-Za-z0-9]{32,}"), False, ("gsk_",)),
    (re.compile(r"xai-[A-Za-z0-9]{32,}"), False, ("xai-",)),
    (re.compile(r"r8_[A-Za-z0-9]{30,}"), True, ("r8_",)),
    (re.compile(r"api_org_[A-Za-z]{30,}\b"), False, ("api_org_",)),
    # Google: OAuth access tokens, OAuth client secrets, FCM server keys
    (re.compile(r"ya29\.[A-Za-z0-9_\-]{20,}"), False, ("ya29.",)),
    (re.compile(r"GOCSPX-[A-Za-z0-9_\-]{20,}"), False, ("GOCSPX-",)),
    (re.compile(r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{60,}"), False, (":APA91b",)),
    # Microsoft Entra client secrets: 3 chars, a digit, ``Q~``, 31-34 chars
    (re.compile(r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"), False,
     ("Q~",)),
    # forges, registries, CI, infrastructure
    (re.compile(r"gl(?:dt|rt|ptt|soat|cbt|ft|imt|agent|oas|ffct)-[A-Za-z0-9_\-]{20,}"), True,
     ("gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-",
      "glffct-")),
    (re.compile(r"GR1348941[A-Za-z0-9_\-]{20,}"), False, ("GR1348941",)),
    (re.compile(r"rubygems_[a-f0-9]{40,56}\b"), False, ("rubygems_",)),
    (re.compile(r"hv[sb]\.[A-Za-z0-9_\-]{90,}"), False, ("hvs.", "hvb.")),
    (re.compile(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}"), False,
     re.compile(r"\.atlasv1\.")),
    (re.compile(r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,}"),
     False, ("dp.",)),
    (re.compile(r"pul-[a-f0-9]{36,44}\b"), False, ("pul-",)),
    (re.compile(r"dapi[a-f0-9]{28,40}(?:-\d)?\b"), False, ("dapi",)),
    (re.compile(r"do[opr]_v1_[a-f0-9]{64}\b"), False, ("_v1_",)),
    (re.compile(r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|glc_[A-Za-z0-9+/]{32,}={0,3}"), False,
     ("glsa_", "glc_")),
    (re.compile(r"sntry[us]_[A-Za-z0-9+/=_]{40,}"), False, ("sntry",)),
    (re.compile(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), False, ("PMAK-",)),
    (re.compile(r"lin_(?:api|oauth)_[A-Za-z0-9]{32,48}\b"), False, ("lin_",)),
    (re.compile(r"ntn_[0-9]{8,14}[A-Za-z0-9]{28,40}\b"), False, ("ntn_",)),
    (re.compile(r"ATATT3[A-Za-z0-9_\-=]{100,}"), False, ("ATATT3",)),
    (re.compile(r"ops_eyJ[A-Za-z0-9+/=]{100,}"), False, ("ops_eyJ",)),
    (re.compile(r"AGE-SECRET-KEY-1[0-9A-Z]{58}\b"), False, ("AGE-SECRET-KEY-1",)),
    (re.compile(r"tskey-[a-z]+-[A-Za-z0-9]+-[A-Za-z0-9]{20,}"), False, ("tskey-",)),
    (re.compile(r"sbp_[a-f0-9]{36,44}\b"), False, ("sbp_",)),
    (re.compile(r"HRKU-AA[A-Za-z0-9_\-]{50,66}"), False, ("HRKU-AA",)),
    (re.compile(r"NR(?:AK|II)-[A-Za-z0-9]{24,32}\b"), False, ("NRAK-", "NRII-")),
    (re.compile(r"LTAI[A-Za-z0-9]{20}\b"), True, ("LTAI",)),
    (re.compile(r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{15,}"), False, ("sk.eyJ",)),
    # chat and messaging
    (re.compile(r"xapp-\d-[A-Z0-9]+-\d+-[A-Za-z0-9]+"), False, ("xapp-",)),
    (re.compile(r"xox[e]-[A-Za-z0-9][A-Za-z0-9\-]{9,}"), True, ("xoxe-",)),
    # Discord bot tokens: base64 user id . 6-char timestamp . HMAC
    (re.compile(r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"
                r"(?![A-Za-z0-9_\-])"), True,
     re.compile(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}")),
    (re.compile(r"(?P<pre>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/)"
                r"(?P<secret>[A-Za-z0-9_\-]{30,})"), False, ("/api/webhooks/",)),
    # Telegram bot tokens: ``<bot id>:<35 chars>`` (ids of 5 to 15+ digits; the secret's
    # length a plausible range around 35), bare, as ``bot<id>:<secret>`` or in
    # ``api.telegram.org/bot<token>/``
    (re.compile(r"\d{5,16}:[A-Za-z0-9_\-]{30,45}(?![A-Za-z0-9_\-])"), True,
     re.compile(r"\d:[A-Za-z0-9_\-]{30}")),
    (re.compile(r"SK[0-9a-fA-F]{30,34}\b"), False, ("SK",)),
    # e-mail services
    # Mailgun ``key-`` + 32: hex in practice, any alphanumerics in its documentation's example
    (re.compile(r"(?:pub)?key-[0-9a-zA-Z]{32}\b"), True, ("key-",)),
    (re.compile(r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b"), False,
     re.compile(r"-[0-9a-f]{8}-[0-9a-f]{8}\b")),
    (re.compile(r"[0-9a-f]{32}-us\d{1,2}\b"), False, re.compile(r"-us\d")),
    (re.compile(r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b"), False, ("xkeysib-",)),
    # commerce and payments
    (re.compile(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{28,36}\b"), False, ("shp",)),
    (re.compile(r"shippo_(?:live|test)_[a-fA-F0-9]{36,44}\b"), False, ("shippo_",)),
    (re.compile(r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"), False, ("sq0",)),
    (re.compile(r"EAAA[A-Za-z0-9_\-]{40,}"), True, ("EAAA",)),
    # social: Meta access tokens, X/Twitter app-only bearer tokens
    (re.compile(r"EAA[CGM][A-Za-z0-9]{80,}"), True, ("EAAC", "EAAG", "EAAM")),
    (re.compile(r"A{20,}[A-Za-z0-9]{8,}%[A-Za-z0-9%]{20,}"), False, ("AAAAAAAAAAAAAAAAAAAA",)),
    (re.compile(r"_gitlab_session=(?P<secret>[0-9a-f]{32})\b"), False, ("_gitlab_session=",)),
]


def _token_sub(needs_random: bool) -> _Sub:
    def sub(m: re.Match[str]) -> str:
        if "secret" in m.re.groupindex:
            # The pattern checks its own boundaries and keeps its context (a URL's path).
            secret = m.group("secret")
            if needs_random and not _looks_random(secret):
                return m.group(0)
            s, e = m.span("secret")
            return m.string[m.start():s] + REDACTED + m.string[e:m.end()]
        start = m.start()
        if (start and m.string[start - 1] in _WORDISH and not m.group(0).startswith("https")
                and not (start > 1 and m.string[start - 2] == "\\")  # JSON ``\n`` escape
                and not m.string.endswith("bot", 0, start)):  # bot<id>:<secret>, …/bot<token>
            return m.group(0)  # inside a longer word: ``my-sk-...``, ``xghp_...``
        if start and m.string[start - 1] == ":" and m.group(0)[0].isdigit():
            return m.group(0)  # ``12:34:…``: part of a longer colon-separated value
        if needs_random and not _looks_random(m.group(0)):
            return m.group(0)
        return REDACTED

    return sub
