"""TOML configuration: a user file and a per-project ``.contextfuse/config.toml``.

The user file is ``$CONTEXTFUSE_CONFIG`` if set, else ``$XDG_CONFIG_HOME/contextfuse/config.toml``
(``~/.config/contextfuse/config.toml``). The project file overrides it key by key; a project's
``[context.strategies] enabled`` list replaces the user's list.

```toml
[context.strategies]
enabled = ["simple-keyword", "semantic-embedding"]   # default: every installed strategy
primary_resource_types = ["code", "docs"]            # what the degradation path serves
join_confidence = 0.8                                # other strategies join at this can_handle
install_hint = "contextfuse-simple-keyword"          # named when no text strategy is installed

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

[index]
dir = ".contextfuse"                       # where the embedded index lives
store = "sqlite"                           # a backend provider's name, or a URL

[tokenizer]
name = "tiktoken:cl100k_base"              # a tokenizer a plugin contributes

[tiers]                                    # storage tiers (contextfuse.kb.tiers), in days
hot_days = 7                               # `contextfuse index` stores them with the index;
warm_days = 30                             # its --hot-days... options win over these
retention_days = 180
```

Every section is validated by its model when the files are read: an unknown key or a bad
value is a ``ConfigError`` naming the file, the section, the key and the nearest valid key.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextfuse.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "SECTIONS",
    "ContextfuseConfig",
    "FinalizeSettings",
    "IndexSettings",
    "StrategySelection",
    "StrategySettings",
    "TierSettings",
    "TokenizerSettings",
    "check_section",
    "load_config",
    "project_config_path",
    "user_config_path",
    "write_project_strategies",
]


class StrategySelection(BaseModel):
    """How strategies are chosen without a configured ``enabled`` list.

    The keys of ``[context.strategies]`` besides ``enabled``, ``custom`` and the per-strategy
    tables. The core names no strategy: what follows comes from what each installed strategy
    declares (``StrategyCapabilities``).

    * The **degradation path** is every enabled strategy that declares all of
      ``primary_resource_types`` (or ``*``) and needs only backends the store provides,
      best declared ``quality_score`` first (with the built-in strategies: arce ->
      breadth-depth-navigator -> semantic-embedding -> simple-keyword).
    * A request runs the first strategy of the path that the index can serve, plus every
      other enabled strategy (one serving other resource types, such as plans and
      decisions) whose ``can_handle`` answers at least ``join_confidence``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    primary_resource_types: tuple[str, ...] = Field(
        default=("code", "docs"),
        description="Resource types a strategy must declare to be on the degradation path.",
    )
    join_confidence: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="can_handle confidence at which another strategy joins the best one.",
    )
    install_hint: str = Field(
        default="contextfuse-simple-keyword",
        description="The distribution named when no installed strategy can search text.",
    )


_RESERVED_KEYS = {"enabled", "custom", *StrategySelection.model_fields}


class StrategySettings(BaseModel):
    """Per-strategy settings (spec/strategy-registry.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float = Field(default=30, gt=0)
    max_fragments: int = Field(default=100, ge=1)
    max_workers: int = Field(default=4, ge=1)
    circuit_breaker_threshold: int = Field(default=3, ge=1)
    enabled: bool = True


class FinalizeSettings(BaseModel):
    """The ``[finalize]`` section: phase 3 settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    order: Literal["score", "file", "edges"] = "score"


class IndexSettings(BaseModel):
    """The ``[index]`` section: where the knowledge base lives and which store serves it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dir: str | None = Field(default=None, description="Index folder, relative to the repository.")
    store: str | None = Field(
        default=None, description="A backend provider's name or a URL; default: sqlite."
    )


class TierSettings(BaseModel):
    """The ``[tiers]`` section: the storage-tier policy ``contextfuse index`` stores.

    Days a file may stay idle in each tier (see ``contextfuse.kb.tiers.TierPolicy``); an
    unset one keeps the store's current value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    hot_days: float | None = Field(default=None, gt=0, description="Hot until idle this long.")
    warm_days: float | None = Field(default=None, gt=0, description="Warm until idle this long.")
    retention_days: float | None = Field(
        default=None, gt=0, description="Evicted from the index when idle this long."
    )


