"""Generated request bodies, from random bytes to valid requests with one field replaced by
any JSON value: the answer is a 200 or a 4xx envelope, never a 5xx (bounded example counts)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.v2.conftest import INFER_KM, INFER_XGB, Call

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    ["id", "parameters", "inputs", "outputs", "name", "shape", "datatype", "data", "tensor_params"]
)
RUN = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _request(field: str, value: Any) -> dict[str, Any]:
    tensor: dict[str, Any] = {
        "name": "x",
        "shape": [1, 4],
        "datatype": "FP32",
        "data": [1, 2, 3, 4],
    }
    body: dict[str, Any] = {"id": "1", "inputs": [tensor], "outputs": [{"name": "predict"}]}
    if field in tensor:
        tensor[field] = value
    elif field == "tensor_params":
        tensor["parameters"] = value
    else:
        body[field] = value
    return body


def _check(call: Call, path: str, body: bytes, headers: dict[str, str] | None = None) -> None:
    answer = call("POST", path, body, headers)
    assert answer.status < 500, answer.reply.body
    answer.json("inference_response")  # validated: the response, or the error envelope


@RUN
@given(field=FIELDS, value=JSON_VALUES, path=st.sampled_from([INFER_KM, INFER_XGB]))
def test_any_value_in_any_field(call: Call, field: str, value: Any, path: str) -> None:
    _check(call, path, json.dumps(_request(field, value)).encode())  # any integer size


@RUN
@given(body=st.binary(max_size=64), length=st.none() | st.text(max_size=4))
def test_any_bytes_with_any_header_length(call: Call, body: bytes, length: str | None) -> None:
    headers = None if length is None else {"Inference-Header-Content-Length": length}
    _check(call, INFER_XGB, body, headers)


@RUN
@given(
    datatype=st.sampled_from(["FP32", "FP64", "INT8", "UINT64", "BOOL", "INT64"]),
    shape=st.lists(st.integers(min_value=0, max_value=6), max_size=3),
    raw=st.binary(max_size=96),
)
def test_any_binary_tensor(call: Call, datatype: str, shape: list[int], raw: bytes) -> None:
    tensor = {"name": "x", "shape": shape, "datatype": datatype}
    header = orjson.dumps({"inputs": [{**tensor, "parameters": {"binary_data_size": len(raw)}}]})
    _check(call, INFER_KM, header + raw, {"Inference-Header-Content-Length": str(len(header))})
