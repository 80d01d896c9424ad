"""Secret detection: files that are secrets by name, and secrets inside text.

A secret never reaches the index verbatim: files such as ``.env`` or private keys are
excluded by name, and tokens or keys found in other files are replaced by
``[REDACTED:<kind>]`` (newlines kept, so line numbers do not move).
"""

from __future__ import annotations

import math
import re
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


# Each alternative is a named group; the group named ``v_<kind>`` (when present) is the span
# to redact, otherwise the whole match is.
_PATTERNS = {
    "private-key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
    "aws-access-key": r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA)[0-9A-Z]{16}\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    "gitlab-token": r"\bglpat-[A-Za-z0-9_\-]{20,}\b",
    "slack-token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
    "google-api-key": r"\bAIza[0-9A-Za-z_\-]{35}\b",
    "stripe-key": r"\b[rs]k_live_[0-9A-Za-z]{20,}\b",
    "openai-key": r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{32,}\b",
    "jwt": r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    # key = "value" where the key names a secret and the value looks random (entropy test).
    "assignment": r"(?i:[\w.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth[_-]?key)[\w.-]*)['\"]?\s*(?::=|=>|[:=])\s*"
    r"(?:[bru]{0,2})['\"](?P<v_assignment>[^'\"\s]{16,256})['\"]",
}
_SCANNER = re.compile(
    "|".join(
        f"(?P<{kind.replace('-', '_')}>{pattern})" for kind, pattern in _PATTERNS.items()
    )
)
# Cheap pre-check: every pattern contains one of these (case-insensitively).
_HINTS = (
    "private key", "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "gh", "glpat",
    "xox", "aiza", "k_live_", "sk-", "eyj", "key", "secret", "token", "passw", "auth",
)  # fmt: skip
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
    # Placeholders, template variables and dotted names are not secrets.
    if value.startswith(("{{", "${", "%(", "<")) or value.isalpha():
        return False
    return _entropy(value) >= _MIN_ENTROPY


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``, keeping line breaks."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _HINTS):
        return Redaction(text, Counter())
    counts: Counter[str] = Counter()
    pieces: list[str] = []
    last = 0
    for match in _SCANNER.finditer(text):
        group = match.lastgroup or ""
        kind = group.replace("_", "-")
        if kind == "assignment":
            start, end = match.span("v_assignment")
            if not _looks_random(match.group("v_assignment")):
                continue
        else:
            start, end = match.span()
        counts[kind] += 1
        pieces.append(text[last:start])
        pieces.append(f"[REDACTED:{kind}]" + "\n" * text.count("\n", start, end))
        last = end
    if not counts:
        return Redaction(text, counts)
    pieces.append(text[last:])
    return Redaction("".join(pieces), counts)
