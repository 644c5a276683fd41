"""XGBoost training: ``xgboost.train`` on the train channel (evaluated on train and the
optional validation channel), saved to ``xgboost-model`` as XGBoost JSON.

The file is JSON whatever its name: ``save_model`` picks UBJSON for a path without an
extension, so the bytes come from ``save_raw("json")``, which ``Booster.load_model`` reads back
by content. Each round logs ``[n]#011train-<metric>:v#011validation-<metric>:v``. With
``early_stopping_rounds`` the saved model is cut at the best round and carries XGBoost's
``best_iteration`` and ``best_score`` attributes. Only the hyperparameters in
:data:`PARAMETERS` are passed to XGBoost; any other key fails the job.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from smserve import media
from smserve.codecs.finite import check_finite
from smserve.errors import ClientError
from smserve.training.channels import TRAIN, VALIDATION, Channel
from smserve.training.collective import Group, collective_broke, collective_reason
from smserve.training.data import Dataset, read_channel
from smserve.training.failure import HostsFailed, TrainingError
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.logs import format_scores, metrics
from smserve.training.parquet import with_label_column
from smserve.training.plan import WHOLE, Share, has_data
from smserve.training.xgboost_matrices import training_matrices
from smserve.types import Batch

logger = logging.getLogger(__name__)

MODEL_FILE = "xgboost-model"
_CXX_LOCATION = re.compile(r"^\[[\d:]+\] \S+:\d+: (Check failed: )?")
Reader = Callable[[Hyperparameters, str], Any]


def _number(minimum: float | None = None, maximum: float | None = None) -> Reader:
    return lambda hp, name: hp.optional_number(name, minimum, maximum)


def _integer(minimum: int | None = None) -> Reader:
    return lambda hp, name: hp.optional_integer(name, minimum)


def _choice(*choices: str) -> Reader:
    return lambda hp, name: hp.optional_choice(name, choices)


def _text(hp: Hyperparameters, name: str) -> str | None:
    return hp.text(name)


def _names(hp: Hyperparameters, name: str) -> list[str] | None:
    names = hp.names(name)
    return None if names is None else list(names)


# XGBoost checks the exact domains itself; these catch the values that are not even numbers.
PARAMETERS: Mapping[str, Reader] = {
    "objective": _text,
    "eta": _number(0.0),
    "max_depth": _integer(0),
    "subsample": _number(0.0, 1.0),
    "colsample_bytree": _number(0.0, 1.0),
    "colsample_bylevel": _number(0.0, 1.0),
    "colsample_bynode": _number(0.0, 1.0),
    "min_child_weight": _number(0.0),
    "max_delta_step": _number(0.0),
    "gamma": _number(0.0),
    "alpha": _number(0.0),
    "lambda": _number(0.0),
    "scale_pos_weight": _number(0.0),
    "base_score": _number(),
    "num_class": _integer(1),
    "max_bin": _integer(2),
    "max_leaves": _integer(0),
    "grow_policy": _choice("depthwise", "lossguide"),
    "tree_method": _choice("auto", "exact", "approx", "hist", "gpu_hist"),
    "device": _choice("cpu", "cuda"),
    "seed": _integer(),
    "verbosity": _integer(0),
    "eval_metric": _names,
}
DEFAULTS: Mapping[str, Any] = {"objective": "reg:squarederror", "device": "cpu"}


@dataclass(frozen=True, slots=True)
class XGBoostConfig:
    """``params`` go to ``xgboost.train`` as they are."""

    params: Mapping[str, Any]
    num_round: int
    early_stopping_rounds: int | None = None

    @classmethod
    def from_hyperparameters(cls, hp: Hyperparameters) -> XGBoostConfig:
        read = {name: reader(hp, name) for name, reader in PARAMETERS.items()}
        params = {**DEFAULTS, **{k: v for k, v in read.items() if v is not None}}
        return cls(
            params=_translate_gpu_hist(params),
            num_round=hp.required_integer("num_round", minimum=1),
            early_stopping_rounds=hp.optional_integer("early_stopping_rounds", minimum=1),
        )


def _translate_gpu_hist(params: dict[str, Any]) -> dict[str, Any]:
    # Built-in container users still write tree_method=gpu_hist; XGBoost >= 2 spells it
    # tree_method=hist with device=cuda.
    if params.get("tree_method") != "gpu_hist":
        return params
    logger.warning("tree_method=gpu_hist is read as tree_method=hist with device=cuda")
    return {**params, "tree_method": "hist", "device": "cuda"}


class XGBoostTrainer:
    """Trains XGBoost; the built-in XGBoost reads libsvm unless told otherwise."""

    name = "xgboost"
    default_content_type = media.LIBSVM

    def prepare(
        self, hp: Hyperparameters, channels: Mapping[str, Channel], share: Share = WHOLE
    ) -> XGBoostJob:
        config = XGBoostConfig.from_hyperparameters(hp)
        channels = with_label_column(channels, hp)
        hp.check_all_used(self.name)
        data = _datasets(channels, config, share)
        return XGBoostJob(config, {name: _share(d, name, share) for name, d in data.items()})


@dataclass(frozen=True, slots=True)
class XGBoostJob:
    """XGBoost with this host's rows read; in a group of hosts ``xgboost.train`` trains across
    them (histograms and evaluation metrics summed over every host, so every host's metrics,
    and early stopping, agree)."""

    config: XGBoostConfig
    data: Mapping[str, Dataset]

    @property
    def train_rows(self) -> int:
        return self.data[TRAIN].n_rows

    def run(self, group: Group, model_dir: Path | None) -> None:
        booster = fit(self.config, self.data)
        if model_dir is not None:
            save_model(booster, model_dir / MODEL_FILE)


def _share(dataset: Dataset, name: str, share: Share) -> Dataset:
    rows = share.rows(name, dataset.n_rows)
    if rows == slice(0, dataset.n_rows):
        return dataset
    labels = None if dataset.labels is None else dataset.labels[rows]
    return Dataset(dataset.name, dataset.features[rows], labels)


def _datasets(
    channels: Mapping[str, Channel], config: XGBoostConfig, share: Share
) -> dict[str, Dataset]:
    """Every channel read; across hosts a host's empty validation shard is zero rows, since
    every host must evaluate the same sets."""
    if config.early_stopping_rounds and VALIDATION not in channels:
        raise TrainingError("early_stopping_rounds needs a 'validation' channel")
    read = {
        name: _labelled(read_channel(channel))
        for name, channel in channels.items()
        if not share.may_lack(name) or has_data(channel.path)
    }
    width = max(dataset.n_features for dataset in read.values())
    empty = Dataset(VALIDATION, np.zeros((0, width), np.float32), np.zeros(0, np.float32))
    return {name: read[name].with_width(width) if name in read else empty for name in channels}


def _labelled(dataset: Dataset) -> Dataset:
    """``dataset``, checked: a numeric label on every row, no infinite feature value (a
    missing value is NaN, or left out of a sparse row)."""
    if dataset.labels is None:
        raise TrainingError(f"channel {dataset.name!r} has no labels; XGBoost needs them")
    bad = np.flatnonzero(~np.isfinite(dataset.labels))
    if bad.size:
        raise TrainingError(f"channel {dataset.name!r}: row {bad[0] + 1} has no numeric label")
    _check_finite(dataset)
    return dataset


def _check_finite(dataset: Dataset) -> None:
    """As serving checks a request (XGBoost itself would stop with a trace)."""
    try:
        check_finite(Batch(dataset.features, _cell), f"channel {dataset.name!r}")
    except ClientError as exc:
        raise TrainingError(exc.message) from None


def _cell(row: int, column: int) -> str:
    return f"row {row + 1}, feature {column + 1} (the label not counted)"


def fit(config: XGBoostConfig, data: Mapping[str, Dataset]) -> xgb.Booster:
    """Train for ``num_round`` rounds (fewer with early stopping) on ``data["train"]``; what
    XGBoost refuses, building its matrices or training, is a TrainingError."""
    try:
        booster = _boosted(config, training_matrices(config.params, data))
    except xgb.core.XGBoostError as exc:
        if collective_broke(exc):
            raise HostsFailed(f"training across hosts stopped: {collective_reason(exc)}") from exc
        raise TrainingError(f"XGBoost rejected the job: {_reason(exc)}") from exc
    _log_best(booster)
    return booster


def _boosted(config: XGBoostConfig, matrices: Mapping[str, xgb.DMatrix]) -> xgb.Booster:
    return xgb.train(
        dict(config.params),
        matrices[TRAIN],
        num_boost_round=config.num_round,
        evals=[(matrix, name) for name, matrix in matrices.items()],
        callbacks=_callbacks(config),
        verbose_eval=False,
    )


def _callbacks(config: XGBoostConfig) -> list[xgb.callback.TrainingCallback]:
    callbacks: list[xgb.callback.TrainingCallback] = [MetricLines()]
    if config.early_stopping_rounds:
        stop = xgb.callback.EarlyStopping(
            rounds=config.early_stopping_rounds, data_name=VALIDATION, save_best=True
        )
        callbacks.append(stop)
    return callbacks


class MetricLines(xgb.callback.TrainingCallback):
    """Logs one ``[n]#011<data>-<metric>:<value>...`` line per boosting round."""

    def after_iteration(
        self, model: xgb.Booster, epoch: int, evals_log: Mapping[str, Mapping[str, list[Any]]]
    ) -> bool:
        scores = {
            f"{data}-{metric}": float(values[-1])
            for data, by_metric in evals_log.items()
            for metric, values in by_metric.items()
        }
        metrics.info(format_scores(epoch, scores))
        return False


def _reason(error: Exception) -> str:
    # "[23:26:26] /src/objective/objective.cc:27: Unknown objective ...\nStack trace: ..."
    # keep the first line of the sentence, without the C++ location.
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
    return _CXX_LOCATION.sub("", first_line)


def _log_best(booster: xgb.Booster) -> None:
    best = booster.attr("best_iteration")
    if best is not None:
        logger.info(
            "early stopping: best_iteration=%s best_score=%s", best, booster.attr("best_score")
        )


def save_model(booster: xgb.Booster, path: Path) -> None:
    """Write ``booster`` as XGBoost JSON to ``path``, atomically (dot-named temporary file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(bytes(booster.save_raw("json")))
    os.replace(temporary, path)
    logger.info("wrote %s (%d rounds)", path, booster.num_boosted_rounds())