class TokenizerSettings(BaseModel):
    """The ``[tokenizer]`` section: which contributed tokenizer counts tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = Field(default=None, description="e.g. tiktoken:o200k_base")


class ContextfuseConfig(BaseModel):
    """The merged configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: tuple[str, ...] | None = Field(
        default=None,
        description="Enabled strategies; None when no file names them (every installed one).",
    )
    enabled_source: str = ""
    selection: StrategySelection = Field(default_factory=StrategySelection)
    custom: dict[str, str] = Field(default_factory=dict)
    strategy_settings: dict[str, StrategySettings] = Field(default_factory=dict)
    coordinator: dict[str, Any] = Field(default_factory=dict)
    fusion: dict[str, Any] = Field(default_factory=dict)
    finalize: dict[str, Any] = Field(default_factory=dict)
    components: dict[str, str] = Field(default_factory=dict)
    index: IndexSettings = Field(default_factory=IndexSettings)
    tokenizer: TokenizerSettings = Field(default_factory=TokenizerSettings)
    tiers: TierSettings = Field(default_factory=TierSettings)
    sources: tuple[str, ...] = ()

    def with_index(self, **changes: Any) -> ContextfuseConfig:
        """This configuration with these ``[index]`` settings replaced (None: left as is).

        Command-line options override the files this way (``--store``...).
        """
        given = {key: value for key, value in changes.items() if value is not None}
        if not given:
            return self
        index = IndexSettings.model_validate({**self.index.model_dump(), **given})
        return self.model_copy(update={"index": index})

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


def _coordinator_model() -> type[BaseModel]:
    from contextfuse.components.coordination import CoordinatorConfig

    return CoordinatorConfig


def _fusion_model() -> type[BaseModel]:
    from contextfuse.components.fusion import FusionConfig

    return FusionConfig


def _slot_names() -> list[str]:
    from contextfuse.slots import SLOTS

    return [s.name for s in SLOTS]


#: Top-level section -> the model that validates it (``context`` is read separately).
SECTIONS: dict[str, Callable[[], type[BaseModel]]] = {
    "coordinator": _coordinator_model,
    "fusion": _fusion_model,
    "finalize": lambda: FinalizeSettings,
    "index": lambda: IndexSettings,
    "tokenizer": lambda: TokenizerSettings,
    "tiers": lambda: TierSettings,
}


