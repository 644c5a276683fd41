"""TF Serving model config files (text format) and the choice of model source."""

from __future__ import annotations

from pathlib import Path

import pytest

from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.repository.config import (
    ModelConfig,
    VersionPolicy,
    model_configs,
    parse_model_server_config,
)

FULL = """
# two models
model_config_list {
  config {
    name: 'first'
    base_path: "/models/first/"
    model_platform: "xgboost"
    model_version_policy { specific { versions: 42 versions: 43 } }
    version_labels { key: 'stable' value: 42 }
    version_labels { key: "canary" value: 43 }
  }
  config: {
    name: "second", base_path: '/models/second';
    model_version_policy: { latest: { num_versions: 2 } }
    logging_config { sampling_config { sampling_rate: 0.1 } }
  }
  config < name: "third" base_path: "/m/third" model_version_policy { all {} } >
}
"""


def test_the_supported_subset_is_read() -> None:
    first, second, third = parse_model_server_config(FULL)
    assert first == ModelConfig(
        "first",
        Path("/models/first"),
        "xgboost",
        VersionPolicy("specific", versions=frozenset({42, 43})),
        {"stable": 42, "canary": 43},
    )
    assert second.policy == VersionPolicy("latest", 2)
    assert (second.platform, second.labels) == (None, {})
    assert third.policy == VersionPolicy("all")


@pytest.mark.parametrize(
    ("policy", "on_disk", "selected"),
    [
        (VersionPolicy(), [1, 2, 3], {3}),
        (VersionPolicy("latest", 2), [3, 1, 2], {2, 3}),
        (VersionPolicy("all"), [1, 5], {1, 5}),
        (VersionPolicy("specific", versions=frozenset({2, 9})), [1, 2, 3], {2}),
        (VersionPolicy(), [], set()),
    ],
)
def test_policies_select_versions(
    policy: VersionPolicy, on_disk: list[int], selected: set[int]
) -> None:
    assert policy.select(on_disk) == selected


def config(fields: str) -> str:
    """A config list with one model m (base path /m) plus ``fields``."""
    return f'model_config_list {{ config {{ name: "m" base_path: "/m" {fields} }} }}'


def test_latest_zero_means_one() -> None:
    text = config("model_version_policy { latest { num_versions: 0 } }")
    assert parse_model_server_config(text)[0].policy == VersionPolicy("latest", 1)


ERRORS = [
    (
        'model_config_list { config { name: "m" base_path: "relative/path" } }',
        "Expected model m to have an absolute path or URI; got base_path()=relative/path",
    ),
    (
        config("") + config(""),
        "Illegal to list model m multiple times in config list",
    ),
    (
        'model_config_list { config { name: "m" base_path: "/a" model_platform: "tensorflow" } }',
        "model_platform 'tensorflow' is not supported",
    ),
    (
        'model_config_list { config { name: "m" base_path: "/a" bogus: 1 } }',
        "unsupported field(s) bogus",
    ),
    ('model_config_list { config { name: "m" base_path: "/a"', "missing '}'"),
    ("model_config_list { config { name: @ } }", "unexpected character '@'"),
    ("custom_model_config { }", "unsupported field(s) custom_model_config"),
    (
        config("model_version_policy { specific { } }"),
        "lists no versions",
    ),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_config_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        parse_model_server_config(text)
    assert message in str(caught.value)


def test_model_sources_in_order_of_precedence(tmp_path: Path) -> None:
    config_file = tmp_path / "models.config"
    config_file.write_text('model_config_list { config { name: "c" base_path: "/c" } }')
    assert [c.name for c in model_configs(Settings(model_config_file=config_file))] == ["c"]
    docker = model_configs(Settings(model_name="m", model_base_path=tmp_path))
    assert docker == [ModelConfig("m", tmp_path / "m")]
    assert model_configs(Settings(model_name="m"))[0].base_path == Path("/models/m")
    sagemaker = model_configs(Settings(model_dir=tmp_path))
    assert sagemaker == [ModelConfig("model", tmp_path, single_version=True)]


def test_an_unreadable_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="SMSERVE_MODEL_CONFIG_FILE"):
        model_configs(Settings(model_config_file=tmp_path / "missing"))


def test_the_list_syntax_is_read() -> None:
    text = """model_config_list {
      config: [
        { name: "a" base_path: "/a" model_version_policy { specific { versions: [3, 1] } } },
        { name: "b" base_path: "/b" }
      ]
    }"""
    first, second = parse_model_server_config(text)
    assert first.policy == VersionPolicy("specific", versions=frozenset({1, 3}))
    assert second == ModelConfig("b", Path("/b"))


@pytest.mark.parametrize(
    ("text", "located"),
    [
        (
            'model_config_list {\n  config {\n    name: "m"\n    bogus: 1\n  }\n}',
            "models.config:4:5: unsupported field(s) bogus; supported here: base_path, ",
        ),
        (
            'model_config_list { config {\n name: "m" model_version_policy '
            '{ latest { num_versions: "two" } } } }',
            'models.config:2:58: Couldn\'t parse integer: "two"',
        ),
        (
            "model_config_list {\n config { name: @ } }",
            "models.config:2:17: unexpected character '@'",
        ),
        (
            'model_config_list { config { name: "m"\n'
            " model_version_policy { all {} latest {} } } }",
            'models.config:2:32: Field "latest" is specified along with field "all"',
        ),
    ],
    ids=["unknown field", "typed field", "character", "two policies"],
)
def test_an_error_names_its_line_and_column(text: str, located: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_server_config(text, "models.config")
    assert str(caught.value).startswith(located)
