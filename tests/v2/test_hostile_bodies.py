"""Bodies an attacker or a careless client sends to the V2 API: declared shapes are charged to
the request's budget before any array is made, and odd shapes are 400s, never 500s."""

from __future__ import annotations

import zlib

import orjson
from werkzeug.datastructures import Headers

from smserve.budget import MemoryBudget
from smserve.doors import DoorRequest
from smserve.repository.modes import Models
from smserve.v2.api import V2API
from tests.v2.conftest import INFER_KM, Answer, Call


def _infer(shape: list[int], data: list[float]) -> dict[str, object]:
    return {"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "data": data}]}


def test_a_shape_of_more_than_64_dimensions_is_a_400(call: Call) -> None:
    answer = call("POST", INFER_KM, _infer([1] * 100, [1.0]))
    assert answer.status == 400
    assert "'shape' has 100 dimensions, at most 64" in answer.error


def test_a_declared_shape_over_the_budget_is_a_413_before_any_array(models: Models) -> None:
    api = V2API(models, budget=MemoryBudget(cap_bytes=1 << 20))
    body = orjson.dumps(_infer([1_000_000, 4], [1.0, 2.0, 3.0, 4.0]))
    answer = Answer(api.handle(DoorRequest("POST", INFER_KM, Headers(), body)))
    assert answer.status == 413
    assert "input 'x' of shape [1000000, 4] needs 64000000 bytes" in answer.error


def test_a_deflate_body_inflates_no_further_than_the_request_cap(models: Models) -> None:
    api = V2API(models, budget=MemoryBudget(cap_bytes=1 << 20))
    bomb = zlib.compress(b" " * (4 << 20))
    headers = Headers({"Content-Encoding": "deflate"})
    answer = Answer(api.handle(DoorRequest("POST", INFER_KM, headers, bomb)))
    assert answer.status == 413
    assert "inflates past the 1048576-byte limit" in answer.error
