"""TF Serving's metric names, as its Prometheus exporter writes them, declared for the door
(``DoorSpec.metric_names``; counted by ``smserve.metrics.protocol``) and served at its path:

* ``:tensorflow:serving:request_count{model_name,status}``: every request to ``/v1/...`` and
  every other door's API request (``/invocations``, V2's ``infer``); status: the canonical
  code name, ``OK``, ``INVALID_ARGUMENT``, ... (``status.canonical_code``);
* ``:tensorflow:serving:request_latency{model_name,API,entrypoint}``: a histogram in
  microseconds of successful requests, buckets 10 * 1.8**k for k < 33 plus ``+Inf``. ``API``
  is predict, classify or regress (empty for status/metadata GETs) and ``invocations`` for
  ``/invocations``; ``entrypoint`` is ``REST``.

A TF Serving dashboard reads these unchanged; ``smserve.metrics.page`` has the conventional
names."""

from __future__ import annotations

from smserve.doors import DoorReply, DoorRequest, Handler, Setup
from smserve.media import TEXT
from smserve.metrics import ProtocolNames
from smserve.tfserving.status import canonical_code

PATH = "/monitoring/prometheus/metrics"
COUNT = ":tensorflow:serving:request_count"
LATENCY = ":tensorflow:serving:request_latency"


def _bucket_limits() -> tuple[float, ...]:
    limits, bound = [], 10.0
    for _ in range(33):
        limits.append(bound)
        bound *= 1.8
    return tuple(limits)


BUCKET_LIMITS = _bucket_limits()
NAMES = ProtocolNames(COUNT, LATENCY, BUCKET_LIMITS, canonical_code)


def page(setup: Setup) -> Handler:
    def answer(request: DoorRequest) -> DoorReply:
        """TF Serving's names, summed over every worker (``smserve.metrics``)."""
        return DoorReply(200, setup.metrics.render(NAMES).encode(), TEXT)

    return answer
