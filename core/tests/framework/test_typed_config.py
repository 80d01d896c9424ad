"""Every configuration section is a model: a typo or bad value says file, section, key."""

from __future__ import annotations

import pytest

from contextfuse import ConfigError
from contextfuse.config import load_config, project_config_path


@pytest.fixture
def user_file(tmp_path, monkeypatch):
    path = tmp_path / "user.toml"
    monkeypatch.setenv("CONTEXTFUSE_CONFIG", str(path))
    return path


def error_for(tmp_path, user_file, text) -> ConfigError:
    user_file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    return caught.value


def test_a_typo_under_finalize_names_file_section_key_and_the_nearest_key(tmp_path, user_file):
    error = error_for(tmp_path, user_file, '[finalize]\nordr = "file"\n')
    assert (error.file, error.section, error.key, error.suggestion) == (
        str(user_file),
        "finalize",
        "ordr",
        "order",
    )
    assert "did you mean 'order'?" in str(error)


def test_a_typo_under_fusion_is_a_config_error_not_a_validation_error(tmp_path, user_file):
    error = error_for(tmp_path, user_file, "[fusion]\nmin_fragment_token = 5\n")
    assert error.suggestion == "min_fragment_tokens"


def test_a_bad_value_names_the_key_and_what_is_wrong(tmp_path, user_file):
    error = error_for(tmp_path, user_file, "[coordinator]\nexecutor_max_workers = 0\n")
    assert error.key == "executor_max_workers" and "greater than or equal to 1" in str(error)


def test_a_bad_value_of_an_enumerated_setting_is_rejected(tmp_path, user_file):
    error = error_for(tmp_path, user_file, '[finalize]\norder = "random"\n')
    assert error.key == "order"


def test_an_unknown_component_slot_suggests_the_nearest_slot(tmp_path, user_file):
    error = error_for(tmp_path, user_file, '[components]\nfragment_scorr = "x"\n')
    assert error.suggestion == "fragment_scorer"


def test_an_unknown_section_suggests_the_nearest_section(tmp_path, user_file):
    error = error_for(tmp_path, user_file, '[tokeniser]\nname = "x"\n')
    assert error.suggestion == "tokenizer"


def test_the_error_names_the_project_file_when_the_typo_is_there(tmp_path, user_file):
    project = project_config_path(tmp_path)
    project.parent.mkdir()
    project.write_text("[index]\ndri = 'x'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.file == str(project) and caught.value.suggestion == "dir"


def test_a_typo_in_a_strategys_settings_suggests_the_nearest_setting(tmp_path, user_file):
    error = error_for(
        tmp_path, user_file, '[context.strategies."simple-keyword"]\ntimeout_second = 3\n'
    )
    assert error.suggestion == "timeout_seconds"


def test_a_typo_in_a_pipeline_config_given_in_code_is_a_config_error(pm):
    from contextfuse import ACMSPipeline

    with pytest.raises(ConfigError, match=r"\[fusion\] min_fragment_token.*'min_fragment_tokens'"):
        ACMSPipeline(plugin_manager=pm, config={"fusion": {"min_fragment_token": 3}})
