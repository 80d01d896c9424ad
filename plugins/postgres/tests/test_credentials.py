"""Credentials come from the URL, PG* variables or a service file, and are never shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from contextfuse_postgres import PostgresStoreProvider
from contextfuse_postgres.connection import display_url, scrub

from contextfuse.errors import KnowledgeBaseError

SECRET = "Sup3r-s3cret-pw"


def _with_password(url: str) -> str:
    return url.replace("postgres@", f"postgres:{SECRET}@")


def test_the_shown_url_has_host_port_and_database_only() -> None:
    shown = display_url(f"postgresql://ada:{SECRET}@db.example:6543/kb")
    assert shown == "postgresql://db.example:6543/kb"


def test_passwords_are_scrubbed_from_urls_and_key_value_strings() -> None:
    text = f"postgresql://ada:{SECRET}@h/db and host=h password={SECRET} user=ada"
    assert SECRET not in scrub(text)


def test_a_refused_connection_names_the_database_but_not_the_password(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    url = f"postgresql://ada:{SECRET}@127.0.0.1:9/kb?connect_timeout=1"
    caplog.set_level(logging.DEBUG)
    with pytest.raises(KnowledgeBaseError) as raised:
        PostgresStoreProvider().open(tmp_path, {"url": url})
    assert "postgresql://127.0.0.1:9/kb" in str(raised.value)
    assert SECRET not in str(raised.value)
    assert SECRET not in caplog.text


def test_index_stats_and_logs_never_show_the_password(
    server_url: str, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    stats = PostgresStoreProvider().index(repo, {"url": _with_password(server_url)})
    assert SECRET not in str(stats.to_dict())
    assert SECRET not in caplog.text
    assert stats.index_path == display_url(server_url)


def test_pg_environment_variables_supply_the_connection(
    server_url: str, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(server_url)
    for key, variable in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"),
                          ("dbname", "PGDATABASE")):  # fmt: skip
        monkeypatch.setenv(variable, str(parts[key]))
    stats = PostgresStoreProvider().index(repo, {"url": "postgresql://"})
    assert stats.files == 2


def test_a_service_file_supplies_the_connection(
    server_url: str, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(server_url)
    service = tmp_path / "pg_service.conf"
    service.write_text(
        "[kb]\n" + "".join(f"{key}={parts[key]}\n" for key in ("host", "port", "user", "dbname"))
    )
    monkeypatch.setenv("PGSERVICEFILE", str(service))
    stats = PostgresStoreProvider().index(repo, {"url": "postgresql:///?service=kb"})
    assert stats.files == 2
