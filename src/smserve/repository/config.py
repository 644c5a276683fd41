"""Which models to serve, from where, and which of their versions.

Three sources, first match wins (multi-model endpoints are separate, see ``mme``):

1. ``SMSERVE_MODEL_CONFIG_FILE``: a TF Serving ``ModelServerConfig`` in text format. Read:
   ``model_config_list { config { name, base_path, model_platform, model_version_policy
   { latest { num_versions } | all {} | specific { versions ... } }, version_labels { key
   value } } }``. ``logging_config`` is accepted and ignored; any other field is an error.
   ``model_platform`` is ``xgboost`` or ``kmeans`` (empty: detect from the files).
2. ``MODEL_NAME`` / ``MODEL_BASE_PATH`` (TF Serving's Docker image variables): one model named
   MODEL_NAME (default ``model``) with versions under MODEL_BASE_PATH/MODEL_NAME (default base
   ``/models``), policy latest 1.
3. Otherwise the SageMaker model directory (SM_MODEL_DIR) is model ``model``, version 1.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smserve.algorithms.catalog import NAMES
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.repository.textproto import Message, Scalar, parse

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "model"
DOCKER_BASE_PATH = Path("/models")
_CONFIG_FIELDS = {"name", "base_path", "model_platform", "model_version_policy", "version_labels"}
_IGNORED_FIELDS = {"logging_config"}


@dataclass(frozen=True, slots=True)
class VersionPolicy:
    """model_version_policy: ``latest`` (the ``num_versions`` highest), ``all`` or ``specific``."""

    kind: str = "latest"
    num_versions: int = 1
    versions: frozenset[int] = frozenset()

    def select(self, on_disk: Iterable[int]) -> set[int]:
        """The versions to serve among those on disk."""
        present = sorted(set(on_disk))
        if self.kind == "all":
            return set(present)
        if self.kind == "specific":
            return set(present) & self.versions
        return set(present[-self.num_versions :]) if present else set()


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One model. ``single_version``: ``base_path`` itself is version 1 (SageMaker layout)."""

    name: str
    base_path: Path
    platform: str | None = None
    policy: VersionPolicy = VersionPolicy()
    labels: Mapping[str, int] = field(default_factory=dict)
    single_version: bool = False


def model_configs(settings: Settings) -> list[ModelConfig]:
    """The configured models (see the module docstring); raises ConfigError."""
    if settings.model_config_file is not None:
        return read_config_file(settings.model_config_file)
    if settings.model_name is not None or settings.model_base_path is not None:
        name = settings.model_name or DEFAULT_MODEL_NAME
        return [ModelConfig(name, (settings.model_base_path or DOCKER_BASE_PATH) / name)]
    return [ModelConfig(DEFAULT_MODEL_NAME, settings.model_dir, single_version=True)]


def read_config_file(path: Path) -> list[ModelConfig]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"SMSERVE_MODEL_CONFIG_FILE={path}: cannot read it: {exc}") from None
    return parse_model_server_config(text, str(path))


def parse_model_server_config(text: str, source: str = "<config>") -> list[ModelConfig]:
    """ModelServerConfig text -> model configs; raises ConfigError naming the problem."""
    root = parse(text, source)
    _only(root, {"model_config_list"}, source)
    configs: list[ModelConfig] = []
    for config_list in _messages(root, "model_config_list", source):
        _only(config_list, {"config"}, source)
        configs.extend(_model(c, source) for c in _messages(config_list, "config", source))
    _check_unique(configs)
    return configs


def _only(message: Message, allowed: set[str], source: str) -> None:
    unknown = set(message.fields) - allowed - _IGNORED_FIELDS
    if unknown:
        raise ConfigError(
            f"{source}: unsupported field(s) {', '.join(sorted(unknown))}; "
            f"supported here: {', '.join(sorted(allowed))}"
        )


def _messages(message: Message, name: str, source: str) -> list[Message]:
    values = message.fields.get(name, [])
    if not all(isinstance(v, Message) for v in values):
        raise ConfigError(f"{source}: {name} must be a message ({name} {{ ... }})")
    return [v for v in values if isinstance(v, Message)]


def _scalar(message: Message, name: str, source: str, default: Scalar | None = None) -> Scalar:
    values = message.fields.get(name, [])
    if not values and default is not None:
        return default
    if len(values) != 1 or isinstance(values[0], Message):
        raise ConfigError(f"{source}: {name} must be given once, as a value")
    return values[0]


def _model(config: Message, source: str) -> ModelConfig:
    _only(config, _CONFIG_FIELDS, source)
    name = str(_scalar(config, "name", source, ""))
    if not name:
        raise ConfigError(f"{source}: a config has no name")
    base_path = str(_scalar(config, "base_path", source, ""))
    if not Path(base_path).is_absolute():
        raise ConfigError(
            f"Expected model {name} to have an absolute path or URI; got base_path()={base_path}"
        )
    platform = _platform(str(_scalar(config, "model_platform", source, "")), name, source)
    policy = _policy(_messages(config, "model_version_policy", source), name, source)
    labels = _labels(_messages(config, "version_labels", source), name, source)
    return ModelConfig(name, Path(base_path), platform, policy, labels)


def _platform(value: str, name: str, source: str) -> str | None:
    if value and value not in NAMES:
        raise ConfigError(
            f"{source}: model {name}: model_platform {value!r} is not supported; use one of "
            f"{', '.join(NAMES)}, or leave it out to detect the kind from the files"
        )
    return value or None


def _policy(policies: list[Message], name: str, source: str) -> VersionPolicy:
    if not policies:
        return VersionPolicy()
    kinds = [(k, v) for p in policies for k, values in p.fields.items() for v in values]
    if len(kinds) != 1 or not isinstance(kinds[0][1], Message):
        raise ConfigError(f"{source}: model {name}: give one of latest, all or specific")
    kind, body = kinds[0]
    assert isinstance(body, Message)
    if kind == "all":
        return VersionPolicy("all")
    if kind == "latest":
        count = _integer(_scalar(body, "num_versions", source, 1), "num_versions", source)
        return VersionPolicy("latest", max(count, 1))  # TF Serving treats 0 as 1
    if kind == "specific":
        values = body.fields.get("versions", [])
        versions = frozenset(_integer(v, "versions", source) for v in values)
        if not versions:
            raise ConfigError(f"{source}: model {name}: the specific policy lists no versions")
        return VersionPolicy("specific", versions=versions)
    raise ConfigError(f"{source}: model {name}: unknown version policy {kind!r}")


def _labels(entries: list[Message], name: str, source: str) -> dict[str, int]:
    labels = {}
    for entry in entries:
        label = str(_scalar(entry, "key", source))
        labels[label] = _integer(_scalar(entry, "value", source), "version_labels", source)
    return labels


def _integer(value: Scalar | Message, what: str, source: str) -> int:
    if not isinstance(value, int):
        raise ConfigError(f"{source}: {what} must be an integer, got {value!r}")
    return value


def _check_unique(configs: list[ModelConfig]) -> None:
    seen: set[str] = set()
    for config in configs:
        if config.name in seen:
            raise ConfigError(f"Illegal to list model {config.name} multiple times in config list")
        seen.add(config.name)
