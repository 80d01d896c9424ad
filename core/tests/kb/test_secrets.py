"""The secret scanner on texts that have tripped it before."""

from __future__ import annotations

import string

import pytest

from contextfuse.kb.secrets import ascii_lowered, redact, secret_file_reason


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


@pytest.mark.parametrize(
    ("path", "line", "secret"),
    [
        ("deploy.sh", "export API_TOKEN=tok9f8e7d6c5b4a392817", "tok9f8e7d6c5b4a392817"),
        ("run.sh", "PGPASSWORD=pg-Pass-1187 psql -h db", "pg-Pass-1187"),
        ("docker-compose.yml", "      - POSTGRES_PASSWORD=compose-pass-8841", "compose-pass-8841"),
        ("db.py", 'connect("host=db user=app password=s3cr3t-42")', "s3cr3t-42"),
        ("app.json", '"Server=db;User Id=sa;Password=mssql-6610;"', "mssql-6610"),
        ("notify.py", 'URL = "https://hooks.slack.com/services/T01/B02/xYz1234567"', "xYz1234567"),
    ],
)
def test_environment_and_connection_string_secrets_are_redacted(
    path: str, line: str, secret: str
) -> None:
    assert secret not in redact(line + "\n", path).text


def test_a_kubernetes_env_entry_value_is_redacted() -> None:
    text = (
        "env:\n  - name: REDIS_PASSWORD\n    value: k8s-redis-5521\n"
        "  - name: LEVEL\n    value: info\n"
    )
    redacted = redact(text, "k8s/deploy.yaml").text
    assert "k8s-redis-5521" not in redacted
    assert "value: info" in redacted


def test_a_private_key_cut_short_is_redacted_to_the_end() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzq4Fv1bX9t2mQ8pL0r\n"
    assert "MIIEpAIBAAKCAQEAzq4Fv1bX9t2mQ8pL0r" not in redact(text).text


@pytest.mark.parametrize(
    "line",
    [
        'SECRET_KEY = os.environ["SECRET_KEY"]',
        "API_TOKEN = get_token()",
        "conn = connect(password=password_value, user=user)",
        "PASSWORD_HASHERS = [",
        'export API_TOKEN="$API_TOKEN"',
        "TOKEN: str",
    ],
)
def test_code_that_reads_a_secret_is_not_redacted(line: str) -> None:
    assert redact(line + "\n", "settings.py").text == line + "\n"


def test_envrc_is_a_secret_file() -> None:
    assert secret_file_reason("project/.envrc") is not None


def test_lowering_for_hints_lowers_ascii_letters_only_and_keeps_every_index() -> None:
    # str.lower, used beyond ASCII, must give one character per character, ASCII only for
    # ASCII and the ASCII lowering there: true of every code point but the two set apart.
    ascii_lower = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
    for point in range(0x110000):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF or char in ("\u0130", "\u212a"):
            continue
        lowered = ascii_lowered(char + "Q")
        assert len(lowered) == 2 and lowered[1] == "q"
        assert lowered[0].isascii() == char.isascii()
        if char.isascii():
            assert lowered[0] == char.translate(ascii_lower)
    for odd in ("\u0130", "\u212a"):
        assert ascii_lowered(f"TOKEN {odd} é") == f"token {odd} é"


def test_a_secret_beside_letters_that_lower_out_of_place_is_redacted() -> None:
    for odd in ("\u0130", "\u212a"):
        text = f"note = '{odd}'\nAPI_KEY = 'Zq8vN3xL0pR7sT2w'\n"
        assert "Zq8vN3xL0pR7sT2w" not in redact(text, "settings.py").text
