"""TOML configuration: a user file and a per-project ``.contextfuse/config.toml``.

The user file is ``$CONTEXTFUSE_CONFIG`` if set, else ``$XDG_CONFIG_HOME/contextfuse/config.toml``
(``~/.config/contextfuse/config.toml``). The project file overrides it key by key; a project's
``[context.strategies] enabled`` list replaces the user's list.

```toml
[context.strategies]
enabled = ["simple-keyword", "semantic-embedding"]

[context.strategies.custom]
"my-strategy" = "my_package.strategies:MyStrategy"

[context.strategies."simple-keyword"]      # per-strategy settings
timeout_seconds = 10
max_fragments = 200

[coordinator]                              # CoordinatorConfig fields
executor_max_workers = 4

[fusion]                                   # FusionConfig fields
min_fragment_tokens = 10

[finalize]
order = "score"                            # score | file | edges

[components]                               # pin a component slot to a plugin
fragment_scorer = "acme-scorer"
```
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextfuse.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_ENABLED",
    "FALLBACK_CHAIN",
    "ContextfuseConfig",
    "StrategySettings",
    "load_config",
    "project_config_path",
    "user_config_path",
    "write_project_strategies",
]

#: The default ``context.strategies.enabled``: the built-in repository strategies. Without a
#: configured list, a request runs the best of them that the index can serve (the first of
#: ``FALLBACK_CHAIN``): arce fuses the others' signals by rank, which beats fusing payloads.
DEFAULT_ENABLED: tuple[str, ...] = (
    "arce",
    "breadth-depth-navigator",
    "semantic-embedding",
    "simple-keyword",
)

#: The degradation path, best first (spec/strategy-registry.md).
FALLBACK_CHAIN: tuple[str, ...] = (
    "arce",
    "breadth-depth-navigator",
    "semantic-embedding",
    "simple-keyword",
)

_RESERVED_KEYS = {"enabled", "custom"}


class StrategySettings(BaseModel):
    """Per-strategy settings (spec/strategy-registry.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float = Field(default=30, gt=0)
    max_fragments: int = Field(default=100, ge=1)
    max_workers: int = Field(default=4, ge=1)
    circuit_breaker_threshold: int = Field(default=3, ge=1)
    enabled: bool = True


class ContextfuseConfig(BaseModel):
    """The merged configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: tuple[str, ...] | None = Field(
        default=None, description="Enabled strategies; None when no file names them."
    )
    enabled_source: str = ""
    custom: dict[str, str] = Field(default_factory=dict)
    strategy_settings: dict[str, StrategySettings] = Field(default_factory=dict)
    coordinator: dict[str, Any] = Field(default_factory=dict)
    fusion: dict[str, Any] = Field(default_factory=dict)
    finalize: dict[str, Any] = Field(default_factory=dict)
    components: dict[str, str] = Field(default_factory=dict)
    index: dict[str, Any] = Field(default_factory=dict)
    sources: tuple[str, ...] = ()

    def settings_for(self, name: str) -> StrategySettings:
        """The settings of strategy ``name`` (defaults when not configured)."""
        return self.strategy_settings.get(name, StrategySettings())

    def pipeline_config(self) -> dict[str, Any]:
        """The sections ``ACMSPipeline(config=...)`` takes."""
        coordinator = dict(self.coordinator)
        if self.strategy_settings:
            # Per-strategy settings become the executor's per-strategy limits; the pool is as
            # large as the largest max_workers asked for.
            limits = {
                name: settings.model_dump(
                    include={"timeout_seconds", "max_fragments", "circuit_breaker_threshold"},
                    exclude_unset=True,
                )
                for name, settings in self.strategy_settings.items()
            }
            coordinator.setdefault("strategy_limits", limits)
            workers = [
                s.max_workers
                for s in self.strategy_settings.values()
                if "max_workers" in s.model_fields_set
            ]
            if workers:
                coordinator.setdefault("executor_max_workers", max(workers))
        return {
            "coordinator": coordinator,
            "fusion": dict(self.fusion),
            "finalize": dict(self.finalize),
            "components": dict(self.components),
        }


def user_config_path() -> Path:
    """Where the user configuration file is read from."""
    explicit = os.environ.get("CONTEXTFUSE_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "contextfuse" / "config.toml"


def project_config_path(repo: Path | str) -> Path:
    """Where a project's configuration file lives."""
    return Path(repo) / ".contextfuse" / "config.toml"


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _parse(
    data: Mapping[str, Any], sources: tuple[str, ...], enabled_source: str
) -> ContextfuseConfig:
    unknown = set(data) - {"context", "coordinator", "fusion", "finalize", "components", "index"}
    if unknown:
        raise ConfigError(f"{', '.join(sources)}: unknown section(s) {sorted(unknown)}")
    strategies = dict(data.get("context", {}).get("strategies", {}))
    enabled = strategies.get("enabled")
    if enabled is not None and (
        not isinstance(enabled, list) or not all(isinstance(e, str) for e in enabled)
    ):
        raise ConfigError(f"{enabled_source}: context.strategies.enabled must be a list of names")
    settings: dict[str, StrategySettings] = {}
    for name, table in strategies.items():
        if name in _RESERVED_KEYS:
            continue
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"{', '.join(sources)}: context.strategies.{name} must be a table of settings"
            )
        try:
            settings[name] = StrategySettings(**table)
        except ValidationError as exc:
            raise ConfigError(
                f"{', '.join(sources)}: invalid settings for strategy {name!r}: "
                + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            ) from exc
    try:
        return ContextfuseConfig(
            enabled=tuple(enabled) if enabled is not None else None,
            enabled_source=enabled_source if enabled is not None else "",
            custom=dict(strategies.get("custom", {})),
            strategy_settings=settings,
            coordinator=dict(data.get("coordinator", {})),
            fusion=dict(data.get("fusion", {})),
            finalize=dict(data.get("finalize", {})),
            components=dict(data.get("components", {})),
            index=dict(data.get("index", {})),
            sources=sources,
        )
    except ValidationError as exc:
        raise ConfigError(f"{', '.join(sources)}: {exc}") from exc


