"""The settings of ``smserve train``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smserve.config.constants import DEFAULT_TRAINING_BASE_DIR, LIBSVM_INDEX_BASES
from smserve.config.derived import log_level
from smserve.config.reader import Reader

DEFAULT_TRACKER_PORT = 9099
DEFAULT_RESOLVE_TIMEOUT_S = 900.0
DEFAULT_COLLECTIVE_TIMEOUT_S = 300


@dataclass(frozen=True, slots=True)
class HostSettings:
    """A multi-host job's settings (see ``smserve.training.cluster``); field comments name the
    variables. ``hosts_json`` and ``current_host`` override ``resourceconfig.json``."""

    hosts_json: str | None = None  # SM_HOSTS, a JSON list of host names
    current_host: str | None = None  # SM_CURRENT_HOST
    tracker_port: int = DEFAULT_TRACKER_PORT  # SMSERVE_TRACKER_PORT (training group: + 1)
    resolve_timeout_s: float = DEFAULT_RESOLVE_TIMEOUT_S  # SMSERVE_HOST_RESOLVE_TIMEOUT_S
    collective_timeout_s: int = DEFAULT_COLLECTIVE_TIMEOUT_S  # SMSERVE_COLLECTIVE_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Reader) -> HostSettings:
        return cls(
            hosts_json=env.text("SM_HOSTS"),
            current_host=env.text("SM_CURRENT_HOST"),
            tracker_port=env.integer("SMSERVE_TRACKER_PORT", DEFAULT_TRACKER_PORT, minimum=1),
            resolve_timeout_s=env.number(
                "SMSERVE_HOST_RESOLVE_TIMEOUT_S", DEFAULT_RESOLVE_TIMEOUT_S
            ),
            collective_timeout_s=env.integer(
                "SMSERVE_COLLECTIVE_TIMEOUT_S", DEFAULT_COLLECTIVE_TIMEOUT_S, minimum=1
            ),
        )


@dataclass(frozen=True, slots=True)
class TrainingSettings:
    """Settings of ``smserve train``: the SageMaker training layout under ``base_dir`` (each
    path overridable) and the training options. Field comments name the variables."""

    config_dir: Path  # SM_INPUT_CONFIG_DIR (default: <base>/input/config)
    data_dir: Path  # <base>/input/data, base from SMSERVE_TRAINING_BASE_DIR (default /opt/ml)
    model_dir: Path  # SM_MODEL_DIR (default: <base>/model)
    output_dir: Path  # SM_OUTPUT_DIR (default: <base>/output); holds ``failure``
    channel_dirs: Mapping[str, Path]  # SM_CHANNEL_<NAME> (default: <data_dir>/<name>)
    algorithm: str | None = None  # SMSERVE_ALGORITHM (None: hyperparameter or xgboost)
    libsvm_index_base: str = "0"  # SMSERVE_LIBSVM_INDEX_BASE, as when serving
    log_level: str = "info"  # SMSERVE_LOG_LEVEL, else SAGEMAKER_CONTAINER_LOG_LEVEL
    hosts: HostSettings = HostSettings()  # the multi-host job's variables, below

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TrainingSettings:
        """Raises ConfigError naming the variable when a value is invalid."""
        env = Reader(os.environ if environ is None else environ)
        paths = cls.layout(env)
        return cls(
            **paths,
            algorithm=env.lowered("SMSERVE_ALGORITHM"),
            libsvm_index_base=env.choice("SMSERVE_LIBSVM_INDEX_BASE", "0", LIBSVM_INDEX_BASES),
            log_level=log_level(env),
            hosts=HostSettings.from_env(env),
        )

    @staticmethod
    def output_dir_of(environ: Mapping[str, str]) -> Path:
        """Where ``failure`` goes, even when other settings are invalid."""
        output_dir: Path = TrainingSettings.layout(Reader(environ))["output_dir"]
        return output_dir

    @staticmethod
    def layout(env: Reader) -> dict[str, Any]:
        base = env.path("SMSERVE_TRAINING_BASE_DIR", DEFAULT_TRAINING_BASE_DIR)
        return {
            "config_dir": env.path("SM_INPUT_CONFIG_DIR", base / "input" / "config"),
            "data_dir": base / "input" / "data",
            "model_dir": env.path("SM_MODEL_DIR", base / "model"),
            "output_dir": env.path("SM_OUTPUT_DIR", base / "output"),
            "channel_dirs": env.prefixed_paths("SM_CHANNEL_"),
        }
