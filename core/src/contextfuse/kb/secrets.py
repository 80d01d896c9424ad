"""Secret detection: files that are secrets by name, and secrets inside text.

A secret never reaches the index verbatim: files such as ``.env`` or private keys are
excluded by name, and tokens or keys found in other files are replaced by
``[REDACTED:<kind>]`` (newlines kept, so line numbers do not move).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from fnmatch import fnmatchcase

__all__ = ["Redaction", "redact", "secret_file_reason"]

# Names (matched against the file's base name, lower-cased) that hold secrets by convention.
_SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "*.ppk",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "service-account*.json",
    "*.tfstate",
    "*.tfvars",
    ".envrc",
    "*.envrc",
    ".htpasswd",
    ".boto",
    ".s3cfg",
    ".vault-token",
    ".dockercfg",
    "kubeconfig",
    "*.kdbx",
)
# Templates of secret files document the variables, not their values; they are still scanned.
_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults")


def secret_file_reason(path: str) -> str | None:
    """Why the file at ``path`` (repository-relative) must not be read, or None."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(_TEMPLATE_SUFFIXES):
        return None
    for pattern in _SECRET_NAMES:
        if fnmatchcase(name, pattern):
            return f"secret file ({pattern})"
    return None


# Tokens and keys with a recognisable shape, each found from a literal hint (lower-cased).
_TOKENS = {
    # To its END line, or to the end of the text when cut short (a diff read in part).
    "private-key": (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ("-----begin",),
    ),
    "webhook-url": (
        r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{8,}"
        r"|(?:discord|discordapp)\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{8,}"
        r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{8,})",
        ("hooks.slack.com", "/api/webhooks/", "webhook.office.com"),
    ),
    "aws-access-key": (
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA)[0-9A-Z]{16}\b",
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva"),
    ),
    "github-token": (
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    "gitlab-token": (r"\bglpat-[A-Za-z0-9_\-]{20,}\b", ("glpat-",)),
    "slack-token": (r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", ("xox",)),
    "google-api-key": (r"\bAIza[0-9A-Za-z_\-]{35}\b", ("aiza",)),
    "stripe-key": (r"\b[rs]k_live_[0-9A-Za-z]{20,}\b", ("k_live_",)),
    "openai-key": (r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{32,}\b", ("sk-",)),
    "jwt": (r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", ("eyj",)),
}
_TOKEN_SCANNER = re.compile(
    "|".join(f"(?P<{kind.replace('-', '_')}>{pattern})" for kind, (pattern, _) in _TOKENS.items())
)
_TOKEN_HINTS = tuple(hint for _, hints in _TOKENS.values() for hint in hints)
# ``<name>key = "value"``: a name that ends in a secret word, a quoted value that looks
# random. The expression starts at the keyword: a leading ``[\w.-]*`` would be retried at
# every position. The name must end there (``Tokenizer``, ``token_type`` are not secrets).
_KEYWORDS = ("key", "secret", "token", "passw", "pwd", "auth")
_SECRET_NAME = (
    r"(?i:api[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|(?:access|auth|refresh|bearer)?"
    r"[_-]?token|passw(?:or)?d|pwd|access[_-]?key|private[_-]?key|auth[_-]?key)(?![\w.-])"
)
_ASSIGNMENT = re.compile(
    _SECRET_NAME + r"['\"]?\s*(?::=|=>|[:=])\s*(?:[bru]{0,2})['\"](?P<value>[^'\"\s]{16,256})['\"]"
)
# The same in configuration files, where values go unquoted: ``password = hunter2``.
_CONFIG_ASSIGNMENT = re.compile(
    r"^[ \t]*[\w.-]*?" + _SECRET_NAME + r"[ \t]*[:=][ \t]*(?P<value>[^\s'\"#;]{4,256})[ \t]*$",
    re.MULTILINE,
)
_CONFIG_SUFFIXES = (".ini", ".cfg", ".conf", ".properties", ".yaml", ".yml", ".env")
# An environment-style name (capitals) ending in a secret word, and its value, in any file:
# ``export API_TOKEN=...``, ``PGPASSWORD=... psql``, compose's ``- POSTGRES_PASSWORD=...``.
# Such a name says the value is a secret, random-looking or not. A name starts only where a
# run of capitals starts (no retry inside a long run), and an unquoted value must end where
# a shell word ends, so ``SECRET_KEY = os.environ[...]`` or ``get_token()`` is code, kept.
_ENV_SECRET_NAME = (
    r"(?<![A-Za-z0-9_])(?:[A-Z][A-Z0-9_]*)?(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN|"
    r"API_?KEY|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY|AUTH_KEY|MASTER_KEY|SIGNING_KEY|"
    r"ENCRYPTION_KEY|CREDENTIALS?)[0-9]*(?![A-Za-z0-9_])"
)
_SECRET_VALUE = (
    r"(?:(?P<quote>['\"])(?P<quoted>[^'\"\s]{4,256})(?P=quote)"
    r"|(?P<bare>[^\s'\"`;#,(){}\[\]<>]{4,256})(?=[\s;,'\"]|$))"
)
_ENV_ASSIGNMENT = re.compile(
    _ENV_SECRET_NAME + r"['\"]?[ \t]*(?:=|:[ \t])[ \t]*" + _SECRET_VALUE, re.MULTILINE
)
# Kubernetes and similar: ``- name: DB_PASSWORD`` with ``value: ...`` on the next line.
_NAMED_VALUE = re.compile(
    r"name:[ \t]*['\"]?" + _ENV_SECRET_NAME + r"['\"]?[ \t]*\n[ \t]*value:[ \t]*" + _SECRET_VALUE,
    re.MULTILINE,
)
# ``key=value`` connection strings (libpq, ODBC, JDBC, command-line flags):
# ``password=...;``, ``Pwd=...``, ``--password=...``. The value must end where such a
# string's value ends: ``password=password_var,`` in a call is code.
_PAIR_PASSWORD = re.compile(
    r"(?i)(?<![\w.])(?:password|passwd|pwd)[ \t]*=[ \t]*"
    r"(?P<bare>[^\s'\"`;#,(){}\[\]<>]{4,256})(?=[\s;'\"]|$)"
)
# ``scheme://user:password@host``: the password goes, the user and host stay readable.
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@'\"]+:(?P<value>[^\s@/'\"]+)@")
_PLACEHOLDER = re.compile(
    r"^(?:[$%<{*(\[].*|.*[}>)\]]|x+|\*+|password|passwd|pass|secret|changeme|none|null|"
    r"true|false|example|test|dummy|redacted)$",
    re.IGNORECASE,
)
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_MIN_ENTROPY = 3.5  # bits per character; real keys score 4-6, words and paths below 3.5


class Redaction:
    """What :func:`redact` found: the redacted text and how many secrets of each kind."""

    __slots__ = ("counts", "text")

    def __init__(self, text: str, counts: Counter[str]) -> None:
        self.text = text
        self.counts = counts

    @property
    def total(self) -> int:
        """Number of secrets redacted."""
        return sum(self.counts.values())


def _entropy(value: str) -> float:
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


def _looks_random(value: str) -> bool:
    """True for a value shaped like a generated key, not like a word, name or path."""
    if _PLACEHOLDER.match(value) or _DOTTED_NAME.match(value) or value.isalpha():
        return False
    # Generated keys mix in digits; a long value of letters alone must be very random.
    if not any(c.isdigit() for c in value) and (len(value) < 32 or _entropy(value) < 4.0):
        return False
    return _entropy(value) >= _MIN_ENTROPY


# ASCII-only lowering keeps every index of the text valid: str.lower() can change the length
# ("İ" becomes two code points), and the hints are ASCII anyway.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
#: The only characters beyond ASCII that ``str.lower`` turns into ASCII or into more than one
#: character (checked on every code point by the tests).
_LOWERED_OUT_OF_PLACE = ("\u0130", "\u212a")


def ascii_lowered(text: str) -> str:
    """``text`` with its ASCII letters lowered, every other character where it was.

    ``str.lower`` does that ten times faster for text beyond ASCII, lowering other letters
    too: harmless for finding ASCII hints, except where a letter becomes ASCII or grows.
    """
    if any(c in text for c in _LOWERED_OUT_OF_PLACE):
        return text.translate(_ASCII_LOWER)
    return text.lower()


def _spans(text: str, lowered: str, hints: tuple[str, ...]) -> list[tuple[int, int]]:
    """Merged ``(start, end)`` spans of the lines that contain a hint."""
    spans: list[tuple[int, int]] = []
    for hint in hints:
        index = lowered.find(hint)
        while index != -1:
            start = text.rfind("\n", 0, index) + 1
            stop = index
            if hint == "-----begin":  # a key block runs to its END line, or to the end
                end_marker = lowered.find("-----end", index)
                stop = end_marker if end_marker != -1 else len(text)
            end = text.find("\n", stop)
            end = len(text) if end == -1 else end
            spans.append((start, end))
            index = lowered.find(hint, max(end, index + 1))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _add_value(found: list[tuple[int, int, str]], match: re.Match[str], kind: str) -> None:
    """Record the value of an assignment (quoted or bare) unless it is a placeholder."""
    group = "quoted" if match.groupdict().get("quoted") else "bare"
    value = match.group(group)
    if value and not _PLACEHOLDER.match(value) and not _DOTTED_NAME.match(value):
        found.append((*match.span(group), kind))


def redact(text: str, path: str = "") -> Redaction:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``, keeping line breaks.

    ``path`` (repository-relative) tells configuration files, whose values go unquoted,
    from code.
    """
    lowered = ascii_lowered(text)
    found: list[tuple[int, int, str]] = []
    for start, end in _spans(text, lowered, _TOKEN_HINTS):
        for match in _TOKEN_SCANNER.finditer(text, start, end):
            found.append((*match.span(), (match.lastgroup or "").replace("_", "-")))
    config = path.lower().endswith(_CONFIG_SUFFIXES) or ".env." in path.lower()
    for start, end in _spans(text, lowered, _KEYWORDS):
        for match in _ASSIGNMENT.finditer(text, start, end):
            if _looks_random(match.group("value")):
                found.append((*match.span("value"), "assignment"))
        if config:
            for match in _CONFIG_ASSIGNMENT.finditer(text, start, end):
                if not _PLACEHOLDER.match(match.group("value")):
                    found.append((*match.span("value"), "password"))
        for match in _ENV_ASSIGNMENT.finditer(text, start, end):
            _add_value(found, match, "env-secret")
        for match in _PAIR_PASSWORD.finditer(text, start, end):
            _add_value(found, match, "password")
        following = text.find("\n", end + 1)  # the value line under ``name: X_PASSWORD``
        for match in _NAMED_VALUE.finditer(
            text, start, len(text) if following == -1 else following
        ):
            _add_value(found, match, "env-secret")
    for start, end in _spans(text, lowered, ("://",)):
        for match in _URL_PASSWORD.finditer(text, start, end):
            if not _PLACEHOLDER.match(match.group("value")):
                found.append((*match.span("value"), "url-password"))
    counts: Counter[str] = Counter()
    if not found:
        return Redaction(text, counts)
    pieces: list[str] = []
    last = 0
    for start, end, kind in sorted(found):
        if start < last:  # overlaps a span already redacted
            continue
        counts[kind] += 1
        pieces.append(text[last:start])
        pieces.append(f"[REDACTED:{kind}]" + "\n" * text.count("\n", start, end))
        last = end
    pieces.append(text[last:])
    return Redaction("".join(pieces), counts)