def load_config(repo: Path | str | None = None) -> ContextfuseConfig:
    """The user configuration overridden by the project's (when ``repo`` is given)."""
    user_path = user_config_path()
    user = _read(user_path)
    project_path = project_config_path(repo) if repo is not None else None
    project = _read(project_path) if project_path is not None else {}
    sources = tuple(str(p) for p, d in ((user_path, user), (project_path, project)) if p and d)
    enabled_source = ""
    if project.get("context", {}).get("strategies", {}).get("enabled") is not None:
        enabled_source = str(project_path)
    elif user.get("context", {}).get("strategies", {}).get("enabled") is not None:
        enabled_source = str(user_path)
    return _parse(_merge(user, project), sources, enabled_source)


def write_project_strategies(repo: Path | str, strategies: list[str]) -> Path:
    """Set the project's enabled strategies, keeping the rest of its configuration file."""
    path = project_config_path(repo)
    data = _read(path)
    data.setdefault("context", {}).setdefault("strategies", {})["enabled"] = list(strategies)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(_dump_toml(data), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a crash never leaves half a file
    return path


def _dump_toml(data: Mapping[str, Any]) -> str:
    """A minimal TOML writer for the nested tables and scalar/list values config uses."""
    lines: list[str] = []

    def scalar(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return repr(value)
        if isinstance(value, str):
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            return f'"{escaped}"'
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(scalar(v) for v in value) + "]"
        raise ConfigError(f"cannot write {type(value).__name__} values to TOML")

    def key(name: str) -> str:
        bare = name.replace("_", "").replace("-", "").isalnum()
        return name if bare else scalar(name)

    def table(prefix: list[str], mapping: Mapping[str, Any]) -> None:
        plain = {k: v for k, v in mapping.items() if not isinstance(v, Mapping)}
        nested = {k: v for k, v in mapping.items() if isinstance(v, Mapping)}
        if prefix and (plain or not nested):
            lines.append(f"[{'.'.join(key(p) for p in prefix)}]")
        for k, v in plain.items():
            lines.append(f"{key(k)} = {scalar(v)}")
        if plain:
            lines.append("")
        for k, v in nested.items():
            table([*prefix, k], v)

    table([], data)
    return "\n".join(lines).rstrip() + "\n"
