"""Settings of the HTTP service: bind address, projects served, token and limits.

A settings file (TOML) may give everything the flags give::

    [server]
    host = "127.0.0.1"
    port = 8765
    max_body_bytes = 16777216
    refresh_interval_s = 30
    workers = 2                  # processes answering requests (default 1)
    assemblies_at_once = 32      # per process; the next requests wait their turn (default 32)
    allowed_hosts = ["myhost.internal"]  # served without a token: loopback names and these
    store = "postgresql://db.example/contextfuse"  # optional: one store for every project

    [projects]
    myapp = "/srv/repos/myapp"

    [providers.openai]          # an OpenAI-compatible summarizer for compaction
    base_url = "http://127.0.0.1:8000/v1"
    model = "my-model"
    api_key_env = "MY_MODEL_KEY" # the key is read from this environment variable
"""

from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contextfuse.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "PROJECT_NAME_PATTERN",
    "TOKEN_ENV",
    "OpenAIProviderSettings",
    "ServerSettings",
    "is_loopback",
    "load_server_settings",
]

TOKEN_ENV = "CONTEXTFUSE_SERVER_TOKEN"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
PROJECT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class OpenAIProviderSettings(BaseModel):
    """An OpenAI-compatible provider the server offers to compaction policies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "openai"
    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    input_usd_per_mtok: float | None = Field(default=None, ge=0)
    output_usd_per_mtok: float | None = Field(default=None, ge=0)


class ServerSettings(BaseModel):
    """Everything ``contextfuse serve`` needs to start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    projects: dict[str, Path] = Field(default_factory=dict)
    token: str | None = Field(default=None, min_length=16)
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    refresh_interval_s: float = Field(default=30.0, ge=0)
    #: Worker processes answering requests (one index, refreshed by the main process).
    workers: int = Field(default=1, ge=1, le=64)
    #: Assemblies each worker process runs at once; the next requests wait their turn, in
    #: order of arrival.
    assemblies_at_once: int = Field(default=32, ge=1, le=64)
    #: ``Host`` names a server without a token answers besides loopback ones (e.g. the name
    #: of a reverse proxy on this machine).
    allowed_hosts: tuple[str, ...] = ()
    providers: tuple[OpenAIProviderSettings, ...] = ()
    #: The store every project is indexed in and served from (a backend provider's name or
    #: URL); None: each project's own ``[index] store``. It may hold credentials: it is never
    #: printed or returned.
    store: str | None = Field(default=None, min_length=1, repr=False)

    @field_validator("projects")
    @classmethod
    def _valid_projects(cls, value: dict[str, Path]) -> dict[str, Path]:
        for name, path in value.items():
            if not re.match(PROJECT_NAME_PATTERN, name):
                raise ValueError(
                    f"project name {name!r} must be 1-64 letters, digits, '.', '_' or '-'"
                )
            if not Path(path).is_dir():
                raise ValueError(f"project {name!r}: {path} is not a directory")
        return {name: Path(path).resolve() for name, path in value.items()}

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback without a bearer token."""
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(
                f"binding {self.host} exposes the service beyond this machine; give a bearer "
                f"token with --token or ${TOKEN_ENV} (at least 16 characters)"
            )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_server_settings(path: Path | None, **overrides: Any) -> ServerSettings:
    """Settings from ``path`` (TOML, optional) with non-None ``overrides`` on top.

    ``overrides["projects"]`` adds to the file's projects.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        data.update(raw.get("server", {}))
        data["projects"] = dict(raw.get("projects", {}))
        data["providers"] = [
            {"name": name, **dict(section)}
            for name, section in dict(raw.get("providers", {})).items()
        ]
        unknown = set(raw) - {"server", "projects", "providers"}
        if unknown:
            raise ConfigError(f"{path}: unknown sections {sorted(unknown)}")
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "projects":
            data["projects"] = {**data.get("projects", {}), **dict(value)}
        else:
            data[key] = value
    try:
        return ServerSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from exc


def _describe(exc: ValidationError, path: Path | None) -> str:
    where = f"{path}: " if path else ""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
    )
    return f"{where}invalid server settings: {problems}"
