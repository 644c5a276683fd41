"""What each Python process keeps between Spark tasks: the model, loaded once per process.

Spark reuses its Python workers across tasks (``spark.python.worker.reuse``, on by default),
and a task's function is unpickled anew each time, so the loaded model cannot live in the
function or its arguments: it lives here, keyed by the settings that loaded it, as the local
engine keeps one Scorer per worker process (``smserve.scoring.worker``). The driver uses the
same cache when it checks a job before starting it.

In a task, the model is loaded with as many threads as the task has CPUs (``spark.task.cpus``,
1 by default) on whatever machine the executor runs: the settings come from the driver, whose
CPU count says nothing about the executor's."""

from __future__ import annotations

import os

from smserve.config import Settings
from smserve.scoring import worker
from smserve.scoring.options import Plan
from smserve.scoring.scorer import Scorer, build_service
from smserve.service import InferenceService

_SERVICES: dict[Settings, InferenceService] = {}
_SCORERS: dict[tuple[Settings, Plan], Scorer] = {}


def service_for(settings: Settings) -> InferenceService:
    """The endpoint's service for ``settings``, loaded on first use in this process (raises
    StartupError for a model that cannot be loaded)."""
    service = _SERVICES.get(settings)
    if service is None:
        worker.preload(settings)  # XGBoost without its scikit-learn and pandas wrappers
        service = _SERVICES[settings] = build_service(_for_this_task(settings))
    return service


def scorer_for(settings: Settings, plan: Plan) -> Scorer:
    """The local engine's Scorer for ``plan`` (raises ClientError for types it cannot read
    or write, ConfigError for an impossible join)."""
    scorer = _SCORERS.get((settings, plan))
    if scorer is None:
        scorer = _SCORERS[(settings, plan)] = Scorer(service_for(settings), plan)
    return scorer


def _for_this_task(settings: Settings) -> Settings:
    """``settings`` with ``workers`` set so that a model gets ``cpu_count // workers`` = the
    task's CPUs per prediction (``threads_per_worker``); unchanged outside a task."""
    from pyspark import TaskContext

    task = TaskContext.get()
    if task is None:
        return settings
    return settings.replace(workers=max(1, (os.cpu_count() or 1) // max(1, task.cpus())))
