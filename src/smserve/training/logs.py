"""Training log output: the handler a ``train`` run writes through, and metric line formats.

Everything goes to stdout, which SageMaker ships to CloudWatch. Metric lines are written bare,
so metric-definition regexes can anchor on them:

* per round / epoch: ``[3]#011train-rmse:0.41000#011validation-rmse:0.47000`` (XGBoost's
  evaluation line with the tab written as ``#011``, the form it takes in CloudWatch);
* k-means final scores: ``#train_score (algo-1) : ('msd', 0.41)`` and
  ``#validation_score (algo-1) : ('msd', 0.47)``.

Other records get a timestamp, level and logger name.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

METRICS_LOGGER = "smserve.training.metrics"
FIELD_SEPARATOR = "#011"
HOST = "algo-1"  # single-host training: SageMaker names the first host algo-1
LEVELS = ("debug", "info", "warning", "error", "critical")

metrics = logging.getLogger(METRICS_LOGGER)


def format_scores(iteration: int, scores: Mapping[str, float]) -> str:
    """``[iteration]`` then ``#011<data>-<metric>:<value>`` per entry of ``scores``."""
    fields = "".join(f"{FIELD_SEPARATOR}{key}:{value:.5f}" for key, value in scores.items())
    return f"[{iteration}]{fields}"


def format_final_score(data: str, metric: str, value: float) -> str:
    """``#<data>_score (algo-1) : ('<metric>', <value>)``."""
    return f"#{data}_score ({HOST}) : ({metric!r}, {value!r})"


class _Formatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if record.name == METRICS_LOGGER:
            return record.getMessage()
        return super().format(record)


@contextmanager
def training_logging(level: str) -> Iterator[None]:
    """Send the ``smserve`` loggers to stdout at ``level`` for the duration of a run."""
    root = logging.getLogger("smserve")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_Formatter())
    saved = root.level, root.propagate
    root.addHandler(handler)
    root.setLevel(level.upper() if level.lower() in LEVELS else logging.INFO)
    root.propagate = False  # the CLI may have configured the root logger: print once
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        root.propagate = saved[1]
