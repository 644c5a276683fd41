"""The k-means hyperparameters, with the built-in algorithm's defaults, checked when read."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.kmeans_reduce import INIT_METHODS, LocalLloyd, integer_or_auto

logger = logging.getLogger(__name__)

SEED = 0
EVAL_METRICS = ("msd", "ssd")


@dataclass(frozen=True)
class KMeansConfig:
    """The k-means hyperparameters (defaults follow the built-in algorithm)."""

    k: int
    feature_dim: int
    init_method: str = "random"
    epochs: int = 1
    mini_batch_size: int = 5000
    eval_metrics: tuple[str, ...] = ("msd",)
    extra_center_factor: int | None = None  # None: auto
    local_lloyd: LocalLloyd = field(default_factory=LocalLloyd)

    @classmethod
    def from_hyperparameters(cls, hp: Hyperparameters) -> KMeansConfig:
        config = cls(
            k=hp.required_integer("k", minimum=1),
            feature_dim=hp.required_integer("feature_dim", minimum=1),
            init_method=hp.optional_choice("init_method", INIT_METHODS) or cls.init_method,
            epochs=hp.integer("epochs", cls.epochs, minimum=1),
            mini_batch_size=hp.integer("mini_batch_size", cls.mini_batch_size, minimum=1),
            eval_metrics=_eval_metrics(hp),
            extra_center_factor=integer_or_auto(hp, "extra_center_factor"),
            local_lloyd=LocalLloyd.from_hyperparameters(hp),
        )
        _check_half_life(hp)
        return config


def _check_half_life(hp: Hyperparameters) -> None:
    if hp.integer("half_life_time_size", 0, minimum=0):
        logger.info("hyperparameter half_life_time_size is accepted but has no effect here")


def _eval_metrics(hp: Hyperparameters) -> tuple[str, ...]:
    names = hp.names("eval_metrics") or KMeansConfig.eval_metrics
    unknown = [name for name in names if name not in EVAL_METRICS]
    if unknown:
        raise TrainingError(
            f"hyperparameter eval_metrics has unknown metric(s) {', '.join(unknown)}; "
            f"use {' or '.join(EVAL_METRICS)}"
        )
    return names
