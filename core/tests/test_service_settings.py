"""Server settings from flags and a TOML file, and the start-up cost of the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contextfuse.errors import ConfigError
from contextfuse.server.run import configured_providers
from contextfuse.server.settings import load_server_settings


def test_a_settings_file_names_projects_limits_and_providers(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    path = tmp_path / "server.toml"
    path.write_text(
        "[server]\nport = 9000\nmax_body_bytes = 4096\n"
        f'[projects]\napp = "{tmp_path / "app"}"\n'
        '[providers.local]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n'
        'api_key_env = "LOCAL_KEY"\n'
    )
    settings = load_server_settings(path)
    assert (settings.port, settings.max_body_bytes) == (9000, 4096)
    assert settings.projects == {"app": (tmp_path / "app").resolve()}
    [provider] = configured_providers(settings, env={"LOCAL_KEY": "k"})
    assert (provider.name, provider.model) == ("local", "m")


def test_flags_override_the_file_and_add_projects(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    path = tmp_path / "server.toml"
    path.write_text(f'[server]\nport = 9000\n[projects]\na = "{tmp_path / "a"}"\n')
    settings = load_server_settings(path, port=9001, projects={"b": tmp_path / "b"})
    assert settings.port == 9001 and sorted(settings.projects) == ["a", "b"]


def test_an_unknown_section_is_named(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text("[serve]\nport = 1\n")
    with pytest.raises(ConfigError, match=r"unknown sections \['serve'\]"):
        load_server_settings(path)


def test_an_invalid_value_names_its_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="port: Input should be less than or equal to 65535"):
        load_server_settings(None, port=70000)
    with pytest.raises(ConfigError, match="project name 'a/b'"):
        load_server_settings(None, projects={"a/b": tmp_path})


def test_assemblies_at_once_must_be_at_least_one(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text("[server]\nassemblies_at_once = 0\n")
    with pytest.raises(ConfigError, match="assemblies_at_once: Input should be greater than"):
        load_server_settings(path)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="token: String should have at least 16 characters"):
        load_server_settings(None, token="short")


def test_help_imports_none_of_the_service_dependencies() -> None:
    code = (
        "import sys\n"
        "from contextfuse.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('fastapi', 'uvicorn', 'mcp', 'httpx', 'pydantic') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout
