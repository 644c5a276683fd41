"""The SageMaker training layout under ``/opt/ml``, as resolved by ``TrainingSettings``
(which reads the environment overrides below).

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

from smserve.config import TrainingSettings


@dataclass(frozen=True, slots=True)
class TrainingPaths:
    """Where a training job reads its configuration and data and writes its results."""

    config_dir: Path
    data_dir: Path
    model_dir: Path
    output_dir: Path
    channel_overrides: Mapping[str, Path]

    @classmethod
    def from_settings(cls, settings: TrainingSettings) -> TrainingPaths:
        return cls(
            config_dir=settings.config_dir,
            data_dir=settings.data_dir,
            model_dir=settings.model_dir,
            output_dir=settings.output_dir,
            channel_overrides=settings.channel_dirs,
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