class _Where:
    """Finds which file a section or key came from (the project file wins, as in merging)."""

    def __init__(self, files: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self._files = files

    def file(self, *path: str) -> str:
        for name, data in reversed(self._files):
            node: Any = data
            for part in path:
                if not isinstance(node, Mapping) or part not in node:
                    break
                node = node[part]
            else:
                return str(name)
        return ", ".join(name for name, _ in self._files) or "<configuration>"

    def error(self, section: str, key: str, problem: str, valid: list[str]) -> ConfigError:
        path = section.split(".") + ([key] if key else [])
        where = self.file(*path)
        nearest = difflib.get_close_matches(key, valid, n=1, cutoff=0.5) if key else []
        hint = f"; did you mean {nearest[0]!r}?" if nearest and nearest[0] != key else ""
        known = f" (valid keys: {', '.join(sorted(valid))})" if not hint and valid else ""
        label = f"[{section}] {key}" if key else f"[{section}]"
        return ConfigError(
            f"{where}: {label}: {problem}{hint}{known}",
            file=where,
            section=section,
            key=key,
            suggestion=nearest[0] if nearest else "",
        )


def _model_keys(model: type[BaseModel]) -> list[str]:
    keys: list[str] = []
    for name, field in model.model_fields.items():
        keys.append(name)
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        if choices:
            keys.extend(str(c) for c in choices if isinstance(c, str))
    return sorted(set(keys))


def _check_section(where: _Where, section: str, model: type[BaseModel], table: Any) -> BaseModel:
    """Validate one section's table with its model, as a ``ConfigError`` that says where."""
    valid = _model_keys(model)
    if not isinstance(table, Mapping):
        raise where.error(section, "", "must be a table of settings", valid)
    for key in table:
        if key not in valid:
            raise where.error(section, str(key), "unknown key", valid)
    try:
        return model.model_validate(dict(table))
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        raise where.error(
            section, key, f"{first['msg']} (got {first.get('input')!r})", valid
        ) from exc


def check_section(section: str, table: Mapping[str, Any], source: str = "<code>") -> BaseModel:
    """Validate one top-level section (``coordinator``, ``fusion``, ``finalize``, ``index``,
    ``tokenizer``, ``tiers``) with its model; raise ``ConfigError`` naming ``source``, the
    section, the key and the nearest valid key."""
    return _check_section(
        _Where([(source, {section: dict(table)})]), section, SECTIONS[section](), table
    )


def _parse(
    data: Mapping[str, Any],
    sources: tuple[str, ...],
    enabled_source: str,
    files: Sequence[tuple[str, Mapping[str, Any]]] | None = None,
) -> ContextfuseConfig:
    where = _Where(files if files is not None else [(", ".join(sources), data)])
    known_sections = ["context", "components", *SECTIONS]
    for name in data:
        if name not in known_sections:
            nearest = difflib.get_close_matches(name, known_sections, n=1, cutoff=0.5)
            hint = f"; did you mean [{nearest[0]}]?" if nearest else ""
            raise ConfigError(
                f"{where.file(name)}: unknown section [{name}]{hint} (sections: "
                f"{', '.join(known_sections)})",
                file=where.file(name),
                section=name,
                suggestion=nearest[0] if nearest else "",
            )
    context = data.get("context", {})
    if not isinstance(context, Mapping) or set(context) - {"strategies"}:
        extra = sorted(set(context) - {"strategies"}) if isinstance(context, Mapping) else []
        raise where.error("context", extra[0] if extra else "", "unknown key", ["strategies"])
    strategies = dict(context.get("strategies", {}))
    enabled = strategies.get("enabled")
    if enabled is not None and (
        not isinstance(enabled, list) or not all(isinstance(e, str) for e in enabled)
    ):
        raise ConfigError(
            f"{enabled_source}: context.strategies.enabled must be a list of names",
            file=enabled_source,
            section="context.strategies",
            key="enabled",
        )
    settings: dict[str, StrategySettings] = {}
    for name, table in strategies.items():
        if name in _RESERVED_KEYS:
            continue
        section = f'context.strategies."{name}"'
        if not isinstance(table, Mapping):
            raise where.error(
                "context.strategies", name, "must be a table of settings", sorted(_RESERVED_KEYS)
            )
        try:
            checked = _check_section(where, section, StrategySettings, table)
        except ConfigError as exc:
            raise ConfigError(
                f"invalid settings for strategy {name!r}: {exc}",
                file=exc.file,
                section=exc.section,
                key=exc.key,
                suggestion=exc.suggestion,
            ) from exc
        assert isinstance(checked, StrategySettings)
        settings[name] = checked
    checked_sections: dict[str, BaseModel] = {}
    for section, model in SECTIONS.items():
        if section in data:
            checked_sections[section] = _check_section(where, section, model(), data[section])
    components = data.get("components", {})
    slots = _slot_names()
    if not isinstance(components, Mapping):
        raise where.error("components", "", "must be a table of slot = plugin", slots)
    for key, value in components.items():
        if key not in slots:
            raise where.error("components", str(key), "unknown component slot", slots)
        if not isinstance(value, str):
            raise where.error("components", str(key), "must be a plugin name (a string)", slots)
    finalize = checked_sections.get("finalize")
    index = checked_sections.get("index")
    tokenizer = checked_sections.get("tokenizer")
    tiers = checked_sections.get("tiers")
    selection_keys = {k: v for k, v in strategies.items() if k in StrategySelection.model_fields}
    selection = _check_section(where, "context.strategies", StrategySelection, selection_keys)
    assert isinstance(selection, StrategySelection)
    try:
        return ContextfuseConfig(
            enabled=tuple(enabled) if enabled is not None else None,
            enabled_source=enabled_source if enabled is not None else "",
            selection=selection,
            custom=dict(strategies.get("custom", {})),
            strategy_settings=settings,
            coordinator=dict(data.get("coordinator", {})),
            fusion=dict(data.get("fusion", {})),
            finalize=finalize.model_dump(exclude_unset=True) if finalize else {},
            components=dict(components),
            index=index if isinstance(index, IndexSettings) else IndexSettings(),
            tokenizer=tokenizer
            if isinstance(tokenizer, TokenizerSettings)
            else TokenizerSettings(),
            tiers=tiers if isinstance(tiers, TierSettings) else TierSettings(),
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
    files = [(str(p), d) for p, d in ((user_path, user), (project_path, project)) if p and d]
    return _parse(_merge(user, project), sources, enabled_source, files)


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
