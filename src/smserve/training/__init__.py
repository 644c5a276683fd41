"""The ``train`` entrypoint: the SageMaker training contract for k-means and XGBoost.

``run(environ)`` reads ``hyperparameters.json`` and ``inputdataconfig.json``, trains the chosen
algorithm on the ``train`` channel (and the optional ``validation`` channel), and writes the
model to the model directory. The algorithm is the ``algorithm`` hyperparameter or the
``SMSERVE_ALGORITHM`` variable (a name in ``smserve.algorithms.catalog``; its ``DEFAULT``,
XGBoost, when neither is set; both set and different is an error). On failure the reason goes
to ``output/failure`` and the exit status is 1 for a problem with the job's inputs, 2 for a
fault in this container. Paths and their overrides are listed in
:mod:`smserve.training.paths`; libsvm indices map to columns per
``SMSERVE_LIBSVM_INDEX_BASE`` (default 0), the same setting serving uses.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping

from smserve.algorithms.catalog import DEFAULT, spec_for, trainable, trainer_of
from smserve.config import TrainingSettings
from smserve.errors import ConfigError
from smserve.training.channels import TRAIN, load_channels
from smserve.training.cluster import read_cluster
from smserve.training.collective import LOCAL
from smserve.training.failure import (
    EXIT_CLIENT_ERROR,
    EXIT_SUCCESS,
    EXIT_UNEXPECTED,
    TrainingError,
    clear_failure,
    client_reason,
    unexpected_reason,
    write_failure,
)
from smserve.training.hyperparameters import Hyperparameters
from smserve.training.logs import training_logging
from smserve.training.paths import TrainingPaths
from smserve.training.plan import WHOLE, Prepared, Share, Trainer, has_data, read_sharded

__all__ = ["TrainingError", "run"]

logger = logging.getLogger(__name__)


def run(environ: Mapping[str, str]) -> int:
    """Run one training job described by ``environ``; returns the process exit status."""
    try:
        settings = TrainingSettings.from_env(environ)
    except ConfigError as exc:
        failure = TrainingSettings.output_dir_of(environ) / "failure"
        write_failure(failure, client_reason(TrainingError(str(exc))))
        return EXIT_CLIENT_ERROR
    paths = TrainingPaths.from_settings(settings)
    with training_logging(settings.log_level):
        clear_failure(paths.failure_file)
        try:
            train(settings, paths)
        except TrainingError as exc:
            return _fail(paths, client_reason(exc), EXIT_CLIENT_ERROR)
        except Exception as exc:
            logger.exception("training failed unexpectedly")
            return _fail(paths, unexpected_reason(exc), EXIT_UNEXPECTED)
    return EXIT_SUCCESS


def train(settings: TrainingSettings, paths: TrainingPaths) -> None:
    """Train and save a model; raises TrainingError for a problem with the job's inputs.

    With more than one host (``resourceconfig.json`` / ``SM_HOSTS``) the hosts train together:
    :mod:`smserve.training.multihost`."""
    cluster = read_cluster(paths.config_dir, settings.hosts)
    if cluster.size == 1:
        _prepare(settings, paths, WHOLE).run(LOCAL, paths.model_dir)
        logger.info("training complete; model written to %s", paths.model_dir)
        return
    from smserve.training.multihost import train_across_hosts

    share = Share(cluster.index, cluster.size, read_sharded(paths.input_data_config_file))
    train_across_hosts(cluster, settings, paths, lambda: _prepare_share(settings, paths, share))


def _prepare(settings: TrainingSettings, paths: TrainingPaths, share: Share) -> Prepared:
    hp = Hyperparameters.from_file(paths.hyperparameters_file)
    trainer = _trainer(_algorithm(settings.algorithm, hp))
    channels = load_channels(paths, trainer.default_content_type, settings.libsvm_index_base)
    logger.info("training %s on channels %s", trainer.name, ", ".join(channels))
    return trainer.prepare(hp, channels, share)


def _prepare_share(
    settings: TrainingSettings, paths: TrainingPaths, share: Share
) -> Prepared | None:
    """As ``_prepare``, or None when this host's train channel holds no data at all."""
    if not has_data(paths.channel_dir(TRAIN)):
        return None
    return _prepare(settings, paths, share)


def _algorithm(from_env: str | None, hp: Hyperparameters) -> str:
    names = trainable()
    from_hp = hp.optional_choice("algorithm", names)
    if from_env and from_env not in names:
        choices = ", ".join(names)
        raise TrainingError(f"SMSERVE_ALGORITHM={from_env!r} must be one of: {choices}")
    if from_env and from_hp and from_env != from_hp:
        raise TrainingError(
            f"hyperparameter algorithm={from_hp!r} contradicts SMSERVE_ALGORITHM={from_env!r}"
        )
    return from_hp or from_env or DEFAULT.name


def _trainer(name: str) -> Trainer:
    """The trainer the table names, imported here so a k-means job never imports XGBoost, and
    after the algorithm's libraries are imported lean (XGBoost without the scikit-learn and
    pandas wrappers that training never uses: 0.9 s less per job)."""
    try:
        module, _, attribute = trainer_of(name).partition(":")
    except ConfigError as exc:
        raise TrainingError(str(exc)) from None
    spec_for(name).import_lean()
    trainer: Trainer = getattr(importlib.import_module(module), attribute)()
    return trainer


def _fail(paths: TrainingPaths, reason: str, status: int) -> int:
    if status == EXIT_CLIENT_ERROR:
        logger.error("training failed: %s", reason)
    write_failure(paths.failure_file, reason)
    return status
