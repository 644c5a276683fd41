"""Request, model and process metrics, summed over every gunicorn worker, as Prometheus text.

Two pages from the same counts:

* the server's own, ``smserve_...`` names in Prometheus's conventions (``page``), at
  SMSERVE_METRICS_PATH (``/metrics``, where SageMaker scrapes); behind nginx the supervisor
  answers it, so a scrape never waits behind inference;
* TF Serving's names at TF Serving's path (``tfserving``), answered by a worker as before.

Every worker counts in memory and writes its counts to a file of its own in the run directory
(``store``); a page is the sum of those files.
"""

from __future__ import annotations

from smserve.metrics.store import FLUSH_INTERVAL_S, Answered, Metrics, count_worker_exit
from smserve.metrics.tfserving import BUCKET_LIMITS, COUNT, LATENCY, PATH

__all__ = [
    "BUCKET_LIMITS",
    "COUNT",
    "FLUSH_INTERVAL_S",
    "LATENCY",
    "PATH",
    "Answered",
    "Metrics",
    "count_worker_exit",
]
