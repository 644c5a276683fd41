"""The SageMaker training layout under ``/opt/ml`` and the environment overrides for it.

Only the mapping given to :func:`TrainingPaths.from_env` is read, never ``os.environ``.

======================================  ==========================================
path                                    override (first non-empty wins)
======================================  ==========================================
base directory ``/opt/ml``              ``SMSERVE_TRAINING_BASE_DIR``
``<base>/input/config``                 ``SM_INPUT_CONFIG_DIR``
``<base>/input/data/<channel>``         ``SM_CHANNEL_<CHANNEL>`` (e.g. ``SM_CHANNEL_TRAIN``)
``<base>/model``                        ``SM_MODEL_DIR``
``<base>/output`` (holds ``failure``)   ``SM_OUTPUT_DIR``
======================================  ==========================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BASE_DIR = Path("/opt/ml")


@dataclass(frozen=True, slots=True)
class TrainingPaths:
    """Where a training job reads its configuration and data and writes its results."""

    config_dir: Path
    data_dir: Path
    model_dir: Path
    output_dir: Path
    channel_overrides: Mapping[str, Path]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TrainingPaths:
        base = _path(environ, "SMSERVE_TRAINING_BASE_DIR") or DEFAULT_BASE_DIR
        return cls(
            config_dir=_path(environ, "SM_INPUT_CONFIG_DIR") or base / "input" / "config",
            data_dir=base / "input" / "data",
            model_dir=_path(environ, "SM_MODEL_DIR") or base / "model",
            output_dir=_path(environ, "SM_OUTPUT_DIR") or base / "output",
            channel_overrides=_channel_overrides(environ),
        )

    @property
    def hyperparameters_file(self) -> Path:
        return self.config_dir / "hyperparameters.json"

    @property
    def input_data_config_file(self) -> Path:
        return self.config_dir / "inputdataconfig.json"

    @property
    def failure_file(self) -> Path:
        return self.output_dir / "failure"

    def channel_dir(self, name: str) -> Path:
        """The folder holding channel ``name``'s files."""
        return self.channel_overrides.get(name) or self.data_dir / name


def _path(environ: Mapping[str, str], name: str) -> Path | None:
    value = environ.get(name, "").strip()
    return Path(value) if value else None


def _channel_overrides(environ: Mapping[str, str]) -> dict[str, Path]:
    prefix = "SM_CHANNEL_"
    return {
        key[len(prefix) :].lower(): Path(value.strip())
        for key, value in environ.items()
        if key.startswith(prefix) and value.strip()
    }
