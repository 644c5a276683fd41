"""Which models to serve, from where, and which of their versions.

Three sources, first match wins (multi-model endpoints are separate, see ``mme``):

1. ``SMSERVE_MODEL_CONFIG_FILE``: a TF Serving ``ModelServerConfig`` in text format, parsed
   by protobuf's ``text_format`` from the schema in ``smserve.repository.schema`` (so the
   ``[...]`` list syntax, ``<...>`` messages and typed fields are TF Serving's, and an error
   names its line and column). Read: ``model_config_list { config { name, base_path,
   model_platform, model_version_policy { latest { num_versions } | all {} | specific {
   versions ... } }, version_labels { key value } } }``. ``logging_config`` is accepted and
   ignored; any other field is an error. ``model_platform`` is ``xgboost`` or ``kmeans``
   (empty: detect from the files).
2. ``MODEL_NAME`` / ``MODEL_BASE_PATH`` (TF Serving's Docker image variables): one model named
   MODEL_NAME (default ``model``) with versions under MODEL_BASE_PATH/MODEL_NAME (default base
   ``/models``), policy latest 1.
3. Otherwise the SageMaker model directory (SM_MODEL_DIR) is model ``model``, version 1.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from smserve.algorithms import catalog
from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.repository import schema

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "model"
DOCKER_BASE_PATH = Path("/models")
Message = Any  # a message of ``schema``'s classes, built at run time (no stubs to name them)


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
    """ModelServerConfig text -> model configs; raises ConfigError naming the problem (and,
    for a syntax or type error, its line and column)."""
    try:
        root = schema.parse(text)
    except text_format.ParseError as exc:
        raise ConfigError(located(exc, text, source)) from None
    configs = [_model(c, source) for group in root.model_config_list for c in group.config]
    _check_unique(configs)
    return configs


def located(error: text_format.ParseError, text: str, source: str) -> str:
    """``SOURCE:LINE:COLUMN: what is wrong``, in words of this file's format."""
    line, column = error.GetLine(), error.GetColumn()
    what = str(error).split(" : ", 1)[-1]
    if line is None or column is None:
        return f"{source}: {_in_words(what)}"
    lines = text.splitlines()
    quoted = f"'{lines[line - 1]}': " if 0 < line <= len(lines) else ""
    what = what.removeprefix(quoted) if quoted else what
    return f"{source}:{line}:{column}: {_in_words(what)}"


_NO_FIELD = re.compile(r'Message type "(?P<type>[\w.]+)" has no field named "(?P<field>\w+)"\.')
_FOUND = re.compile(r"Expected (?P<kind>\w+) but found: '(?P<char>[^\w\s\"'])'")


def _in_words(what: str) -> str:
    if (unknown := _NO_FIELD.fullmatch(what)) is not None:
        supported = ", ".join(sorted(schema.field_names(unknown["type"])))
        return f"unsupported field(s) {unknown['field']}; supported here: {supported}"
    if (found := _FOUND.fullmatch(what)) is not None:
        return f"unexpected character {found['char']!r} (expected a {found['kind']})"
    if what == 'Expected "}".':  # what the end of the text inside a message says
        return "missing '}'"
    return what


def _model(config: Message, source: str) -> ModelConfig:
    name = config.name
    if not name:
        raise ConfigError(f"{source}: a config has no name")
    if not Path(config.base_path).is_absolute():
        raise ConfigError(
            f"Expected model {name} to have an absolute path or URI; "
            f"got base_path()={config.base_path}"
        )
    platform = _platform(config.model_platform, name, source)
    policy = _policy(config, name, source)
    return ModelConfig(name, Path(config.base_path), platform, policy, dict(config.version_labels))


def _platform(value: str, name: str, source: str) -> str | None:
    if value and value not in catalog.names():
        raise ConfigError(
            f"{source}: model {name}: model_platform {value!r} is not supported; use one of "
            f"{', '.join(catalog.names())}, or leave it out to detect the kind from the files"
        )
    return value or None


def _policy(config: Message, name: str, source: str) -> VersionPolicy:
    if not config.HasField("model_version_policy"):
        return VersionPolicy()
    policy = config.model_version_policy
    kind = policy.WhichOneof("policy_choice")
    if kind == "all":
        return VersionPolicy("all")
    if kind == "specific":
        if not policy.specific.versions:
            raise ConfigError(f"{source}: model {name}: the specific policy lists no versions")
        return VersionPolicy("specific", versions=frozenset(policy.specific.versions))
    if kind == "latest":  # TF Serving treats 0 as 1
        return VersionPolicy("latest", max(policy.latest.num_versions, 1))
    raise ConfigError(f"{source}: model {name}: give one of latest, all or specific")


def _check_unique(configs: list[ModelConfig]) -> None:
    seen: set[str] = set()
    for config in configs:
        if config.name in seen:
            raise ConfigError(f"Illegal to list model {config.name} multiple times in config list")
        seen.add(config.name)
