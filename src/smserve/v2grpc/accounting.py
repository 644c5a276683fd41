"""Each RPC counted in the server's metrics (``smserve.metrics``) beside the REST doors'
requests, so that one page shows all of a worker's traffic.

Labels as the REST doors use them (``metrics.serving``): door ``v2grpc``; the model the
request named (empty when it names none or names one that is not served: a 404, so that no
client can grow the page); no format (the protocol fixes the encoding); and the HTTP status
the REST door gives the same outcome (``status.status_of``), so that one PromQL query over
``status`` covers both doors. Latency goes into the same histogram; the stage split
(decode/predict/encode) is the HTTP doors' only."""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any

from smserve.metrics import Answered, Metrics

DOOR = "v2grpc"


class RpcCount:
    """One RPC in flight on ``metrics`` (None: nothing is counted, as in tests of the door
    alone); ``done`` counts it once answered."""

    __slots__ = ("metrics", "started")

    def __init__(self, metrics: Metrics | None) -> None:
        self.metrics = metrics
        self.started = time.perf_counter()
        if metrics is not None:
            metrics.begin()

    def done(self, request: Any, status: int, sizes: tuple[int, int]) -> None:
        if self.metrics is None:
            return
        model = "" if status == HTTPStatus.NOT_FOUND else named_model(request)
        seconds = time.perf_counter() - self.started
        self.metrics.finish(Answered((DOOR, model, "", status), seconds, sizes, None, ""))


def named_model(request: Any) -> str:
    """The model a request message names (``model_name`` of ModelInfer, ``name`` of
    ModelReady and ModelMetadata); empty for the server-wide RPCs and unparsed messages."""
    for field in ("model_name", "name"):
        name = getattr(request, field, None)
        if isinstance(name, str):
            return name
    return ""
