"""The secret scanner on texts that have tripped it before."""

from __future__ import annotations

import pytest

from contextfuse.kb.secrets import redact


@pytest.mark.timeout(5)
def test_text_whose_lowercase_is_longer_is_scanned_and_redacted():
    # "İ".lower() is two code points: indices of the lowered text must not drift.
    text = "İstanbul İzmir " * 50 + '\napi_key = "k9Fq2ZxW8pLm4RtY7vBn3HsJ"\nİ\n'
    result = redact(text)
    assert "k9Fq2ZxW8pLm4RtY7vBn3HsJ" not in result.text
    assert result.text.count("\n") == text.count("\n")


@pytest.mark.timeout(5)
def test_a_key_block_without_an_end_line_terminates():
    text = "-----BEGIN RSA PRIVATE KEY-----\n" + "-----begin\n" * 3
    assert redact(text).text.count("\n") == text.count("\n")


# ---- real secrets never pass; ordinary code is never altered -----------------------------

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc8x"


@pytest.mark.parametrize(
    "text",
    [
        '"Tokenizer": "contextfuse.tokenizer",',
        "token: 'invalid:token'",
        'TOKEN_TYPE = "bearer_token_for_tests"',
        'password_field = "django.contrib.auth.hashers.PBKDF2PasswordHasher"',
        'api_key = "${API_KEY_FROM_ENVIRONMENT}"',
        'secret = "correct-horse-battery-staple-plain"',
    ],
)
def test_ordinary_code_is_left_unchanged(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f'GITHUB = "{GITHUB_TOKEN}"', GITHUB_TOKEN),
        (f"stripe.api_key = '{STRIPE_KEY}'", STRIPE_KEY),
        ('SECRET_KEY = "k3J9sP0qLm2Xv8Rt5Yw1Zb7N"', "k3J9sP0qLm2Xv8Rt5Yw1Zb7N"),
        ("DATABASE_URL = 'postgres://app:s3cr3tPassw0rd@db.internal:5432/app'", "s3cr3tPassw0rd"),
    ],
)
def test_real_secrets_are_redacted_in_code(text: str, secret: str) -> None:
    assert secret not in redact(text, "settings.py").text


def test_unquoted_passwords_in_configuration_files_are_redacted() -> None:
    text = "[database]\nuser = app\npassword = hunter2xy\n"
    found = redact(text, "deploy/app.ini")
    assert "hunter2xy" not in found.text and "user = app" in found.text
    assert found.counts["password"] == 1


def test_placeholders_in_configuration_files_are_kept() -> None:
    text = "password = ${DB_PASSWORD}\ntoken: changeme\n"
    assert redact(text, "config.yaml").text == text


def test_a_database_url_keeps_its_user_and_host_readable() -> None:
    found = redact("url = 'mysql://root:Pa55w0rd9@localhost/db'").text
    assert "mysql://root:[REDACTED:url-password]@localhost/db" in found
