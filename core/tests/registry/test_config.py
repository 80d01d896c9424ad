"""TOML configuration: user file, project file, per-strategy settings."""

from __future__ import annotations

import pytest

from contextfuse.config import load_config, project_config_path, write_project_strategies
from contextfuse.errors import ConfigError


@pytest.fixture(autouse=True)
def user_config(tmp_path, monkeypatch):
    path = tmp_path / "user" / "config.toml"
    monkeypatch.setenv("CONTEXTFUSE_CONFIG", str(path))
    return path


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_without_files_no_enabled_list_is_configured(tmp_path):
    assert load_config(tmp_path / "repo").enabled is None


def test_the_user_file_sets_the_enabled_strategies(tmp_path, user_config):
    write(user_config, '[context.strategies]\nenabled = ["simple-keyword"]\n')
    config = load_config(tmp_path)
    assert config.enabled == ("simple-keyword",)
    assert config.enabled_source == str(user_config)


def test_the_project_file_replaces_the_user_enabled_list(tmp_path, user_config):
    write(user_config, '[context.strategies]\nenabled = ["a", "b"]\n')
    write(project_config_path(tmp_path), '[context.strategies]\nenabled = ["c"]\n')
    assert load_config(tmp_path).enabled == ("c",)


def test_per_strategy_settings_are_read_with_defaults_for_the_rest(tmp_path, user_config):
    write(user_config, '[context.strategies."simple-keyword"]\ntimeout_seconds = 5\n')
    settings = load_config(tmp_path).settings_for("simple-keyword")
    assert settings.timeout_seconds == 5 and settings.max_fragments == 100


def test_an_invalid_strategy_setting_names_the_strategy_and_key(tmp_path, user_config):
    write(user_config, '[context.strategies."simple-keyword"]\nmax_fragments = 0\n')
    with pytest.raises(ConfigError, match="'simple-keyword'.*max_fragments"):
        load_config(tmp_path)


def test_invalid_toml_names_the_file(tmp_path, user_config):
    write(user_config, "[context.strategies\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(tmp_path)


def test_an_unknown_section_is_rejected(tmp_path, user_config):
    write(user_config, "[contexts]\n")
    with pytest.raises(ConfigError, match="unknown section"):
        load_config(tmp_path)


def test_custom_strategies_are_read(tmp_path, user_config):
    write(user_config, '[context.strategies.custom]\n"mine" = "pkg.mod:Mine"\n')
    assert load_config(tmp_path).custom == {"mine": "pkg.mod:Mine"}


def test_writing_project_strategies_keeps_other_settings(tmp_path):
    write(project_config_path(tmp_path), "[fusion]\nmin_fragment_tokens = 5\n")
    write_project_strategies(tmp_path, ["simple-keyword", "semantic-embedding"])
    config = load_config(tmp_path)
    assert config.enabled == ("simple-keyword", "semantic-embedding")
    assert config.fusion == {"min_fragment_tokens": 5}


def test_per_strategy_settings_become_the_executors_limits(tmp_path, user_config):
    from contextfuse.components.coordination import CoordinatorConfig

    write(
        user_config,
        '[context.strategies."simple-keyword"]\n'
        "timeout_seconds = 5\nmax_fragments = 7\nmax_workers = 2\n",
    )
    coordinator = CoordinatorConfig(**load_config(tmp_path).pipeline_config()["coordinator"])
    assert coordinator.timeout_for("simple-keyword") == 5
    assert coordinator.max_fragments_for("simple-keyword") == 7
    assert coordinator.max_fragments_for("other") == 100
    assert coordinator.executor_max_workers == 2
