"""Request, model and process metrics, summed over every gunicorn worker, as Prometheus text.

Two kinds of page from the same counts:

* the server's own, ``smserve_...`` names in Prometheus's conventions (``page``), at
  SMSERVE_METRICS_PATH (``/metrics``, where SageMaker scrapes); behind nginx the supervisor
  answers it, so a scrape never waits behind inference;
* a protocol's own names (``protocol``), for each door that declares some
  (``DoorSpec.metric_names``: TF Serving's), at that door's own path, answered by a worker.

Every worker counts in memory and writes its counts to a file of its own in the run directory
(``store``); a page is the sum of those files.
"""

from __future__ import annotations

from smserve.metrics.protocol import ProtocolNames
from smserve.metrics.store import FLUSH_INTERVAL_S, Answered, Metrics, count_worker_exit

__all__ = [
    "FLUSH_INTERVAL_S",
    "Answered",
    "Metrics",
    "ProtocolNames",
    "count_worker_exit",
]
